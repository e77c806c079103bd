// Site policy: which sites agents may read through the user's browser session.
//
// Default (documented in options and the README): every http(s) site is allowed except the deny list,
// which starts with sign-in, mail and password-manager sites. The user can switch to
// "deny_all_except_allowed" and list the sites agents may read. The deny list always wins.
// A pattern is a host name ("example.com" also matches its subdomains), "*.example.com" (subdomains only),
// or a host with a port ("127.0.0.1:8080"). Pages that are not http(s) are never read.

export const DEFAULT_POLICY = Object.freeze({
  mode: "allow_all_except_denied",
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
  const host = u.hostname.toLowerCase();
  if (p.includes(":") && !p.startsWith("[")) {
    return p === u.host.toLowerCase();
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

export async function loadPolicy() {
  const { policy } = await chrome.storage.local.get("policy");
  if (!policy || typeof policy !== "object") return { ...DEFAULT_POLICY, deny: [...DEFAULT_POLICY.deny] };
  return {
    mode: policy.mode === "deny_all_except_allowed" ? "deny_all_except_allowed" : "allow_all_except_denied",
    allow: Array.isArray(policy.allow) ? policy.allow.map(normalizePattern).filter(Boolean) : [],
    deny: Array.isArray(policy.deny) ? policy.deny.map(normalizePattern).filter(Boolean) : [],
  };
}

export async function savePolicy(policy) {
  const clean = {
    mode: policy.mode === "deny_all_except_allowed" ? "deny_all_except_allowed" : "allow_all_except_denied",
    allow: (policy.allow || []).map(normalizePattern).filter(Boolean),
    deny: (policy.deny || []).map(normalizePattern).filter(Boolean),
  };
  await chrome.storage.local.set({ policy: clean });
  return clean;
}
