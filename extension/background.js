// trawl's service worker: keeps the link to the local daemon and answers its requests
// (list tabs, capture a tab or a URL) within the user's site policy. Read-only: it never clicks or types.

import { isHex64, Link } from "./link.js";
import { loadProtocol, validate } from "./protocol.js";
import { acceptPolicy, decide, loadPolicy, policyMessage } from "./policy.js";
import {
  CaptureError,
  fetchWithSession,
  serializeTab,
  settle,
  waitForLoad,
  watchRemoval,
} from "./capture.js";

const DEFAULT_PORT = 8765;
const ALARM = "trawl-reconnect";
const LOG_SIZE = 20;

let recent = [];
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
  chrome.action.setBadgeBackgroundColor({ color: entry.ok ? "#1a7f37" : "#b42318" });
  chrome.action.setBadgeText({ text: entry.ok ? "read" : "no" });
  clearTimeout(badgeTimer);
  badgeTimer = setTimeout(() => {
    badgeTimer = null;
    showBadge();
  }, 3000);
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
    if (!t.url || !decide(policy, t.url).allowed) {
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

function refuseByPolicy(policy, url) {
  const d = decide(policy, url);
  if (!d.allowed) throw new CaptureError("blocked_by_policy", `your trawl site policy does not allow this: ${d.reason}`);
}

async function readPdf(url, msg, deadline, timings, t0) {
  const got = await fetchWithSession(url, msg.max_bytes, deadline);
  timings.fetch = Date.now() - t0;
  return got;
}

// Throws when a tab cannot or may not be read. Call after the tab has loaded (its URL is final then).
async function checkReadable(tab, policy) {
  const url = String(tab.url || tab.pendingUrl || "");
  const errorPage = "the tab shows the browser's error page: the site did not load";
  if (url.startsWith("chrome-error:")) throw new CaptureError("network_error", errorPage);
  if (!url) {
    // No host access shows no URL: the browser's error page, or a chrome://, file:// or extension page.
    const probe = await chrome.scripting
      .executeScript({ target: { tabId: tab.id }, func: () => 0 })
      .then(() => "", (e) => String(e.message || e));
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
    return tab;
  }
  if (!msg.url) throw new CaptureError("invalid_request", "capture needs a url or a tab");
  refuseByPolicy(policy, msg.url); // a denied site is never even opened
  const tabs = await chrome.tabs.query({});
  const same = tabs.filter((t) => sameUrl(t.url, msg.url));
  return same.find((t) => t.status === "complete") || same[0] || null;
}

async function capture(msg, policy) {
  const t0 = Date.now();
  const deadline = t0 + msg.timeout_ms;
  const timings = {};
  const warnings = [];
  let tab = await findTab(msg, policy);
  const via = tab ? "open_tab" : "background_tab";
  timings.find = Date.now() - t0;

  // A PDF link with no open tab: fetch it with the user's session, no tab needed.
  if (!tab && /\.pdf($|[?#])/i.test(new URL(msg.url).pathname)) {
    const got = await readPdf(msg.url, msg, deadline, timings, t0);
    return pageReply(msg, -1, msg.url, got.finalUrl, "", got, "fetch", warnings, timings, t0);
  }

  let created = false;
  if (!tab) {
    tab = await chrome.tabs.create({ url: msg.url, active: false });
    created = true;
  }
  const watch = watchRemoval(tab.id);
  try {
    const loading = created || tab.status !== "complete";
    if (loading) {
      const load = await waitForLoad(tab.id, deadline, watch, created && tab.status !== "loading");
      timings.load = Date.now() - t0;
      if (!load.loaded) warnings.push(`the page did not finish loading within ${msg.timeout_ms} ms; captured it as it was`);
      tab = load.tab;
    }
    await checkReadable(tab, policy);
    let pdf = false;
    if (loading) {
      const settleEnd = Math.min(deadline, Date.now() + msg.settle_max_ms);
      const s = await settle(tab.id, msg.settle_quiet_ms, settleEnd, watch);
      timings.settle = Date.now() - t0;
      timings.settle_polls = s.polls;
      if (!s.settled) warnings.push(`the page kept changing for ${msg.settle_max_ms} ms; captured it as it was`);
      pdf = s.pdf;
    }
    let out = null;
    if (!pdf) {
      try {
        out = await serializeTab(tab.id, msg.max_bytes, watch);
      } catch (e) {
        // Chrome's PDF viewer refuses scripts: a .pdf tab that cannot be read is fetched instead.
        if (!(e instanceof CaptureError && e.code === "capture_failed" && /\.pdf($|[?#])/i.test(tab.url))) throw e;
      }
      pdf = out === null || Boolean(out.pdf);
    }
    if (pdf) {
      const got = await readPdf(tab.url, msg, deadline, timings, t0);
      return pageReply(msg, tab.id, msg.url || tab.url, got.finalUrl, tab.title, got, via, warnings, timings, t0);
    }
    timings.serialize = Date.now() - t0;
    const got = { kind: "html", contentType: out.contentType || "text/html", html: out.html, finalUrl: out.url };
    return pageReply(msg, tab.id, msg.url || tab.url, out.url, out.title, got, via, warnings, timings, t0);
  } finally {
    watch.stop();
    if (created) chrome.tabs.remove(tab.id).catch(() => {});
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
  if (msg.type === "policy") return acceptPolicy(msg).then(() => null); // the daemon's newer copy
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
      logCapture(entry).catch(() => {});
      return reply;
    }
    throw new CaptureError("invalid_request", `the extension does not handle ${msg.type}`);
  } catch (e) {
    const code = e instanceof CaptureError ? e.code : "capture_failed";
    const message = e instanceof CaptureError ? e.message : `capture failed: ${e.message || e}`;
    if (msg.type === "capture") {
      logCapture({ t: Date.now(), what: label, ok: false, ms: Date.now() - t0, code }).catch(() => {});
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
  }
  if (changes.policy && link && link.isOpen()) link.send(await policyMessage());
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
    const { recent: saved } = await chrome.storage.session.get("recent");
    sendResponse({
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

// Exposed for tests and debugging in the worker's console.
globalThis.trawl = { connect, handle, validate, get link() { return link; } };

connect(true);
