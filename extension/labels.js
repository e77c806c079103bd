// @ts-check
// What the user reads for trawl's modes, loaded from labels.json (the same file the daemon reads: trawl.labels).

/** @type {{policy_mode: Record<string, string>, pause: {switch: string, state: string}} | null} */
let cached = null;

export async function loadLabels() {
  if (!cached) {
    const res = await fetch(chrome.runtime.getURL("labels.json"));
    cached = await res.json();
  }
  return /** @type {{policy_mode: Record<string, string>, pause: {switch: string, state: string}}} */ (cached);
}
