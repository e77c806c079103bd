// @ts-check
// The popup: link and pairing state, recent reads, the pause switch.

/**
 * An element of popup.html by id (every id used here is in the page; inputs are the only ones read).
 * @param {string} id
 * @returns {HTMLInputElement}
 */
const $ = (id) => /** @type {HTMLInputElement} */ (document.getElementById(id));

function send(cmd, extra = {}) {
  return chrome.runtime.sendMessage({ cmd, ...extra });
}

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
  let detail = link.detail || "";
  if (link.state === "disconnected") detail += ` (port ${s.port}; is \`trawl daemon\` running?)`;
  if (s.paused) detail += " Paused: every request is refused.";
  $("detail").textContent = detail.trim();
  $("pair-box").hidden = link.state === "connected" && s.paired;
  $("paused").checked = Boolean(s.paused);
  const list = $("recent");
  list.textContent = "";
  if (!s.recent || !s.recent.length) {
    const li = document.createElement("li");
    li.className = "empty";
    li.textContent = "None yet.";
    list.append(li);
  }
  for (const r of s.recent || []) {
    const li = document.createElement("li");
    const when = new Date(r.t).toLocaleTimeString();
    li.textContent = r.notice // something the daemon wants you to see, e.g. an agent's URL held back (exit guard)
      ? `${when} ${r.code === "exit_refused" ? "refused an agent's URL" : "let an agent's URL through"} ${r.what}`
      : `${when} ${r.ok ? "read" : `refused (${r.code})`} ${r.what} · ${r.ms} ms`;
    if (!r.ok) li.className = "fail";
    list.append(li);
  }
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

refresh();
setInterval(refresh, 1000);
