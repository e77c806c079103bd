// @ts-check
// Capture: read one tab's DOM (shadow roots and same-origin iframes inlined, hidden text marked), or a PDF's bytes.
// Settle detection runs here in the service worker: background tabs are hidden and their timers throttled,
// so the page's own timers cannot be trusted to say when it is done.
//
// Nothing here can hang: every script injected into a page races a timer (a page that busy-loops never answers
// executeScript), and the caller closes a background tab whose script timed out. PDFs are fetched hop by hop
// (redirect: "manual"); each hop's Location comes from the browser's own record of the response
// (chrome.webRequest), so every URL is checked against the site policy before a request with the user's
// cookies goes to it, and only a real PDF body is accepted.

export class CaptureError extends Error {
  constructor(code, message, extra = {}) {
    super(message);
    this.code = code;
    this.hung = Boolean(extra.hung); // a script in the page did not answer: the page is busy
    this.notPdf = Boolean(extra.notPdf); // a fetched "PDF" was served as another type: read it as a page
  }
}

// ---- functions injected into the page (ISOLATED world; each must be self-contained) ----

// Installs a MutationObserver once; returns how long the page has been quiet by its own clock: the time since
// the last mutation seen, the last network response and the load event, whichever came last.
function probeSettle() {
  const g = globalThis;
  const now = performance.now();
  if (!g.__trawlProbe) {
    const state = { mutations: 0, last: 0 };
    try {
      new MutationObserver((records) => {
        state.mutations += records.length;
        state.last = performance.now();
      }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
    } catch (e) {
      state.last = now;
    }
    g.__trawlProbe = state;
  }
  let last = g.__trawlProbe.last;
  try {
    const nav = /** @type {PerformanceNavigationTiming | undefined} */ (performance.getEntriesByType("navigation")[0]);
    if (nav) last = Math.max(last, nav.domContentLoadedEventEnd || 0, nav.loadEventEnd || 0);
    const res = /** @type {PerformanceResourceTiming[]} */ (performance.getEntriesByType("resource"));
    for (let i = Math.max(0, res.length - 50); i < res.length; i++) last = Math.max(last, res[i].responseEnd || 0);
  } catch (e) {
    last = now;
  }
  // Visible-ish text, counted up to `enough` characters only (stops early on real pages).
  const enough = 200;
  let text = 0;
  const skip = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE"]);
  if (document.body) {
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => (n.parentElement && skip.has(n.parentElement.tagName) ? 2 : 1),
    });
    while (text < enough && walker.nextNode()) text += /** @type {string} */ (walker.currentNode.nodeValue).trim().length;
    if (text < enough) {
      // Web-component apps keep their text in shadow roots (small DOMs here: this is the "little text" case).
      const els = document.body.querySelectorAll("*");
      for (let i = 0; i < els.length && i < 5000 && text < enough; i++) {
        let root = null;
        try {
          root = chrome.dom.openOrClosedShadowRoot(/** @type {HTMLElement} */ (els[i]));
        } catch (e) {
          root = els[i].shadowRoot;
        }
        if (root) text += root.textContent.trim().length;
      }
    }
  }
  return {
    href: location.href,
    quietFor: now - last,
    mutations: g.__trawlProbe.mutations,
    ready: document.readyState,
    contentType: document.contentType,
    text,
  };
}

// Serialises the document with open and closed shadow roots and same-origin iframes, text the user cannot see
// marked data-trawl-hidden (hidden.js, injected first into this same isolated world). The marks are taken off
// again before this function returns: the page's own DOM is left as it was.
// Cross-origin frames cannot be read from here: each leaves an empty slot (data-trawl-slot="<nonce>:<path>", the
// path being the frame's index in window.frames at each level) that serializeTab fills from the frame itself,
// where this same function runs with `frameNonce` set and returns the frame's body (or null in the top window and
// in frames their parent can read, which the parent inlines). A frame element the user cannot see marks its box
// data-trawl-hidden="hidden-frame": what it holds is hidden text of this page, however visible inside the frame.
function serializePage(maxBytes, nonce, frameNonce) {
  const inFrame = typeof frameNonce === "string";
  if (inFrame) {
    let readable = false;
    try {
      readable = window === window.top || window.frameElement !== null;
    } catch (e) {
      readable = false;
    }
    if (readable) return null;
  }
  if (document.contentType === "application/pdf") return inFrame ? null : { pdf: true, url: location.href };
  const markHidden = globalThis.__trawlMarkHidden;
  if (typeof markHidden !== "function") return { needHidden: true, url: location.href };
  const pathOf = (w) => {
    const parts = [];
    try {
      for (let depth = 0; w !== w.top && depth < 10; depth++) {
        const p = w.parent;
        let k = -1;
        for (let i = 0; i < p.frames.length; i++) {
          if (p.frames[i] === w) {
            k = i;
            break;
          }
        }
        parts.unshift(k);
        w = p;
      }
    } catch (e) {
      return "?";
    }
    return parts.join(".");
  };
  // hidden.js judged the frame element with its own tests (clip, clip-path, filter, opacity, box, off-screen):
  // its mark is on while this runs. The checks below stay as a floor.
  const frameHidden = (f) => {
    try {
      if (f.hasAttribute("data-trawl-hidden")) return true;
      if (!f.checkVisibility({ opacityProperty: true, visibilityProperty: true })) return true;
      const r = f.getBoundingClientRect();
      const win = f.ownerDocument.defaultView;
      if (r.width < 2 || r.height < 2) return true;
      return r.right + win.scrollX <= 0 || r.bottom + win.scrollY <= 0;
    } catch (e) {
      return false;
    }
  };
  const slots = [];
  const shadowOf = (el) => {
    try {
      return chrome.dom.openOrClosedShadowRoot(el) || null;
    } catch (e) {
      return el.shadowRoot || null;
    }
  };
  const escAttr = (s) =>
    String(s).replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const rawText = /<(script|style|xmp|noembed|noframes|noscript)\b[^>]*>[\s\S]*?<\/\1\s*>|<iframe\b[^>]*>[\s\S]*?<\/iframe\s*>/gi;

  const scans = new Map(); // document -> its hidden-text scan
  const scan = (doc) => {
    if (!scans.has(doc)) scans.set(doc, markHidden(doc, { shadowOf, maxMs: 1500, maxElements: 60000 }));
  };

  function serializeNode(root, depth) {
    scan(root.ownerDocument || document);
    const roots = [];
    const frames = [];
    const walk = (parent, inert) => {
      for (let el = parent.firstElementChild; el; el = el.nextElementSibling) {
        if (el.localName === "iframe") frames.push(inert ? null : el);
        const sr = inert ? null : shadowOf(el);
        if (sr) {
          roots.push(sr);
          walk(sr, false);
        }
        if (el.localName === "template" && el.content) walk(el.content, true);
        walk(el, inert);
      }
    };
    walk(root, false);
    let html =
      typeof root.getHTML === "function"
        ? root.getHTML({ serializableShadowRoots: true, shadowRoots: roots })
        : root.innerHTML;
    if (!frames.length) return html;
    let i = 0;
    html = html.replace(rawText, (match, rawTag) => {
      if (rawTag) return match;
      const frame = frames[i++];
      if (!frame || depth > 3) return match;
      let doc = null;
      try {
        doc = frame.contentDocument;
      } catch (e) {
        doc = null;
      }
      // The box takes the frame element's place and its attributes (style, class, id, hidden, aria-hidden, inert;
      // not what loads or runs something): the daemon's own CSS pass judges the frame's content like the element.
      const kept = Array.from(frame.attributes)
        .filter((a) => /^[a-z][\w:.-]*$/i.test(a.name) &&
          !/^(src|srcdoc|on.*|data-trawl-.*|sandbox|allow.*|loading|name|referrerpolicy)$/i.test(a.name))
        .map((a) => ` ${a.name}="${escAttr(a.value)}"`)
        .join("");
      const hidden = (frameHidden(frame) ? ' data-trawl-hidden="hidden-frame"' : "") + kept;
      if (!doc) {
        let path = "?";
        try {
          const win = frame.ownerDocument.defaultView;
          for (let k = 0; win && k < win.frames.length; k++) {
            if (win.frames[k] === frame.contentWindow) {
              path = (win === window.top ? "" : pathOf(win) + ".") + k;
              break;
            }
          }
        } catch (e) {
          path = "?";
        }
        const slot = `${nonce}:${path}`;
        slots.push(slot);
        return `<div data-trawl-frame="${escAttr(frame.src || "")}" data-trawl-slot="${escAttr(slot)}"${hidden}></div>`;
      }
      if (!doc.body) return match;
      let src = "";
      try {
        src = doc.location.href;
      } catch (e) {
        src = frame.src || "";
      }
      return `<div data-trawl-frame="${escAttr(src)}"${hidden}>${serializeNode(doc.body, depth + 1)}</div>`;
    });
    return html;
  }

  const root = inFrame ? document.body : document.documentElement;
  if (!root) return inFrame ? null : { html: "", title: "", url: location.href, contentType: document.contentType, size: 0 };
  let body = "";
  const hidden = { marked: 0, scanned: 0, partial: false };
  try {
    body = serializeNode(root, 0);
  } finally {
    for (const s of scans.values()) {
      s.undo();
      hidden.marked += s.marked;
      hidden.scanned += s.scanned;
      hidden.partial = hidden.partial || s.partial;
    }
  }
  let attrs = Array.from(root.attributes)
    .filter((a) => a.name !== "data-trawl-hidden-scan")
    .map((a) => ` ${a.name}="${escAttr(a.value)}"`)
    .join("");
  if (inFrame) return { key: `${frameNonce}:${pathOf(window)}`, html: body, slots, hidden, url: location.href };
  if (hidden.partial) attrs += ' data-trawl-hidden-scan="partial"';
  const doctype = document.doctype ? `<!DOCTYPE ${document.doctype.name}>` : "<!DOCTYPE html>";
  const html = `${doctype}<html${attrs}>${body}</html>`;
  const out = {
    title: document.title, url: location.href, contentType: document.contentType, size: html.length, hidden, slots,
  };
  if (html.length > maxBytes) return { ...out, html: null, tooLarge: true };
  return { ...out, html };
}

// ---- service-worker side ----

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A script that has not answered by the deadline (at least `floorMs` from now) is given up on: the page is busy.
export const SCRIPT_FLOOR_MS = 250;

function raceDeadline(promise, deadline, floorMs, what) {
  const ms = Math.max(floorMs, deadline - Date.now());
  let timer = null;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => {
      reject(new CaptureError("timeout", `the page did not answer (${what}) within ${ms} ms: a script on it may be ` +
        "busy", { hung: true }));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function injected(tabId, call, deadline, floorMs, what) {
  let results;
  try {
    results = await raceDeadline(chrome.scripting.executeScript(call), deadline, floorMs, what);
  } catch (e) {
    if (e instanceof CaptureError) throw e;
    const gone = await chrome.tabs.get(tabId).then(() => false, () => true);
    if (gone) throw new CaptureError("tab_not_found", "the tab was closed during capture");
    const why = String(/** @type {any} */ (e).message || e);
    if (/error page/i.test(why)) {
      throw new CaptureError("network_error", "the tab shows the browser's error page: the site did not load");
    }
    throw new CaptureError("capture_failed", `cannot read the tab: ${why}`);
  }
  return results;
}

export async function inject(tabId, func, args, deadline, floorMs = SCRIPT_FLOOR_MS) {
  const call = { target: { tabId }, func, args, world: "ISOLATED" };
  const results = await injected(tabId, call, deadline, floorMs, func.name || "script");
  const first = results && results[0];
  if (!first) throw new CaptureError("capture_failed", "the tab returned nothing");
  return first.result;
}

async function injectFile(tabId, file, deadline, floorMs = SCRIPT_FLOOR_MS) {
  await injected(tabId, { target: { tabId }, files: [file], world: "ISOLATED" }, deadline, floorMs, file);
}

// Watches a tab for removal while a capture runs.
export function watchRemoval(tabId) {
  let removed = false;
  const listener = (id) => {
    if (id === tabId) removed = true;
  };
  chrome.tabs.onRemoved.addListener(listener);
  return {
    check() {
      if (removed) throw new CaptureError("tab_not_found", "the tab was closed during capture");
    },
    stop() {
      chrome.tabs.onRemoved.removeListener(listener);
    },
  };
}

// Every main-frame URL a tab we opened asked for, redirect hops included (seen by the browser's network layer).
const tabHops = new Map();
// Where a redirect our own fetch received points (Location), by the URL that answered with it.
const fetchRedirects = new Map();
const redirectWaiters = new Map();
const WEB = ["http://*/*", "https://*/*"];

/**
 * @param {number} tabId
 * @param {string | undefined} url
 * @returns {undefined}
 */
function hopSeen(tabId, url) {
  const hops = tabHops.get(tabId);
  if (hops && url) hops.push(url);
}

if (chrome.webRequest) {
  chrome.webRequest.onBeforeRequest.addListener((d) => hopSeen(d.tabId, d.url), { urls: WEB, types: ["main_frame"] });
  chrome.webRequest.onBeforeRedirect.addListener(
    (d) => hopSeen(d.tabId, d.redirectUrl),
    { urls: WEB, types: ["main_frame"] },
  );
  chrome.webRequest.onHeadersReceived.addListener(
    /** @returns {undefined} */ (d) => {
      if (d.tabId !== -1 || d.statusCode < 300 || d.statusCode >= 400) return;
      const own = `chrome-extension://${chrome.runtime.id}`;
      if (d.initiator && d.initiator !== own) return;
      const loc = (d.responseHeaders || []).find((h) => h.name.toLowerCase() === "location");
      if (!loc || !fetchRedirects.has(d.url)) return;
      fetchRedirects.set(d.url, String(loc.value || ""));
      for (const wake of redirectWaiters.get(d.url) || []) wake();
    },
    { urls: WEB, types: ["xmlhttprequest", "other"] },
    ["responseHeaders"],
  );
}

// Starts recording the main-frame hops of a tab; hops() lists them, stop() forgets the tab.
export function trackHops(tabId) {
  tabHops.set(tabId, []);
  return {
    hops: () => [...(tabHops.get(tabId) || [])],
    stop: () => tabHops.delete(tabId),
  };
}

// Waits for a tab to finish loading. A tab we just created starts as about:blank, which can already be
// "complete": for those (`fresh`) the load counts only after a "loading" state or a real URL was seen.
export async function waitForLoad(tabId, deadline, watch, fresh = false) {
  let sawLoading = !fresh;
  for (;;) {
    watch.check();
    let tab;
    try {
      tab = await chrome.tabs.get(tabId);
    } catch (e) {
      throw new CaptureError("tab_not_found", "the tab was closed during capture");
    }
    if (tab.status === "loading") sawLoading = true;
    const real = Boolean(tab.url) && tab.url !== "about:blank";
    // A navigation not yet committed (pendingUrl) is still loading, whatever the status says.
    if (tab.status === "complete" && !tab.pendingUrl && (sawLoading || real)) return { loaded: true, tab };
    if (Date.now() >= deadline) return { loaded: false, tab };
    await sleep(25);
  }
}

// Polls the page every ~50 ms until it has been quiet for quietMs (by the page's clock), or the deadline.
// The first probe only installs the observer: a page that keeps changing shows it by the second.
// A quiet page with almost no text (an app shell still waiting for its data) gets up to emptyWaitMs more.
// `onHref(url)` sees the document's URL at every probe (and may throw: the tab navigated).
const MIN_TEXT = 200;

/**
 * @param {number} tabId
 * @param {number} quietMs
 * @param {number} deadline
 * @param {{check: () => void}} watch
 * @param {(href: string) => void} [onHref]
 * @param {number} [emptyWaitMs]
 */
export async function settle(tabId, quietMs, deadline, watch, onHref = () => {}, emptyWaitMs = 3000) {
  const start = Date.now();
  let polls = 0;
  for (;;) {
    watch.check();
    const p = await inject(tabId, probeSettle, [], deadline);
    polls += 1;
    onHref(p.href);
    if (p.contentType === "application/pdf") return { settled: true, pdf: true, polls };
    const now = Date.now();
    if (polls >= 2 && p.ready === "complete" && p.quietFor >= quietMs) {
      const empty = p.text < MIN_TEXT;
      if (!empty || now - start >= emptyWaitMs) return { settled: true, pdf: false, polls, empty };
    }
    if (now >= deadline) return { settled: false, pdf: false, polls };
    await sleep(50);
  }
}

// Serialising a big page takes a while: it gets at least this long even when the capture's deadline is near.
const SERIALIZE_FLOOR_MS = 3000;

// `allowFrame(url)` is the site policy's word on a cross-origin frame (by the URL its document has now, not the
// src its element names): a frame it refuses is left unread, whatever its document holds.
export async function serializeTab(tabId, maxBytes, watch, deadline, allowFrame = (_url) => true) {
  watch.check();
  let out = null;
  const nonce = crypto.randomUUID().slice(0, 8);
  for (let attempt = 0; attempt < 2; attempt++) {
    await injectFile(tabId, "hidden.js", deadline, SERIALIZE_FLOOR_MS);
    out = await inject(tabId, serializePage, [maxBytes, nonce], deadline, SERIALIZE_FLOOR_MS);
    if (!out.needHidden) break; // a new document replaced the one hidden.js went into: once more
  }
  watch.check();
  if (out.needHidden) throw new CaptureError("capture_failed", "the tab kept changing documents during capture");
  if (out.pdf) return out;
  if (out.tooLarge) {
    throw new CaptureError("too_large", `the page is ${out.size} characters, over the ${maxBytes} limit`);
  }
  if (out.slots && out.slots.length) {
    out.html = await fillFrames(tabId, out, maxBytes, nonce, deadline, allowFrame);
    out.size = out.html.length;
    watch.check();
    if (out.size > maxBytes) {
      throw new CaptureError("too_large", `the page is ${out.size} characters, over the ${maxBytes} limit`);
    }
  }
  return out;
}

// At most this many cross-origin frames are read into one page; the rest are named as unread.
const MAX_FRAMES = 16;
const SLOT = /(<div data-trawl-frame="[^"]*" data-trawl-slot="([\w:.?-]+)"[^>]*)>(<\/div>)/g;
const escUrl = (s) => String(s).replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

// Reads the cross-origin frames of a serialised page from the frames themselves (the extension's host
// permissions reach them; each marks its own hidden text) and puts each one's body in its slot. A frame that
// cannot be read (no permission, an error page, no answer in time) keeps an empty slot marked
// data-trawl-unread="frame": the daemon names it in the result's coverage. So does a frame whose document the site
// policy refuses (`allowFrame`); a filled slot names the URL of the document read, which the daemon checks too.
async function fillFrames(tabId, out, maxBytes, nonce, deadline, allowFrame) {
  const bodies = new Map();
  const refused = new Map();
  try {
    await injected(tabId, { target: { tabId, allFrames: true }, files: ["hidden.js"], world: "ISOLATED" }, deadline,
      SCRIPT_FLOOR_MS, "hidden.js in frames");
    const results = await injected(tabId, {
      target: { tabId, allFrames: true }, func: serializePage, args: [maxBytes, nonce, nonce], world: "ISOLATED",
    }, deadline, SCRIPT_FLOOR_MS, "frames");
    for (const r of results || []) {
      const got = r && r.frameId !== 0 ? r.result : null;
      if (!got || typeof got.key !== "string" || typeof got.html !== "string" || bodies.size >= MAX_FRAMES) continue;
      const url = typeof got.url === "string" ? got.url : "";
      if (!allowFrame(url)) {
        refused.set(got.key, url);
        continue;
      }
      bodies.set(got.key, { html: got.html, url });
      if (got.hidden) {
        out.hidden.marked += got.hidden.marked;
        out.hidden.scanned += got.hidden.scanned;
        out.hidden.partial = out.hidden.partial || got.hidden.partial;
      }
    }
  } catch (e) {
    if (e instanceof CaptureError && e.code === "tab_not_found") throw e;
    // a busy or unreachable frame: every slot stays unread
  }
  let html = out.html;
  for (let pass = 0; pass < 5; pass++) {
    let changed = false;
    html = html.replace(SLOT, (m, open, key, close) => {
      const got = bodies.get(key);
      if (got === undefined) return m;
      bodies.delete(key);
      changed = true;
      const named = open.replace(/^<div data-trawl-frame="[^"]*"/, `<div data-trawl-frame="${escUrl(got.url)}"`);
      return `${named}>${got.html}${close}`;
    });
    if (!changed) break;
  }
  if (out.hidden.partial && !/^[^>]*<html[^>]*data-trawl-hidden-scan/.test(html.slice(0, 4096))) {
    html = html.replace("<html", '<html data-trawl-hidden-scan="partial"');
  }
  return html.replace(SLOT, (m, open, key, close) => {
    const url = refused.get(key);
    const named = url === undefined ? open : open.replace(/^<div data-trawl-frame="[^"]*"/,
      `<div data-trawl-frame="${escUrl(url)}"`);
    return `${named} data-trawl-unread="frame">${close}`;
  });
}

function toBase64(bytes) {
  let s = "";
  const step = 0x8000;
  for (let i = 0; i < bytes.length; i += step) s += String.fromCharCode.apply(null, bytes.subarray(i, i + step));
  return btoa(s);
}

const PDF_TYPES = new Set([
  "application/pdf", "application/x-pdf", "application/acrobat", "application/octet-stream",
  "binary/octet-stream", "application/download", "application/force-download", "",
]);
const MAX_PDF_HOPS = 10;
const REDIRECT_WAIT_MS = 5000;

function startsLikePdf(buf) {
  // "%PDF-" within the first 1024 bytes, where PDF readers look for the header.
  const end = Math.min(buf.length - 5, 1024);
  for (let i = 0; i <= end; i++) {
    if (buf[i] === 0x25 && buf[i + 1] === 0x50 && buf[i + 2] === 0x44 && buf[i + 3] === 0x46 && buf[i + 4] === 0x2d) {
      return true;
    }
  }
  return false;
}

async function readCapped(res, maxBytes) {
  const reader = res.body.getReader();
  const parts = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) {
      reader.cancel().catch(() => {});
      throw new CaptureError("too_large", `the document is over the ${maxBytes} byte limit`);
    }
    parts.push(value);
  }
  const buf = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    buf.set(p, at);
    at += p.length;
  }
  return buf;
}

// The Location the browser saw on the redirect `url` answered our fetch with.
async function redirectTarget(url, deadline) {
  const until = Math.min(deadline, Date.now() + REDIRECT_WAIT_MS);
  for (;;) {
    const loc = fetchRedirects.get(url);
    if (loc) return loc;
    const left = until - Date.now();
    if (left <= 0) return "";
    await new Promise((wake) => {
      const list = redirectWaiters.get(url) || [];
      list.push(wake);
      redirectWaiters.set(url, list);
      setTimeout(wake, left);
    });
    redirectWaiters.delete(url);
  }
}

// Fetches a PDF with the user's session (cookies included). Redirects are followed by hand: `check(url, hop)`
// runs on the requested URL and on every hop before any request goes there (and throws to refuse it).
// Returns {kind: "pdf", data_b64, finalUrl}. A response served as something else is refused with notPdf set (the
// caller may read it as a page); one served as a PDF without a PDF body is refused outright.
export async function fetchPdf(url, check, maxBytes, deadline) {
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), Math.max(1, deadline - Date.now()));
  let current = new URL(url).href;
  try {
    for (let hop = 0; ; hop++) {
      check(current, hop);
      if (hop > MAX_PDF_HOPS) throw new CaptureError("http_error", `more than ${MAX_PDF_HOPS} redirects from ${url}`);
      fetchRedirects.set(current, "");
      let res;
      try {
        res = await fetch(current, { credentials: "include", redirect: "manual", signal: ctrl.signal });
      } catch (e) {
        if (ctrl.signal.aborted) throw new CaptureError("timeout", `fetching ${current} took too long`);
        throw new CaptureError("network_error", `cannot fetch ${current}: ${/** @type {any} */ (e).message || e}`);
      }
      if (res.type === "opaqueredirect" || (res.status >= 300 && res.status < 400)) {
        const loc = await redirectTarget(current, deadline);
        fetchRedirects.delete(current);
        if (!loc) {
          throw new CaptureError("blocked_by_policy", `${current} redirects, and the browser did not say where: ` +
            "trawl does not follow a redirect it cannot check against your site policy");
        }
        current = new URL(loc, current).href;
        continue;
      }
      fetchRedirects.delete(current);
      if (!res.ok) throw new CaptureError("http_error", `HTTP ${res.status} for ${current}`);
      const len = Number(res.headers.get("content-length") || 0);
      if (len > maxBytes) throw new CaptureError("too_large", `the document is ${len} bytes, over the ${maxBytes} limit`);
      const type = (res.headers.get("content-type") || "").split(";")[0].trim().toLowerCase();
      if (!PDF_TYPES.has(type)) {
        res.body && res.body.cancel().catch(() => {});
        throw new CaptureError("unsupported_content", `${current} is ${type}, not a PDF`, { notPdf: true });
      }
      const buf = await readCapped(res, maxBytes);
      if (!startsLikePdf(buf)) {
        // Served as a PDF but not one: final. A tab would only show the browser's PDF viewer (or a download).
        throw new CaptureError("unsupported_content", `${current} is served as a PDF but does not hold one`);
      }
      return { kind: "pdf", contentType: "application/pdf", data_b64: toBase64(buf), finalUrl: current };
    }
  } catch (e) {
    if (ctrl.signal.aborted && !(e instanceof CaptureError)) throw new CaptureError("timeout", `fetching ${url} took too long`);
    throw e;
  } finally {
    clearTimeout(timer);
  }
}
