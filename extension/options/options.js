// @ts-check
// The options page: the site policy (allow and deny lists, default mode) and the daemon port.

import { loadLabels } from "../labels.js";
import { loadPolicy, patternProblem, sameRules, savePolicy } from "../policy.js";

/**
 * An element of options.html by id (every id used here is in the page).
 * @param {string} id
 * @returns {HTMLInputElement}
 */
const $ = (id) => /** @type {HTMLInputElement} */ (document.getElementById(id));
const lines = (text) => text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);

// The copy this page shows (with its base): an edit descends from it (policy.js savePolicy).
/** @type {any} */
let loaded = null;

async function load() {
  // Each mode's words from labels.json (the status page shows the same ones).
  const labels = await loadLabels();
  for (const radio of /** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll('input[name="mode"]'))) {
    const label = radio.parentElement && radio.parentElement.querySelector("[data-mode-label]");
    if (label) label.textContent = labels.policy_mode[radio.value] || radio.value;
  }
  const policy = await loadPolicy();
  loaded = policy;
  // What the user typed before the stored copy arrived stays (a slow load must not undo an edit in progress).
  if (!dirty) {
    for (const radio of /** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll('input[name="mode"]'))) radio.checked = radio.value === policy.mode;
    $("deny").value = policy.deny.join("\n");
    $("allow").value = policy.allow.join("\n");
  }
  // The port the extension really uses (a stored choice, else the unpacked copy's config.json, else 8765).
  const status = /** @type {{port?: number}} */ (await chrome.runtime.sendMessage({ cmd: "status" }));
  const { port } = /** @type {{port?: number}} */ (await chrome.storage.local.get("port"));
  const inUse = Number(port) || Number(status && status.port) || 8765;
  if (!portTouched) $("port").value = String(inUse);
  const origin = port ? "set here" : inUse === 8765 ? "the default" : "from this copy's config.json";
  $("port-note").textContent = `in use: ${inUse} (${origin})` +
    "; set it to the daemon's TRAWL_PORT if you changed that";
  const { policy_notice: notice } = /** @type {{policy_notice?: {t: number, what: string}}} */ (
    await chrome.storage.local.get("policy_notice"));
  if (notice && Date.now() - notice.t < 7 * 24 * 3600 * 1000) {
    $("merged").textContent = `${new Date(notice.t).toLocaleString()}: ${notice.what}`;
  }
}

$("save").addEventListener("click", async () => {
  const mode = /** @type {HTMLInputElement | null} */ (document.querySelector('input[name="mode"]:checked'))?.value || "allow_all_except_denied";
  // Each part is saved only when the user changed it: a port change leaves the policy alone (it must not offer
  // this page's copy over a daemon file edited meanwhile), and saving the policy alone must not pin the port,
  // nor reconnect the link. The port field shows the port in use; only a port the user typed is stored.
  // The form is read before anything is awaited: the page's own load may fill it meanwhile.
  const edit = { mode, deny: lines($("deny").value), allow: lines($("allow").value) };
  const shown = loaded || (await loadPolicy()); // saved before the page finished loading: it showed the stored copy
  const saved = await savePolicy(edit, shown);
  loaded = saved;
  const port = Number($("port").value);
  if (portTouched && port >= 1 && port <= 65535) await chrome.storage.local.set({ port });
  else if (portTouched) await chrome.storage.local.remove("port");
  portTouched = false;
  $("deny").value = saved.deny.join("\n");
  $("allow").value = saved.allow.join("\n");
  // An entry that can match nothing is kept (it is the user's) but named: a deny entry that denies nothing, silently,
  // is worse than none.
  const problems = [...saved.deny, ...saved.allow].map(patternProblem).filter(Boolean);
  $("saved").textContent = problems.length ? `Saved. These entries match nothing: ${problems.join("; ")}` : "Saved.";
  if (!problems.length) setTimeout(() => ($("saved").textContent = ""), 2000);
});

let portTouched = false;
$("port").addEventListener("input", () => (portTouched = true));

// The daemon may send a newer copy of the policy (its file was edited): show it unless the user is typing.
let dirty = false;
for (const id of ["deny", "allow"]) $(id).addEventListener("input", () => (dirty = true));
for (const radio of document.querySelectorAll('input[name="mode"]')) radio.addEventListener("change", () => (dirty = true));
$("save").addEventListener("click", () => (dirty = false));
chrome.storage.onChanged.addListener((changes, area) => {
  if (area === "local" && (changes.policy || changes.policy_notice) && !dirty) {
    load();
    const { oldValue, newValue } = changes.policy || {};
    if (newValue && !(oldValue && sameRules(oldValue, newValue))) $("synced").textContent = "Updated from the daemon's copy.";
  }
});

load();
