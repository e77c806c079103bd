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
// the link: each carries `revision`, the time of its last edit in ms (0: the default, never edited); the
// extension sends its copy after it connects and whenever it is saved, the daemon sends its copy when the
// file is newer or changes; the newer revision wins on both sides (on a tie, the daemon's file).

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

export async function loadPolicy() {
  const { policy } = /** @type {{policy?: any}} */ (await chrome.storage.local.get("policy"));
  if (!policy || typeof policy !== "object") return { ...DEFAULT_POLICY, deny: [...DEFAULT_POLICY.deny] };
  // A policy saved before revisions existed was edited by the user: it beats the daemon's untouched default.
  return cleanPolicy(policy, revisionOf(policy.revision, 1));
}

// A user's edit: it gets the current time as its revision, so it wins over older copies.
export async function savePolicy(policy) {
  const clean = cleanPolicy(policy, Date.now());
  await chrome.storage.local.set({ policy: clean });
  return clean;
}

// The message that offers this browser's copy to the daemon.
export async function policyMessage() {
  const p = await loadPolicy();
  return { type: "policy", mode: p.mode, allow: p.allow, deny: p.deny, revision: p.revision };
}

function sameRules(a, b) {
  return a.mode === b.mode && JSON.stringify(a.allow) === JSON.stringify(b.allow) &&
    JSON.stringify(a.deny) === JSON.stringify(b.deny);
}

// The daemon's copy arrived: keep it when it is at least as new as ours (the file wins a tie). True if taken.
export async function acceptPolicy(msg) {
  const ours = await loadPolicy();
  const theirs = cleanPolicy(msg, revisionOf(msg.revision, 0));
  if (theirs.revision < ours.revision) return false;
  if (theirs.revision === ours.revision && sameRules(theirs, ours)) return false;
  await chrome.storage.local.set({ policy: theirs });
  return true;
}
