// @ts-check
// The popup: link and pairing state, recent reads, the pause switch.

import { loadLabels } from "../labels.js";

/**
 * An element of popup.html by id (every id used here is in the page; inputs are the only ones read).
 * @param {string} id
 * @returns {HTMLInputElement}
 */
const $ = (id) => /** @type {HTMLInputElement} */ (document.getElementById(id));

function send(cmd, extra = {}) {
  return chrome.runtime.sendMessage({ cmd, ...extra });
}

// The words for trawl's modes (labels.json, the daemon's too); filled in before the first render.
/** @type {{policy_mode: Record<string, string>, pause: {switch: string, state: string}}} */
let labels = { policy_mode: {}, pause: { switch: "Pause", state: "Paused" } };

function render(s) {
  const link = s.link || { state: "disconnected", detail: "" };
  const el = $("link");
  el.className = `state ${link.state}`;
  const text = {
    connected: "Connected to the trawl daemon",
    connecting: "Connecting to the trawl daemon…",
    refused: "The daemon refused this browser",
    untrusted: "Something on the daemon's port is not your trawl daemon; nothing was sent to it",
    disconnected: "Not connected to the trawl daemon",
  };
  el.textContent = text[link.state] || link.state;
  $("paused-label").textContent = labels.pause.switch;
  $("detail").textContent = `${link.detail || ""} ${s.paused ? labels.pause.state : ""}`.trim();
  $("todo").textContent = nextStep(link.state, s);
  $("todo").hidden = !$("todo").textContent;
  $("pair-box").hidden = link.state === "connected" && s.paired;
  $("paused").checked = Boolean(s.paused);
  // What agents asked for, apart from the daemon's own background captures of open tabs (read ahead).
  const entries = s.recent || [];
  showReads($("recent"), entries.filter((r) => !r.preread), "None yet.");
  showReads($("recent-ahead"), entries.filter((r) => r.preread), "None.");
  // Open tabs the daemon holds read ahead (in its memory only): title, host, chunks, embedded or not.
  const held = $("indexed");
  held.textContent = "";
  for (const t of s.indexed && s.indexed.length ? s.indexed : [null]) {
    const li = document.createElement("li");
    if (t === null) li.className = "empty";
    li.textContent = t === null ? "None." : `${t.title || t.host} (${t.host}) · ${t.chunks} chunks · ` +
      (t.embedded >= t.chunks ? "embedded" : `${t.embedded}/${t.chunks} embedded`);
    held.append(li);
  }
  document.body.dataset.state = link.state;
  document.body.dataset.paired = String(Boolean(s.paired));
}

function showReads(list, entries, none) {
  list.textContent = "";
  if (!entries.length) {
    const li = document.createElement("li");
    li.className = "empty";
    li.textContent = none;
    list.append(li);
  }
  for (const r of entries) {
    // Two lines per entry: what happened (wraps between words), then the URL on one line, cut with an ellipsis
    // (the whole URL in the tooltip) instead of broken mid-word.
    const li = document.createElement("li");
    const head = document.createElement("span");
    head.className = "what";
    const when = new Date(r.t).toLocaleTimeString();
    head.textContent = r.notice // something the daemon wants you to see, e.g. an agent's URL held back (exit guard)
      ? `${when} · ${r.code === "exit_refused" ? "refused an agent's URL" : "let an agent's URL through"}`
      : `${when} · ${r.ok ? "read" : `refused (${r.code})`} · ${r.ms} ms`;
    const url = document.createElement("span");
    url.className = "url";
    url.textContent = r.what || "";
    url.title = r.what || "";
    li.append(head, url);
    if (!r.ok) li.className = "fail";
    list.append(li);
  }
}

/**
 * What the user can do now, given the link's state: the port tried and the command that helps.
 * @param {string} state
 * @param {{port?: number, paired?: boolean}} s
 */
function nextStep(state, s) {
  const where = `127.0.0.1:${s.port}`;
  if (state === "disconnected" || state === "connecting") {
    return `Tried ${where}. Start the daemon with \`trawl daemon\` (any trawl-mcp also starts it). If it runs on ` +
      "another port (TRAWL_PORT), set that port under Settings.";
  }
  if (state === "refused") {
    return `The daemon at ${where} did not accept this browser's pairing. Run \`trawl pair\` in a terminal and ` +
      "paste the new code below (codes work once, for 10 minutes).";
  }
  if (state === "untrusted") {
    return `Something else listens on ${where}. Stop it, or run the daemon on another port and set that port ` +
      "under Settings.";
  }
  if (state === "connected" && !s.paired) return "Run `trawl pair` in a terminal and paste the code below.";
  return "";
}

async function refresh() {
  render(await send("status"));
}

$("pair-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  render(await send("pair", { code: $("pair-code").value }));
  $("pair-code").value = "";
  setTimeout(refresh, 600);
});
$("paused").addEventListener("change", async (ev) => render(await send("pause", { paused: /** @type {HTMLInputElement} */ (ev.target).checked })));
$("reconnect").addEventListener("click", async (ev) => {
  ev.preventDefault();
  render(await send("reconnect"));
});
$("unpair").addEventListener("click", async (ev) => {
  ev.preventDefault();
  render(await send("unpair"));
});
$("options").addEventListener("click", (ev) => {
  ev.preventDefault();
  chrome.runtime.openOptionsPage();
});

loadLabels().then((l) => { labels = l; }).catch(() => {}).finally(refresh);
setInterval(refresh, 1000);
