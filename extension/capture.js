// Capture: read one tab's DOM (shadow roots and same-origin iframes inlined), or a PDF's bytes.
// Settle detection runs here in the service worker: background tabs are hidden and their timers throttled,
// so the page's own timers cannot be trusted to say when it is done.

export class CaptureError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
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
    const nav = performance.getEntriesByType("navigation")[0];
    if (nav) last = Math.max(last, nav.domContentLoadedEventEnd || 0, nav.loadEventEnd || 0);
    const res = performance.getEntriesByType("resource");
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
    while (text < enough && walker.nextNode()) text += walker.currentNode.nodeValue.trim().length;
    if (text < enough) {
      // Web-component apps keep their text in shadow roots (small DOMs here: this is the "little text" case).
      const els = document.body.querySelectorAll("*");
      for (let i = 0; i < els.length && i < 5000 && text < enough; i++) {
        let root = null;
        try {
          root = chrome.dom.openOrClosedShadowRoot(els[i]);
        } catch (e) {
          root = els[i].shadowRoot;
        }
        if (root) text += root.textContent.trim().length;
      }
    }
  }
  return {
    quietFor: now - last,
    mutations: g.__trawlProbe.mutations,
    ready: document.readyState,
    contentType: document.contentType,
    text,
  };
}

// Serialises the document with open and closed shadow roots and same-origin iframes.
function serializePage(maxBytes) {
  if (document.contentType === "application/pdf") return { pdf: true, url: location.href };
  const shadowOf = (el) => {
    try {
      return chrome.dom.openOrClosedShadowRoot(el) || null;
    } catch (e) {
      return el.shadowRoot || null;
    }
  };
  const escAttr = (s) => String(s).replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
  const rawText = /<(script|style|xmp|noembed|noframes|noscript)\b[^>]*>[\s\S]*?<\/\1\s*>|<iframe\b[^>]*>[\s\S]*?<\/iframe\s*>/gi;

  function serializeNode(root, depth) {
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
      if (!doc || !doc.body) return match;
      let src = "";
      try {
        src = doc.location.href;
      } catch (e) {
        src = frame.src || "";
      }
      return `<div data-trawl-frame="${escAttr(src)}">${serializeNode(doc.body, depth + 1)}</div>`;
    });
    return html;
  }

  const root = document.documentElement;
  if (!root) return { html: "", title: "", url: location.href, contentType: document.contentType, size: 0 };
  const attrs = Array.from(root.attributes)
    .map((a) => ` ${a.name}="${escAttr(a.value)}"`)
    .join("");
  const doctype = document.doctype ? `<!DOCTYPE ${document.doctype.name}>` : "<!DOCTYPE html>";
  const html = `${doctype}<html${attrs}>${serializeNode(root, 0)}</html>`;
  const out = { title: document.title, url: location.href, contentType: document.contentType, size: html.length };
  if (html.length > maxBytes) return { ...out, html: null, tooLarge: true };
  return { ...out, html };
}

// ---- service-worker side ----

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function inject(tabId, func, args = []) {
  let results;
  try {
    results = await chrome.scripting.executeScript({ target: { tabId }, func, args, world: "ISOLATED" });
  } catch (e) {
    const gone = await chrome.tabs.get(tabId).then(() => false, () => true);
    if (gone) throw new CaptureError("tab_not_found", "the tab was closed during capture");
    const why = String(e.message || e);
    if (/error page/i.test(why)) {
      throw new CaptureError("network_error", "the tab shows the browser's error page: the site did not load");
    }
    throw new CaptureError("capture_failed", `cannot read the tab: ${why}`);
  }
  const first = results && results[0];
  if (!first) throw new CaptureError("capture_failed", "the tab returned nothing");
  return first.result;
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

// Waits for the tab to finish loading. A tab we just created starts as about:blank, which can already be
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
    if (tab.status === "complete" && (sawLoading || real)) return { loaded: true, tab };
    if (Date.now() >= deadline) return { loaded: false, tab };
    await sleep(25);
  }
}

// Polls the page every ~50 ms until it has been quiet for quietMs (by the page's clock), or the deadline.
// The first probe only installs the observer: a page that keeps changing shows it by the second.
// A quiet page with almost no text (an app shell still waiting for its data) gets up to emptyWaitMs more.
const MIN_TEXT = 200;

export async function settle(tabId, quietMs, deadline, watch, emptyWaitMs = 3000) {
  const start = Date.now();
  let polls = 0;
  for (;;) {
    watch.check();
    const p = await inject(tabId, probeSettle);
    polls += 1;
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

export async function serializeTab(tabId, maxBytes, watch) {
  watch.check();
  const out = await inject(tabId, serializePage, [maxBytes]);
  watch.check();
  if (out.pdf) return out;
  if (out.tooLarge) {
    throw new CaptureError("too_large", `the page is ${out.size} characters, over the ${maxBytes} limit`);
  }
  return out;
}

function toBase64(bytes) {
  let s = "";
  const step = 0x8000;
  for (let i = 0; i < bytes.length; i += step) s += String.fromCharCode.apply(null, bytes.subarray(i, i + step));
  return btoa(s);
}

// Fetches a URL with the user's session (cookies included); returns a PDF or HTML body.
export async function fetchWithSession(url, maxBytes, deadline) {
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), Math.max(1, deadline - Date.now()));
  let res;
  try {
    res = await fetch(url, { credentials: "include", redirect: "follow", signal: ctrl.signal });
  } catch (e) {
    clearTimeout(timer);
    if (ctrl.signal.aborted) throw new CaptureError("timeout", `fetching ${url} took too long`);
    throw new CaptureError("network_error", `cannot fetch ${url}: ${e.message || e}`);
  }
  try {
    if (!res.ok) throw new CaptureError("http_error", `HTTP ${res.status} for ${url}`);
    const len = Number(res.headers.get("content-length") || 0);
    if (len > maxBytes) throw new CaptureError("too_large", `the document is ${len} bytes, over the ${maxBytes} limit`);
    const type = (res.headers.get("content-type") || "").split(";")[0].trim().toLowerCase();
    const buf = new Uint8Array(await res.arrayBuffer());
    if (buf.length > maxBytes) throw new CaptureError("too_large", `the document is over the ${maxBytes} limit`);
    const isPdf = type === "application/pdf" || (buf[0] === 0x25 && buf[1] === 0x50 && buf[2] === 0x44 && buf[3] === 0x46);
    if (isPdf) return { kind: "pdf", contentType: "application/pdf", data_b64: toBase64(buf), finalUrl: res.url };
    if (type.includes("html") || type === "") {
      return { kind: "html", contentType: type || "text/html", html: new TextDecoder().decode(buf), finalUrl: res.url };
    }
    throw new CaptureError("unsupported_content", `the tab shows ${type}, which trawl cannot read through the browser`);
  } finally {
    clearTimeout(timer);
  }
}
