// @ts-check
// Site policy: which sites agents may read through the user's browser session.
//
// Default (documented in options and the README): every http(s) site is allowed except the deny list,
// which starts with sign-in, mail and password-manager sites. The user can switch to
// "deny_all_except_allowed" and list the sites agents may read. The deny list always wins.
// A pattern is a host name ("example.com" also matches its subdomains), "*.example.com" (subdomains only),
// or a host with a port ("127.0.0.1:8080"). Pages that are not http(s) are never read.
//
// The daemon enforces the same policy for every source (daemon/trawl/policy.py; the contract test runs both
// on the same cases) and keeps it in a file (<state dir>/site-policy.json). The two copies stay in step over
// the link by descent, never by clocks (daemon/trawl/browser/policy_merge.py has the table): a copy is named by
// the hash of its rules (rulesHash), and the stored copy carries `base`, the hash of the version it was edited
// from (the last one both sides held). The daemon takes an edit that descends from its file, keeps its file
// against a copy that is merely behind, and merges two copies edited apart (deny wins); this side adopts the
// daemon's copy only when it has no edits of its own or the daemon has seen them (acceptPolicy). `revision` is
// the time of the last edit, shown to the user, not used to decide.

export const DEFAULT_POLICY = Object.freeze({
  mode: "allow_all_except_denied",
  revision: 0,
  allow: [],
  deny: [
    "accounts.google.com",
    "mail.google.com",
    "login.microsoftonline.com",
    "login.live.com",
    "outlook.live.com",
    "1password.com",
    "bitwarden.com",
    "lastpass.com",
  ],
});

export function normalizePattern(raw) {
  let p = String(raw || "").trim().toLowerCase();
  if (!p) return "";
  p = p.replace(/^[a-z][a-z0-9+.-]*:\/\//, "");
  p = p.split("/")[0];
  return p;
}

export function patternMatches(pattern, url) {
  const p = normalizePattern(pattern);
  if (!p) return false;
  let u;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  // A trailing dot names the same site ("mail.google.com." is mail.google.com).
  const host = u.hostname.toLowerCase().replace(/\.$/, "");
  if (p.includes(":") && !p.startsWith("[")) {
    return p === u.host.toLowerCase().replace(/\.(?=:\d+$|$)/, "");
  }
  if (p.startsWith("*.")) {
    const base = p.slice(2);
    return host.endsWith("." + base);
  }
  return host === p || host.endsWith("." + p);
}

// Returns {allowed: bool, reason: str}.
export function decide(policy, url) {
  let u;
  try {
    u = new URL(url);
  } catch {
    return { allowed: false, reason: "not a valid URL" };
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    return { allowed: false, reason: `${u.protocol} pages are never read` };
  }
  const deny = (policy.deny || []).find((p) => patternMatches(p, url));
  if (deny) return { allowed: false, reason: `${u.host} is on your deny list (${deny})` };
  if (policy.mode === "deny_all_except_allowed") {
    const allow = (policy.allow || []).find((p) => patternMatches(p, url));
    if (!allow) return { allowed: false, reason: `${u.host} is not on your allow list` };
  }
  return { allowed: true, reason: "" };
}

function unique(list) {
  return [...new Set((Array.isArray(list) ? list : []).map(normalizePattern).filter(Boolean))];
}

function revisionOf(value, fallback) {
  return Number.isInteger(value) && value >= 0 ? value : fallback;
}

export function cleanPolicy(policy, revision) {
  return {
    mode: policy.mode === "deny_all_except_allowed" ? "deny_all_except_allowed" : "allow_all_except_denied",
    allow: unique(policy.allow),
    deny: unique(policy.deny),
    revision,
  };
}

/**
 * The name of a version: sha256 of [mode, allow, deny] as compact JSON, 16 hex digits (policy_merge.rules_hash).
 * @param {{mode: string, allow: string[], deny: string[]}} policy
 */
export async function rulesHash(policy) {
  const blob = new TextEncoder().encode(JSON.stringify([policy.mode, policy.allow, policy.deny]));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", blob));
  return [...digest.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export function sameRules(a, b) {
  return a.mode === b.mode && JSON.stringify(a.allow) === JSON.stringify(b.allow) &&
    JSON.stringify(a.deny) === JSON.stringify(b.deny);
}

// The stored copy with its `base`. Never edited: the default, synced with itself. A copy saved before bases
// existed has no known base (""): the daemon merges it with its file rather than replacing the file with it.
export async function loadPolicy() {
  const { policy } = /** @type {{policy?: any}} */ (await chrome.storage.local.get("policy"));
  if (!policy || typeof policy !== "object") {
    const fresh = { ...DEFAULT_POLICY, deny: [...DEFAULT_POLICY.deny] };
    return { ...fresh, base: await rulesHash(fresh) };
  }
  const clean = cleanPolicy(policy, revisionOf(policy.revision, 1));
  return { ...clean, base: typeof policy.base === "string" ? policy.base : "" };
}

/**
 * A user's edit of `loaded` (the copy the options page showed). Nothing is stored when the rules did not change
 * (saving the port alone must not touch the policy); returns the copy in force. The edit descends from what the
 * page showed: when the stored copy changed under the page (the daemon sent its file), the edit keeps the
 * page's base, so the daemon merges the two instead of taking one over the other.
 * @param {{mode: string, allow: string[], deny: string[]}} edit
 * @param {{mode: string, allow: string[], deny: string[], base: string}} loaded
 */
export async function savePolicy(edit, loaded) {
  const stored = await loadPolicy();
  const clean = cleanPolicy(edit, Date.now());
  if (sameRules(clean, loaded) || sameRules(clean, stored)) return stored;
  const base = sameRules(stored, loaded) ? stored.base : loaded.base;
  const saved = { ...clean, base };
  await chrome.storage.local.set({ policy: saved });
  return saved;
}

// The message that offers this browser's copy to the daemon.
export async function policyMessage() {
  const p = await loadPolicy();
  return { type: "policy", mode: p.mode, allow: p.allow, deny: p.deny, revision: p.revision, base: p.base };
}

/**
 * The daemon's copy arrived (its `base`: the hash of our copy it has seen). Returns "taken" (stored),
 * "synced" (same rules: our copy is now known to both), or "resend": we hold edits the daemon has not seen,
 * so our copy goes to it again and the daemon merges (nothing the user typed here is dropped).
 */
export async function acceptPolicy(msg) {
  const ours = await loadPolicy();
  const theirs = cleanPolicy(msg, revisionOf(msg.revision, 0));
  const theirHash = await rulesHash(theirs);
  const ourHash = await rulesHash(ours);
  if (theirHash === ourHash) {
    if (ours.base !== ourHash) await chrome.storage.local.set({ policy: { ...ours, base: ourHash } });
    return "synced";
  }
  if (ours.base === ourHash || msg.base === ourHash) {
    await chrome.storage.local.set({ policy: { ...theirs, base: theirHash } });
    return "taken";
  }
  return "resend";
}
