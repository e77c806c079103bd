// @ts-check
// trawl's service worker: keeps the link to the local daemon and answers its requests
// (list tabs, capture a tab or a URL) within the user's site policy. Read-only: it never clicks or types.

import { isHex64, Link } from "./link.js";
import { loadProtocol, validate } from "./protocol.js";
import { acceptPolicy, decide, loadPolicy, policyMessage, sameRules } from "./policy.js";
import {
  CaptureError,
  fetchPdf,
  serializeTab,
  settle,
  trackHops,
  waitForLoad,
  watchRemoval,
} from "./capture.js";

const DEFAULT_PORT = 8765;
const ALARM = "trawl-reconnect";
const LOG_SIZE = 20;

let recent = [];
let indexed = [];
let badgeTimer = null;

// Config and policy are read once and kept in memory; storage.onChanged drops the copies.
let configCache = null;
let policyCache = null;
let fileConfig = null;

async function readFileConfig() {
  // Optional config.json next to the manifest (for unpacked copies: {"port": N, "pair_code": "..."}).
  if (fileConfig === null) {
    try {
      const res = await fetch(chrome.runtime.getURL("config.json"));
      fileConfig = res.ok ? await res.json() : {};
    } catch (e) {
      fileConfig = {};
    }
  }
  return fileConfig;
}

async function readConfig() {
  if (configCache) return configCache;
  const file = await readFileConfig();
  const stored = await chrome.storage.local.get(["port", "secret", "pair_code", "paused", "used_file_code"]);
  let pairCode = stored.pair_code || "";
  if (!stored.secret && !pairCode && file.pair_code && stored.used_file_code !== file.pair_code) {
    pairCode = file.pair_code;
  }
  configCache = {
    port: Number(stored.port) || Number(file.port) || DEFAULT_PORT,
    secret: isHex64(stored.secret) ? stored.secret : "", // anything else (an old protocol's secret) is unpaired
    pairCode,
    fileCode: file.pair_code || "",
    paused: Boolean(stored.paused),
  };
  return configCache;
}

async function currentPolicy() {
  if (!policyCache) policyCache = await loadPolicy();
  return policyCache;
}

function daemonUrl(port) {
  return `ws://127.0.0.1:${port}/ext`;
}

// ---------------------------------------------------------------- badge and log
function showBadge() {
  const s = link ? link.status.state : "disconnected";
  if (badgeTimer) return;
  if (s === "connected") {
    chrome.action.setBadgeText({ text: "" });
  } else if (s === "refused") {
    chrome.action.setBadgeBackgroundColor({ color: "#c26a00" });
    chrome.action.setBadgeText({ text: "pair" });
  } else if (s === "untrusted") {
    chrome.action.setBadgeBackgroundColor({ color: "#b42318" });
    chrome.action.setBadgeText({ text: "!" });
  } else {
    chrome.action.setBadgeBackgroundColor({ color: "#777777" });
    chrome.action.setBadgeText({ text: "off" });
  }
}

// Not awaited by the request path: the reply goes out first, the log and badge follow.
async function logCapture(entry) {
  if (!entry.preread) {
    // A tab read ahead (the daemon's quiet captures) is logged without flashing the badge on every page load.
    chrome.action.setBadgeBackgroundColor({ color: entry.ok ? "#1a7f37" : "#b42318" });
    chrome.action.setBadgeText({ text: entry.ok ? "read" : "no" });
    clearTimeout(badgeTimer);
    badgeTimer = setTimeout(() => {
      badgeTimer = null;
      showBadge();
    }, 3000);
  }
  if (!recent.length) {
    const { recent: saved } = await chrome.storage.session.get("recent"); // survives a worker restart
    if (Array.isArray(saved)) recent = saved;
  }
  recent = [entry, ...recent].slice(0, LOG_SIZE);
  await chrome.storage.session.set({ recent });
}

// ---------------------------------------------------------------- requests
async function activeTab() {
  let [tab] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
  if (!tab) [tab] = await chrome.tabs.query({ active: true });
  if (!tab) throw new CaptureError("tab_not_found", "no active tab");
  return notIncognito(tab);
}

/**
 * Tabs of private (incognito) windows are never listed, captured, read ahead or reported to the daemon.
 * @param {chrome.tabs.Tab} tab
 */
function notIncognito(tab) {
  if (tab.incognito) throw new CaptureError("tab_not_found", "the tab is in a private window; trawl does not read it");
  return tab;
}

function sameUrl(a, b) {
  const strip = (u) => String(u || "").split("#")[0];
  return strip(a) === strip(b);
}

async function listTabs(msg, policy) {
  const tabs = await chrome.tabs.query({});
  let active = null;
  try {
    active = (await activeTab()).id;
  } catch (e) {
    active = null;
  }
  const out = [];
  let hidden = 0;
  for (const t of tabs) {
    // Browser pages (about:blank, chrome://, this extension's own pages) are no web pages: not listed, and not
    // counted as hidden by the user's site policy either (agents read http(s) pages only). Private windows' tabs
    // are neither listed nor counted.
    if (t.incognito || !t.url || !/^https?:/i.test(t.url)) {
      continue;
    }
    if (!decide(policy, t.url).allowed) {
      hidden += 1;
      continue;
    }
    out.push({
      id: t.id,
      window_id: t.windowId,
      url: t.url,
      title: t.title || "",
      active: t.id === active,
      status: t.status || "",
    });
  }
  return { type: "tabs", id: msg.id, tabs: out, hidden };
}

function refuseByPolicy(policy, url, context = "") {
  const d = decide(policy, url);
  if (!d.allowed) {
    const where = context ? `${context}: ` : "";
    throw new CaptureError("blocked_by_policy", `${where}your trawl site policy does not allow this: ${d.reason}`);
  }
}

// Same site: the same host (a leading "www." aside) and port. A tab that moves to another site is not read.
function siteOf(url) {
  try {
    const u = new URL(url);
    return `${u.hostname.toLowerCase().replace(/^www\./, "")}:${u.port}`;
  } catch (e) {
    return "";
  }
}

// Throws unless `href` (a document the tab shows now) may be read in place of `settledUrl`, the page checked.
function refuseIfMoved(policy, settledUrl, href, when) {
  refuseByPolicy(policy, href, `the tab went to ${href} ${when}`);
  if (siteOf(href) !== siteOf(settledUrl)) {
    throw new CaptureError("blocked_by_policy", `the tab left ${settledUrl} for ${href} ${when}; trawl reads only ` +
      "the page it checked against your site policy");
  }
}

// A tab trawl opened may not leave the site of the URL it was sent to (keepOnSite blocks it before the request
// goes out): every main-frame request it made (redirect hops included) and its own URL must be allowed and on that
// site; one that is not is refused by name, the policy's refusal first.
function refuseOffSite(policy, checkedUrl, urls) {
  for (const url of urls) {
    if (!url || url === "about:blank") continue;
    refuseByPolicy(policy, url, `the tab went to ${url} from ${checkedUrl}`);
    if (siteOf(url) !== siteOf(checkedUrl)) {
      throw new CaptureError("blocked_by_policy", `the tab went to ${url} from ${checkedUrl}, another site; trawl ` +
        "reads only the page it checked against your site policy, and did not send that request (ask for that URL " +
        "itself)");
    }
  }
}

function pdfCheck(policy) {
  return (url, hop) => refuseByPolicy(policy, url, hop ? `the PDF link redirected to ${url}` : "");
}

const isPdfPath = (url) => /\.pdf$/i.test(new URL(url).pathname);

// ---------------------------------------------------------------- background tabs
// Tabs this worker opened for captures, mirrored in storage.session: a restarted worker closes what a dead one
// left open. At most `max_background_tabs` at once (from the daemon's settings); the other captures queue.
const DEFAULT_BACKGROUND_TABS = 3;
const MAX_QUEUED = 64;
const opened = new Set();
let openedSaved = Promise.resolve();
/** @type {{running: number, waiting: Array<() => void>}} */
const slots = { running: 0, waiting: [] };

function saveOpened() {
  const ids = [...opened];
  openedSaved = openedSaved.then(() => chrome.storage.session.set({ opened_tabs: ids })).catch(() => {});
  return openedSaved;
}

async function openBackgroundTab(deadline) {
  // Opened blank and recorded before it loads anything: an orphan is at worst an empty tab. The caller starts
  // watching its requests, then navigates it, so no redirect hop goes unseen.
  const tab = await chrome.tabs.create({ url: "about:blank", active: false });
  opened.add(tab.id);
  try {
    await saveOpened();
    for (;;) {
      const now = await chrome.tabs.get(/** @type {number} */ (tab.id)).catch(() => null);
      if (!now) throw new CaptureError("tab_not_found", "the tab was closed during capture");
      if (now.status === "complete" && !now.pendingUrl) return now;
      if (Date.now() >= deadline) throw new CaptureError("timeout", "the browser did not open a tab in time");
      await new Promise((r) => setTimeout(r, 10));
    }
  } catch (e) {
    await closeBackgroundTab(tab.id);
    throw e;
  }
}

async function closeBackgroundTab(id) {
  await chrome.tabs.remove(id).catch(() => {});
  opened.delete(id);
  await saveOpened();
  await releaseSite(id);
}

async function sweepOrphanTabs() {
  const { opened_tabs: ids } = await chrome.storage.session.get("opened_tabs");
  for (const id of Array.isArray(ids) ? ids : []) {
    if (!opened.has(id)) await chrome.tabs.remove(id).catch(() => {});
  }
  await saveOpened();
  await releaseSite(null); // the rules of tabs a dead worker left
}

// ---------------------------------------------------------------- a capture tab stays on its site
// A background tab may load no page of another site than the one checked: before it is navigated away from
// about:blank, two session rules scoped to that tab (declarativeNetRequest) block every main-frame request but
// those to the checked URL's own site (host, a leading "www." aside, and port: siteOf), before it is sent. So a
// redirect hop, or a page that navigates after (or before) its load, to a denied site sends it nothing (not the
// page, not a favicon request); a hop to another site is refused by name (refuseOffSite). Same-site navigations
// still load (they are read as the same page). The rules go with the tab; the user's own tabs are never touched.
// Rule ids are the lowest free ones, free of every session rule the browser holds (a dead worker's included) and
// of those another capture of this worker took and has not installed yet: no two captures can share one.
const siteRules = new Map(); // tab id -> its rule ids

async function reserveRuleIds(tabId, n) {
  const used = new Set((await chrome.declarativeNetRequest.getSessionRules()).map((r) => r.id));
  for (const taken of siteRules.values()) for (const id of taken) used.add(id);
  const ids = [];
  for (let id = 1; ids.length < n; id++) if (!used.has(id)) ids.push(id);
  siteRules.set(tabId, ids); // reserved in the same task that found them free
  return ids;
}

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * @param {number} tabId
 * @param {string} url the URL checked against the policy, before the tab goes there
 */
async function keepOnSite(tabId, url) {
  const u = new URL(url);
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new CaptureError("blocked_by_policy", `${url} is not a web page; trawl reads only http(s) pages`);
  }
  const host = u.hostname.toLowerCase().replace(/^www\./, "");
  const port = u.port ? `:${u.port}` : "";
  const condition = { tabIds: [tabId], resourceTypes: [/** @type {any} */ ("main_frame")] };
  try {
    const ids = await reserveRuleIds(tabId, 2);
    await chrome.declarativeNetRequest.updateSessionRules({
      addRules: [
        { id: ids[0], priority: 1, action: { type: /** @type {any} */ ("block") }, condition },
        {
          id: ids[1], priority: 2, action: { type: /** @type {any} */ ("allow") },
          condition: { ...condition, regexFilter: `^https?://(www\\.)?${escapeRe(host)}${port}([/?#]|$)` },
        },
      ],
    });
  } catch (e) {
    // No block, no capture: the tab is never sent anywhere unguarded.
    throw new CaptureError("capture_failed", `cannot keep the capture tab on ${host}${port}: ` +
      `${/** @type {any} */ (e).message || e}`);
  }
}

// Drops a tab's rules (null: every rule whose tab this worker no longer has open).
async function releaseSite(tabId) {
  let ids = [];
  if (tabId === null) {
    const rules = await chrome.declarativeNetRequest.getSessionRules().catch(() => []);
    ids = rules.filter((r) => !(r.condition.tabIds || []).some((t) => opened.has(t))).map((r) => r.id);
  } else {
    ids = siteRules.get(tabId) || [];
    siteRules.delete(tabId);
  }
  if (ids.length) await chrome.declarativeNetRequest.updateSessionRules({ removeRuleIds: ids }).catch(() => {});
}

async function takeSlot(limit, deadline) {
  for (;;) {
    if (slots.running < limit) {
      slots.running += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        slots.running -= 1;
        const next = slots.waiting.shift();
        if (next) next();
      };
    }
    const left = deadline - Date.now();
    if (slots.waiting.length >= MAX_QUEUED || left <= 0) {
      throw new CaptureError("busy", `${slots.running} background captures are running and ${slots.waiting.length} ` +
        "wait; try again shortly");
    }
    await /** @type {Promise<void>} */ (new Promise((wake) => {
      const entry = () => {
        clearTimeout(timer);
        wake();
      };
      const timer = setTimeout(() => {
        const i = slots.waiting.indexOf(entry);
        if (i >= 0) slots.waiting.splice(i, 1);
        wake();
      }, left);
      slots.waiting.push(entry);
    }));
  }
}

// Throws when a tab cannot or may not be read. Call after the tab has loaded (its URL is final then).
async function checkReadable(tab, policy) {
  const url = String(tab.url || tab.pendingUrl || "");
  const errorPage = "the tab shows the browser's error page: the site did not load";
  if (url.startsWith("chrome-error:")) throw new CaptureError("network_error", errorPage);
  if (!url) {
    // No host access shows no URL: the browser's error page, or a chrome://, file:// or extension page.
    const probe = await Promise.race([
      chrome.scripting
        .executeScript({ target: { tabId: tab.id }, func: () => 0 })
        .then(() => "", (e) => String(e.message || e)),
      new Promise((r) => setTimeout(() => r("the tab did not answer"), 2000)),
    ]);
    if (/error page/i.test(probe)) throw new CaptureError("network_error", errorPage);
    const detail = probe ? ` (${probe})` : "";
    throw new CaptureError(
      "blocked_by_policy",
      `the tab shows a browser page, not a web page; trawl reads only http(s) pages${detail}`,
    );
  }
  refuseByPolicy(policy, url);
}

async function findTab(msg, policy) {
  if (msg.tab) {
    if (msg.tab === "active") return activeTab();
    const id = Number(msg.tab);
    if (!Number.isInteger(id)) throw new CaptureError("invalid_request", `bad tab id ${msg.tab}`);
    const tab = await chrome.tabs.get(id).catch(() => null);
    if (!tab) throw new CaptureError("tab_not_found", `no open tab with id ${msg.tab}`);
    return notIncognito(tab);
  }
  if (!msg.url) throw new CaptureError("invalid_request", "capture needs a url or a tab");
  refuseByPolicy(policy, msg.url); // a denied site is never even opened
  const tabs = await chrome.tabs.query({});
  // not another capture's tab, nor one of a private window
  const same = tabs.filter((t) => sameUrl(t.url, msg.url) && !opened.has(t.id) && !t.incognito);
  return same.find((t) => t.status === "complete") || same[0] || null;
}

async function capture(msg, policy) {
  const t0 = Date.now();
  const deadline = t0 + msg.timeout_ms;
  const timings = {};
  const warnings = [];
  const tab = await findTab(msg, policy);
  timings.find = Date.now() - t0;
  if (tab) return readTab(tab, null, msg, policy, deadline, timings, warnings, t0);

  // A PDF link with no open tab: fetched with the user's session, every redirect hop checked, PDF bodies only.
  if (isPdfPath(msg.url)) {
    try {
      const got = await fetchPdf(msg.url, pdfCheck(policy), msg.max_bytes, deadline);
      timings.fetch = Date.now() - t0;
      return pageReply(msg, -1, msg.url, got.finalUrl, "", got, "fetch", warnings, timings, t0);
    } catch (e) {
      if (!(e instanceof CaptureError && e.notPdf)) throw e;
      warnings.push(`${msg.url} is not a PDF; read it as a page instead`);
    }
  }

  const release = await takeSlot(Number(msg.max_background_tabs) || DEFAULT_BACKGROUND_TABS, deadline);
  try {
    timings.queue = Date.now() - t0;
    const created = await openBackgroundTab(deadline);
    const hops = trackHops(created.id);
    try {
      await keepOnSite(/** @type {number} */ (created.id), msg.url); // before the tab sends any request
      await chrome.tabs.update(created.id, { url: msg.url });
      return await readTab(created, hops, msg, policy, deadline, timings, warnings, t0);
    } finally {
      hops.stop();
      await closeBackgroundTab(created.id); // on every way out: success, refusal, timeout, a hung page
    }
  } finally {
    release();
  }
}

// Reads a tab: an open one (hops null) or one this capture opened (hops: its main-frame requests).
async function readTab(tab, hops, msg, policy, deadline, timings, warnings, t0) {
  const created = hops !== null;
  const via = created ? "background_tab" : "open_tab";
  const watch = watchRemoval(tab.id);
  let settledUrl = "";
  try {
    return await readChecked();
  } catch (e) {
    // A tab that navigated explains many failures ("Frame with ID 0 was removed"): when it went somewhere the
    // policy denies, or to another site, that is the answer.
    if (settledUrl && !(e instanceof CaptureError && e.code === "blocked_by_policy")) {
      if (created) refuseOffSite(policy, msg.url, hops.hops());
      const now = await chrome.tabs.get(/** @type {number} */ (tab.id)).catch(() => null);
      const where = now ? now.pendingUrl || now.url : "";
      if (where) refuseIfMoved(policy, settledUrl, where, "during capture");
    }
    throw e;
  } finally {
    watch.stop();
  }

  async function readChecked() {
    const loading = created || tab.status !== "complete";
    if (loading) {
      const load = await waitForLoad(tab.id, deadline, watch, created);
      if (created) refuseOffSite(policy, msg.url, [...hops.hops(), String(load.tab.url || load.tab.pendingUrl || "")]);
      timings.load = Date.now() - t0;
      if (!load.loaded) warnings.push(`the page did not finish loading within ${msg.timeout_ms} ms; captured it as it was`);
      tab = load.tab;
    }
    await checkReadable(tab, policy);
    settledUrl = tab.url;
    if (created) refuseOffSite(policy, msg.url, hops.hops());
    let pdf = false;
    if (loading) {
      const settleEnd = Math.min(deadline, Date.now() + msg.settle_max_ms);
      const onHref = (href) => refuseIfMoved(policy, settledUrl, href, "while it settled");
      const s = await settle(tab.id, msg.settle_quiet_ms, settleEnd, watch, onHref);
      timings.settle = Date.now() - t0;
      timings.settle_polls = s.polls;
      if (!s.settled) warnings.push(`the page kept changing for ${msg.settle_max_ms} ms; captured it as it was`);
      pdf = s.pdf;
    }
    let out = null;
    if (!pdf) {
      try {
        out = await serializeTab(tab.id, msg.max_bytes, watch, deadline, (u) => decide(policy, u).allowed);
      } catch (e) {
        // Chrome's PDF viewer refuses scripts: a .pdf tab that cannot be read is fetched instead.
        if (!(e instanceof CaptureError && e.code === "capture_failed" && /\.pdf($|[?#])/i.test(tab.url))) throw e;
      }
      pdf = out === null || Boolean(out.pdf);
    }
    if (pdf) {
      const got = await fetchPdf(tab.url, pdfCheck(policy), msg.max_bytes, deadline);
      timings.fetch = Date.now() - t0;
      return pageReply(msg, tab.id, msg.url || tab.url, got.finalUrl, tab.title, got, via, warnings, timings, t0);
    }
    timings.serialize = Date.now() - t0;
    // The document actually serialised, and the tab after it, must still be the page that was checked.
    refuseIfMoved(policy, settledUrl, out.url, "during capture");
    const after = await chrome.tabs.get(tab.id).catch(() => null);
    if (!after) throw new CaptureError("tab_not_found", "the tab was closed during capture");
    refuseIfMoved(policy, settledUrl, after.url || settledUrl, "during capture");
    if (created) refuseOffSite(policy, msg.url, hops.hops()); // a hop elsewhere was blocked: the page tried to leave
    if (out.hidden) {
      timings.hidden_marked = out.hidden.marked;
      timings.hidden_scanned = out.hidden.scanned;
      if (out.hidden.partial) {
        warnings.push(`the page is too big to check all of it for hidden text: ${out.hidden.scanned} elements checked`);
      }
    }
    const got = { kind: "html", contentType: out.contentType || "text/html", html: out.html, finalUrl: out.url };
    return pageReply(msg, tab.id, msg.url || tab.url, out.url, out.title, got, via, warnings, timings, t0);
  }
}

function pageReply(msg, tabId, url, finalUrl, title, got, via, warnings, timings, t0) {
  timings.total = Date.now() - t0;
  const reply = {
    type: "page",
    id: msg.id,
    tab_id: tabId,
    url: url || finalUrl,
    final_url: finalUrl || url,
    title: title || "",
    kind: got.kind,
    content_type: got.contentType,
    via,
    warnings,
    timings,
  };
  if (got.kind === "pdf") reply.data_b64 = got.data_b64;
  else reply.html = got.html;
  return reply;
}

async function handle(msg) {
  if (msg.type === "ping") return { type: "pong", id: msg.id };
  if (msg.type === "policy") {
    // The daemon's copy (policy.js acceptPolicy): taken, or ours goes back when it holds edits the daemon lacks.
    return acceptPolicy(msg).then(async (got) => {
      if (got === "resend" && link.isOpen()) link.send(await policyMessage());
      return null;
    });
  }
  if (msg.type === "indexed") {
    // The open tabs the daemon holds read ahead (title, host, chunks, embedded), for the popup.
    indexed = msg.tabs;
    return chrome.storage.session.set({ indexed }).then(() => null, () => null);
  }
  if (msg.type === "notice") {
    // e.g. the daemon refused an agent's URL that carried data from earlier reads (exit guard): show it in the log
    const entry = { t: Date.now(), what: `${msg.what}: ${msg.detail}`.slice(0, 300), ms: 0, code: msg.code };
    const bad = ["exit_refused", "exit_held", "policy_merged"].includes(msg.code);
    logCapture({ ...entry, ok: !bad, notice: true })
      .catch(() => {});
    if (msg.code === "policy_merged") chrome.storage.local.set({ policy_notice: entry }).catch(() => {}); // options

    return Promise.resolve(null);
  }
  const cfg = await readConfig();
  const policy = await currentPolicy();
  const label = msg.url || (msg.tab ? `tab ${msg.tab}` : "tabs");
  const t0 = Date.now();
  try {
    if (cfg.paused) throw new CaptureError("paused", "the user paused trawl in the browser");
    if (msg.type === "list_tabs") return await listTabs(msg, policy);
    if (msg.type === "capture") {
      const reply = await capture(msg, policy);
      const entry = { t: Date.now(), what: reply.final_url || label, ok: true, ms: Date.now() - t0, via: reply.via };
      logCapture(msg.quiet ? { ...entry, preread: true } : entry).catch(() => {});
      return reply;
    }
    throw new CaptureError("invalid_request", `the extension does not handle ${msg.type}`);
  } catch (e) {
    const code = e instanceof CaptureError ? e.code : "capture_failed";
    const message = e instanceof CaptureError ? e.message : `capture failed: ${/** @type {any} */ (e).message || e}`;
    if (msg.type === "capture") {
      const entry = { t: Date.now(), what: label, ok: false, ms: Date.now() - t0, code };
      logCapture(msg.quiet ? { ...entry, preread: true } : entry).catch(() => {});
    }
    return { type: "error", id: msg.id, code, message };
  }
}

// ---------------------------------------------------------------- link
async function stateMessage() {
  const policy = await currentPolicy();
  const cfg = await readConfig();
  return {
    type: "state",
    paused: cfg.paused,
    policy_mode: policy.mode,
    allow_count: policy.allow.length,
    deny_count: policy.deny.length,
  };
}

// One link per worker, created synchronously when the worker starts; Link.connect opens at most one socket.
const link = new Link({
  loadProto: loadProtocol,
  credentials: async () => {
    const cfg = await readConfig();
    return { secret: cfg.secret, pairCode: cfg.pairCode };
  },
  info: () => ({ extension_version: chrome.runtime.getManifest().version, browser: navigator.userAgent }),
  // Called only after the daemon proved it knows the pairing code the user gave: store the derived secret.
  onPaired: async (secret, code) => {
    const cfg = await readConfig();
    const { pair_code: waiting } = await chrome.storage.local.get("pair_code");
    const update = { secret, used_file_code: cfg.fileCode };
    if (!waiting || waiting === code) update.pair_code = ""; // a code pasted meanwhile stays
    await chrome.storage.local.set(update);
    configCache = null;
  },
  onConnected: async () => {
    link.send(await stateMessage());
    link.send(await policyMessage()); // the site policy sync (policy.js): the newer copy wins
    announceOpenTabs().catch(() => {}); // the tabs already open, for the daemon to read ahead
  },
  onRequest: handle,
  onStatus: (status) => {
    chrome.storage.session.set({ link: status }).catch(() => {});
    showBadge();
  },
});

// A single connect in flight: callers during it share it (and its `now`).
let connecting = null;
let connectNow = false;
function connect(now = false) {
  connectNow = connectNow || now;
  if (!connecting) {
    connecting = (async () => {
      const cfg = await readConfig();
      const url = daemonUrl(cfg.port);
      if (link.url && link.url !== url) link.close();
      const n = connectNow;
      connectNow = false;
      link.connect(url, n);
    })().finally(() => {
      connecting = null;
    });
  }
  return connecting;
}

// ---------------------------------------------------------------- events
chrome.alarms.create(ALARM, { periodInMinutes: 0.5 });
chrome.alarms.onAlarm.addListener((alarm) => {
  if (alarm.name === ALARM) sweepOrphanTabs().catch(() => {});
  if (alarm.name === ALARM && !(link && link.isOpen())) connect(true);
});
chrome.runtime.onStartup.addListener(() => connect(true));
// Browser activity also wakes a stopped worker: reconnect then, without waiting for the alarm.
chrome.tabs.onActivated.addListener(() => {
  if (!(link && (link.isOpen() || link.status.state === "refused"))) connect(false);
});
chrome.runtime.onInstalled.addListener(() => connect(true));
chrome.storage.onChanged.addListener(async (changes, area) => {
  if (area !== "local") return;
  configCache = null;
  if (changes.policy) policyCache = null;
  if (changes.policy || changes.paused) {
    if (link && link.isOpen()) link.send(await stateMessage());
    if (link && link.isOpen() && !(await readConfig()).paused) announceOpenTabs().catch(() => {});
  }
  // Only a change of the rules goes to the daemon (a copy marked as synced changes its base alone).
  const rulesChanged = changes.policy && !(changes.policy.oldValue && changes.policy.newValue &&
    sameRules(changes.policy.oldValue, changes.policy.newValue));
  if (rulesChanged && link && link.isOpen()) link.send(await policyMessage());
  if (changes.port) connect(true);
});

chrome.runtime.onMessage.addListener((req, sender, sendResponse) => {
  if (sender.id !== chrome.runtime.id) return false;
  (async () => {
    if (req.cmd === "pair") {
      // The stored secret stays until the daemon has proved it knows this code and the new secret is derived.
      await chrome.storage.local.set({ pair_code: String(req.code || "").trim() });
      configCache = null;
      link.close();
      await connect(true);
    } else if (req.cmd === "pause") {
      await chrome.storage.local.set({ paused: Boolean(req.paused) });
      configCache = null;
    } else if (req.cmd === "reconnect") {
      await connect(true);
    } else if (req.cmd === "unpair") {
      await chrome.storage.local.set({ secret: "", pair_code: "" });
      configCache = null;
      if (link) link.close();
    }
    const cfg = await readConfig();
    const { recent: saved, indexed: held } = await chrome.storage.session.get(["recent", "indexed"]);
    sendResponse({
      indexed: held || indexed,
      link: link ? link.status : { state: "disconnected", detail: "" },
      paired: Boolean(cfg.secret),
      pairing: Boolean(cfg.pairCode),
      paused: cfg.paused,
      port: cfg.port,
      recent: saved || recent,
    });
  })();
  return true;
});

// ---------------------------------------------------------------- tab events (the daemon reads open tabs ahead)
// "ready" carries the tab (URL, title) only for a loaded http(s) tab the site policy allows, and only while trawl
// is not paused; "navigated" and "closed" carry only the id (the daemon drops that tab's index); tabs this worker
// opened for captures are never reported.
function tabRecord(t, active) {
  return {
    id: t.id,
    window_id: t.windowId,
    url: t.url,
    title: t.title || "",
    active,
    status: t.status || "",
    incognito: Boolean(t.incognito), // always false here (private tabs are never sent); the daemon checks too
  };
}

/**
 * @param {string} event
 * @param {number} tabId
 * @param {chrome.tabs.Tab | null} [tab]
 */
async function sendTabEvent(event, tabId, tab = null) {
  if (!(link && link.isOpen()) || opened.has(tabId) || (tab && tab.incognito)) return;
  /** @type {Record<string, any>} */
  const msg = { type: "tab_event", event, tab_id: tabId };
  if (event === "ready") {
    const cfg = await readConfig();
    const url = tab ? String(tab.url || "") : "";
    if (cfg.paused || !tab || !/^https?:/i.test(url) || !decide(await currentPolicy(), url).allowed) return;
    msg.tab = tabRecord(tab, Boolean(tab.active));
  }
  link.send(msg);
}

async function announceOpenTabs() {
  const tabs = await chrome.tabs.query({});
  for (const t of tabs) {
    if (t.id !== undefined && t.status === "complete") await sendTabEvent("ready", t.id, t);
  }
  const active = await activeTab().catch(() => null);
  if (active && active.id !== undefined) await sendTabEvent("activated", active.id);
}

chrome.tabs.onUpdated.addListener((tabId, change, tab) => {
  if (tab && tab.incognito) return; // private windows: nothing is reported
  if (change.url !== undefined) sendTabEvent("navigated", tabId).catch(() => {});
  if (change.status === "complete") sendTabEvent("ready", tabId, tab).catch(() => {});
});
chrome.tabs.onRemoved.addListener((tabId) => {
  sendTabEvent("closed", tabId).catch(() => {});
});
chrome.tabs.onActivated.addListener((info) => {
  chrome.tabs
    .get(info.tabId)
    .then((t) => sendTabEvent("activated", info.tabId, t))
    .catch(() => {});
});

// Exposed for tests and debugging in the worker's console.
globalThis.trawl = { connect, handle, validate, get link() { return link; } };

connect(true);
sweepOrphanTabs().catch(() => {}); // tabs a previous worker opened for captures and could not close
