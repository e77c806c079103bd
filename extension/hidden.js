// Marks text the user cannot see, so the daemon never passes it off as the page.
//
// One copy of this file serves both browsers: the extension injects it into the page's isolated world
// (chrome.scripting, files: ["hidden.js"]), and the headless source embeds the same text
// (read from the extension the package ships, daemon/trawl/extension/hidden.js) inside its capture script.
// It defines globalThis.__trawlMarkHidden(doc, opts) -> {marked, scanned, partial, undo()}.
//
// What counts as hidden is what the browser renders, not what the markup says: for every element that holds
// text (directly) the computed style and layout decide. Each hidden element gets data-trawl-hidden="<reason>":
//   display       no box at all (display:none here or above, unslotted light DOM, hidden attribute)
//   closed-details inside a <details> that is closed (not its <summary>)
//   visibility    visibility:hidden / collapse
//   opacity       opacity ~0 on the element (or an ancestor, which is marked instead)
//   zero-size     an overflow-clipping box under 2 px, or text whose rendered boxes have no area (scale(0))
//   scale-zero    a transform that collapses the element (scale(0), matrix with determinant 0)
//   clipped       clip: rect() or clip-path with no area
//   filter        a filter that leaves nothing to see (opacity(0))
//   off-screen    every rendered line lies left of or above the document (left:-9999px and friends)
//   tiny-font     font-size under 3 px
//   transparent-text / background-color  text colour transparent, or (near) equal to the background it sits on
// Reasons that hide a whole subtree mark its top element only (the subtree is skipped).
// Frame elements (iframe, frame) are judged by the same subtree tests, plus a box under 2 px or left of / above the
// document: the browser sources read a frame's document into the page, and a frame no one sees is hidden text.
// Box, visibility and style come from saved natives or the prototypes, never the element (a page can override
// HTMLIFrameElement.prototype.getBoundingClientRect and friends in its own world).
// Visible text marked aria-hidden or inert is not marked: the user sees it (the raw-HTML path judges markup).
// Left unmarked on purpose, so real pages lose nothing a reader would see: text scrolled or slid out of an
// overflow box (carousels, scroll areas), and elements that animate in (a transition or animation on opacity or
// transform: "fade in on scroll" pages keep below-the-fold text at opacity 0 until the reader scrolls there).
// Text on a backdrop that is not an ancestor (a fixed full-page layer) is not judged by colour.
// The caller serialises while the marks are on, then calls undo(): marking and unmarking happen in one
// synchronous task, so the page never paints them and its scripts see no change in the DOM afterwards.
// The walk is bounded (elements and milliseconds); a walk cut short says so (partial: true), and marks what lies
// past the cut "unchecked" (the daemon keeps that text, flagged like hidden text, and warns).
globalThis.__trawlMarkHidden = function markHidden(doc, opts) {
  const ATTR = "data-trawl-hidden";
  const o = opts || {};
  const maxElements = o.maxElements || 60000;
  const maxMs = o.maxMs || 1500;
  const shadowOf = o.shadowOf || ((el) => el.shadowRoot || null);
  const win = doc.defaultView;
  const t0 = performance.now();
  const marked = [];
  let scanned = 0;
  let partial = false;
  if (!win || !doc.documentElement) return { marked: 0, scanned: 0, partial: false, undo() {} };
  // Layout and style come from the natives the caller saved before the page's scripts ran (opts.natives: the
  // headless source runs in the page's own world), else from the prototypes, never from the element itself.
  const N = o.natives || {};
  const rectFn = N.rect || win.Element.prototype.getBoundingClientRect;
  const visibleFn = N.visible || win.Element.prototype.checkVisibility;
  const styleFn = N.style || win.getComputedStyle;
  const rangeRectsFn = N.rangeRects || win.Range.prototype.getClientRects;
  const rectOf = (el) => rectFn.call(el);
  const visibleOf = (el, opt) => visibleFn.call(el, opt);

  const SKIP = new Set([
    "script", "style", "noscript", "template", "head", "title", "meta", "link", "base", "select", "option",
    "optgroup", "datalist", "br", "wbr", "img", "video", "audio", "canvas", "iframe", "frame", "object", "embed",
  ]);
  const styles = new Map();
  const style = (el) => {
    let cs = styles.get(el);
    if (!cs) {
      cs = styleFn.call(win, el);
      styles.set(el, cs);
    }
    return cs;
  };
  const mark = (el, reason) => {
    marked.push([el, el.getAttribute(ATTR)]);
    el.setAttribute(ATTR, reason);
  };

  const root = doc.documentElement;
  const scroll = { x: win.scrollX || 0, y: win.scrollY || 0 };
  // Off-screen means left of or above the document's origin, where no scrolling reaches (left: -9999px,
  // text-indent: -9999px). Past the right or bottom edge is not judged: inner scroll areas and carousels live there.
  const beforeOrigin = (r) => r.right + scroll.x <= 0 || r.bottom + scroll.y <= 0;
  // The colour the canvas shows where no ancestor paints: white, unless a fixed or absolute layer covers the
  // viewport (a full-page backdrop that is not an ancestor of the text): then its colour, or unknown (null)
  // when it is an image or half transparent.
  let canvas = /** @type {{r: number, g: number, b: number, a: number} | null} */ ({ r: 255, g: 255, b: 255, a: 1 });
  let backdrop = false;
  const parseColor = (s) => {
    const m = /rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)(?:[\s,/]+([\d.]+%?))?\s*\)/.exec(String(s || ""));
    if (!m) return null;
    let a = m[4] === undefined ? 1 : parseFloat(m[4]);
    if (m[4] && m[4].endsWith("%")) a /= 100;
    return { r: +m[1], g: +m[2], b: +m[3], a };
  };
  try {
    const vw = win.innerWidth || 0;
    const vh = win.innerHeight || 0;
    for (const el of doc.elementsFromPoint(vw / 2, vh / 2)) {
      if (el === root || el === doc.body) continue;
      const cs = styleFn.call(win, el);
      if (cs.position !== "fixed" && cs.position !== "absolute") continue;
      const box = rectOf(el);
      if (box.width < 0.9 * vw || box.height < 0.9 * vh) continue;
      const bg = parseColor(cs.backgroundColor);
      if (cs.backgroundImage && cs.backgroundImage !== "none") canvas = null;
      else if (bg && bg.a >= 0.95) canvas = bg;
      else if (bg && bg.a > 0.05) canvas = null;
      else continue;
      backdrop = true;
      break;
    }
  } catch (e) {
    canvas = null;
  }
  const luminance = (c) => {
    const ch = (v) => {
      const x = v / 255;
      return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * ch(c.r) + 0.7152 * ch(c.g) + 0.0722 * ch(c.b);
  };
  const positioned = (cs) => cs.position === "absolute" || cs.position === "fixed" || cs.position === "sticky";

  // The colour behind el's text, or null when it cannot be known from the ancestors alone
  // (an image or gradient, a half-transparent layer, or a positioned box that may sit over something else).
  const backgroundOf = (el) => {
    for (let a = el, depth = 0; a && a.nodeType === 1 && depth < 60; depth++) {
      if (backdrop && (a === root || a === doc.body)) return canvas; // the backdrop paints over their background
      const cs = style(a);
      if (cs.backgroundImage && cs.backgroundImage !== "none") return null;
      const bg = parseColor(cs.backgroundColor);
      if (bg && bg.a >= 0.95) return bg;
      if (bg && bg.a > 0.05) return null;
      if (positioned(cs) || cs.mixBlendMode !== "normal" || (cs.filter && cs.filter !== "none")) return null;
      const parent = a.parentElement || (a.parentNode && a.parentNode.host) || null;
      if (!parent && a !== root) return null; // a detached or shadow-only chain
      a = parent;
    }
    const scheme = String(style(root).colorScheme || "");
    if (scheme.includes("dark")) return null;
    return canvas;
  };

  const collapsedTransform = (cs) => {
    const t = cs.transform;
    if (!t || t === "none") return false;
    const m = /matrix(3d)?\(([^)]*)\)/.exec(t);
    if (!m) return false;
    const v = m[2].split(",").map(parseFloat);
    if (m[1]) return Math.abs(v[0] * v[5] - v[1] * v[4]) < 1e-6; // the x/y part of a 3d matrix
    return Math.abs(v[0] * v[3] - v[1] * v[2]) < 1e-6;
  };
  const clippedAway = (cs) => {
    if ((cs.position === "absolute" || cs.position === "fixed") && cs.clip && cs.clip.startsWith("rect(")) {
      const n = cs.clip.slice(5, -1).split(/[\s,]+/).map(parseFloat);
      if (n.length === 4 && n.every((x) => !Number.isNaN(x)) && (n[1] - n[3] <= 1 || n[2] - n[0] <= 1)) return true;
    }
    const cp = cs.clipPath;
    if (!cp || cp === "none") return false;
    const inset = /^inset\(([^)]*)\)/.exec(cp);
    if (inset) {
      const parts = inset[1].split(/\s+round\s+/)[0].trim().split(/\s+/);
      const pct = parts.map((p) => (p.endsWith("%") ? parseFloat(p) : NaN));
      const [t, r = t, b = t, l = r] = pct;
      return (t + b >= 100) || (l + r >= 100);
    }
    if (/^circle\(\s*0(px|%)?[\s)]/.test(cp) || /^ellipse\(\s*0(px|%)?\s+/.test(cp)) return true;
    return false;
  };
  // filter: opacity(x) (several multiply) under 0.05: nothing painted.
  const filterHides = (cs) => {
    const f = String(cs.filter || "");
    if (!f || f === "none" || !f.includes("opacity(")) return false;
    let alpha = 1;
    for (const m of f.matchAll(/opacity\(\s*([\d.]+)(%?)\s*\)/g)) alpha *= parseFloat(m[1]) / (m[2] ? 100 : 1);
    return alpha < 0.05;
  };
  const clipsOverflow = (cs) => cs.overflowX !== "visible" || cs.overflowY !== "visible";
  // Moving in: a transition or an animation on this property (or on all), so the hidden state is a start state.
  const animates = (cs, prop) => {
    if (cs.animationName && cs.animationName !== "none") return true;
    const props = String(cs.transitionProperty || "").split(",").map((p) => p.trim());
    const times = String(cs.transitionDuration || "").split(",").map((d) => parseFloat(d) || 0);
    return props.some((p, i) => (p === prop || p === "all") && times[i % Math.max(1, times.length)] > 0);
  };

  // A reason the whole subtree of el is invisible, or "".
  const subtreeReason = (el, cs) => {
    if (cs.display === "contents") return "";
    const parent = el.parentElement;
    if (parent && parent.localName === "details" && !parent.open && el !== parent.querySelector(":scope > summary")) {
      return "closed-details";
    }
    if (!visibleOf(el)) {
      return "display";
    }
    if (parseFloat(cs.opacity) < 0.05 && !animates(cs, "opacity")) return "opacity";
    if (collapsedTransform(cs) && !animates(cs, "transform")) return "scale-zero";
    if (clippedAway(cs)) return "clipped";
    if (filterHides(cs) && !animates(cs, "filter")) return "filter";
    const box = rectOf(el);
    if (clipsOverflow(cs) && (box.width < 2 || box.height < 2)) return "zero-size";
    if ((box.width > 0 || box.height > 0) && beforeOrigin(box)) {
      if (clipsOverflow(cs) || !el.firstElementChild) return "off-screen";
    }
    return "";
  };

  // A reason the frame element el shows nothing of its document, or "".
  const frameReason = (el) => {
    const cs = style(el);
    if (!visibleOf(el, { opacityProperty: true, visibilityProperty: true })) return "display";
    const why = subtreeReason(el, cs);
    if (why) return why;
    const box = rectOf(el);
    if (box.width < 2 || box.height < 2) return "zero-size";
    return beforeOrigin(box) ? "off-screen" : "";
  };

  const ownText = (el) => {
    const nodes = [];
    for (let n = el.firstChild; n; n = n.nextSibling) {
      if (n.nodeType === 3 && /\S/.test(n.nodeValue)) nodes.push(n);
    }
    return nodes;
  };

  // A reason el's own text is invisible, or "".
  const textReason = (el, cs, texts) => {
    if (cs.visibility !== "visible") return "visibility";
    if (parseFloat(cs.fontSize) < 3) return "tiny-font";
    const color = parseColor(cs.color);
    const fill = parseColor(cs.webkitTextFillColor);
    const stroke = parseFloat(cs.webkitTextStrokeWidth) > 0;
    const shadow = cs.textShadow && cs.textShadow !== "none";
    const ink = fill && fill.a < 0.05 ? fill : color;
    // Gradient or image text (background-clip: text) paints with the background, not the colour.
    let clipText = false;
    for (let a = el, i = 0; a && a.nodeType === 1 && i < 4; i++, a = a.parentElement) {
      const c = style(a);
      if (c.backgroundClip === "text" || c.webkitBackgroundClip === "text") clipText = true;
    }
    if (ink && !stroke && !shadow && !clipText) {
      if (ink.a < 0.05) return "transparent-text";
      const bg = backgroundOf(el);
      if (bg) {
        const l1 = luminance(ink);
        const l2 = luminance(bg);
        const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
        const dist = Math.hypot(ink.r - bg.r, ink.g - bg.g, ink.b - bg.b);
        if (ratio < 1.2 && dist < 48) return "background-color";
      }
    }
    const rects = [];
    const range = doc.createRange();
    for (const t of texts) {
      range.selectNodeContents(t);
      for (const r of rangeRectsFn.call(range)) {
        rects.push(r);
        if (rects.length > 40) break;
      }
      if (rects.length > 40) break;
    }
    if (!rects.length) return "";
    if (rects.every((r) => r.width < 1 || r.height < 1)) return "zero-size";
    if (rects.every(beforeOrigin)) return "off-screen";
    return "";
  };

  // Past the budget nothing is judged, but nothing is passed off as seen either: every element after the cut is
  // marked "unchecked" (cheap: no style, no layout; the daemon keeps that text, flagged like hidden text), and the
  // caller says the scan was partial. A page cannot push its hidden text past the cut and have it read as visible.
  // Marks stay few: siblings one by one, or their parent when more than MAX_SIBLINGS remain.
  const MAX_SIBLINGS = 200;
  let ticks = 0;
  const uncheckedFrom = (parent, first) => {
    let n = 0;
    for (let c = first; c && n <= MAX_SIBLINGS; c = c.nextElementSibling) n += 1;
    const whole = parent.nodeType === 1 && parent.localName !== "html" && parent.localName !== "body";
    if (n > MAX_SIBLINGS && whole && !parent.hasAttribute(ATTR)) {
      mark(parent, "unchecked");
      return;
    }
    for (let c = first; c; c = c.nextElementSibling) {
      if (!SKIP.has(c.localName) && !c.hasAttribute(ATTR)) mark(c, "unchecked");
    }
  };
  const visitAll = (parent, first) => {
    for (let c = first; c; c = c.nextElementSibling) {
      if (!partial && (++ticks & 255) === 0 && (scanned > maxElements || performance.now() - t0 > maxMs)) {
        partial = true;
      }
      if (partial) {
        uncheckedFrom(parent, c);
        return;
      }
      visit(c);
    }
  };

  const visit = (el) => {
    scanned += 1;
    const name = el.localName;
    if (name === "iframe" || name === "frame") {
      const why = frameReason(el);
      if (why) mark(el, why);
      return;
    }
    if (SKIP.has(name)) return;
    if (name !== "html" && name !== "body") {
      const cs = style(el);
      const reason = subtreeReason(el, cs);
      if (reason) {
        mark(el, reason);
        return;
      }
      const texts = ownText(el);
      if (name === "details" && !el.open && texts.length) {
        mark(el, "closed-details"); // loose text in a closed <details> has no element of its own to mark
        return;
      }
      if (texts.length) {
        const why = textReason(el, cs, texts);
        if (why) mark(el, why);
      }
    } else if (name === "body") {
      const texts = ownText(el);
      if (texts.length) {
        const why = textReason(el, style(el), texts);
        if (why) mark(el, why);
      }
    }
    const sr = shadowOf(el);
    if (sr) visitAll(sr, sr.firstElementChild);
    visitAll(el, el.firstElementChild);
  };

  try {
    visit(root);
  } catch (e) {
    partial = true; // the caller reports it: the daemon warns that the page was not fully checked
  }
  return {
    marked: marked.length,
    scanned,
    partial,
    undo() {
      for (let i = marked.length - 1; i >= 0; i--) {
        const [el, prev] = marked[i];
        if (prev === null) el.removeAttribute(ATTR);
        else el.setAttribute(ATTR, prev);
      }
    },
  };
};
