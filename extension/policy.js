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

// The one address form every decision uses (the daemon's netguard.canonical_ip; the shared table of cases is
// tests/fixtures/address_forms.json): an IPv6 address that carries an IPv4 one is that IPv4 address:
// IPv4-mapped ::ffff:a.b.c.d (however spelled: [::ffff:7f00:3], [0:0:0:0:0:ffff:127.0.0.3]), IPv4-compatible
// ::a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16 and Teredo 2001::/32 (the client's address); ::1 stays. An
// address the kernel routes to this host is the loopback address it lands on (THIS_HOST: 0.0.0.0 is 127.0.0.1,
// [::] is [::1]; netguard._THIS_HOST is the same table).
// Names lose a trailing dot; IPv4 is already dotted decimal when it comes from the URL parser.
// A Map, not an object literal: a host named "constructor" or "__proto__" must not find Object.prototype's members
// (patternMatches threw on them, and list_tabs failed whole for one such tab).
/** @type {ReadonlyMap<string, string>} the unspecified addresses, as the URL parser writes them */
const THIS_HOST = new Map([["0.0.0.0", "127.0.0.1"], ["[::]", "[::1]"]]);

export function canonicalHost(hostname) {
  const h = String(hostname || "").trim().toLowerCase().replace(/\.$/, "");
  if (!h.includes(":") && !h.startsWith("[")) return THIS_HOST.get(h) ?? h;
  const groups = parseIPv6(h.replace(/^\[/, "").replace(/\]$/, ""));
  if (!groups) return h.startsWith("[") ? h : `[${h}]`;
  const v4 = embeddedIPv4(groups);
  if (v4) return THIS_HOST.get(v4) ?? v4;
  try {
    const v6 = new URL(`http://[${groups.map((g) => g.toString(16)).join(":")}]/`).hostname; // compressed, RFC 5952
    return THIS_HOST.get(v6) ?? v6;
  } catch {
    return `[${h}]`;
  }
}

/** @param {string} text @returns {number[] | null} the eight 16-bit groups of an IPv6 address */
function parseIPv6(text) {
  let s = text.split("%")[0];
  const dotted = s.match(/^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/);
  if (dotted) {
    const o = dotted.slice(2).map(Number);
    if (o.some((x) => x > 255)) return null;
    s = `${dotted[1]}${((o[0] << 8) | o[1]).toString(16)}:${((o[2] << 8) | o[3]).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const split = (/** @type {string} */ x) => (x === "" ? [] : x.split(":"));
  const head = split(halves[0]);
  const tail = halves.length === 2 ? split(halves[1]) : [];
  const fill = 8 - head.length - tail.length;
  if (halves.length === 1 ? head.length !== 8 : fill < 1) return null;
  const all = [...head, ...Array(halves.length === 2 ? fill : 0).fill("0"), ...tail];
  if (!all.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  return all.map((g) => parseInt(g, 16));
}

/** @param {number[]} g @returns {string | null} */
function embeddedIPv4(g) {
  const v4 = (/** @type {number} */ hi, /** @type {number} */ lo) => [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
  const zero = (/** @type {number} */ a, /** @type {number} */ b) => g.slice(a, b).every((x) => x === 0);
  if (zero(0, 5) && g[5] === 0xffff) return v4(g[6], g[7]); // IPv4-mapped
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return v4(g[6], g[7]); // NAT64
  if (zero(0, 6) && (g[6] !== 0 || g[7] > 1)) return v4(g[6], g[7]); // IPv4-compatible (not :: or ::1)
  if (g[0] === 0x2002) return v4(g[1], g[2]); // 6to4
  if (g[0] === 0x2001 && g[1] === 0) return v4(g[6] ^ 0xffff, g[7] ^ 0xffff); // Teredo: the client, obfuscated
  return null;
}

// A pattern's host in the same form as a URL's: an IP literal through the URL parser (2130706435 and
// [::ffff:7f00:3] are 127.0.0.3), a name as written.
function patternHost(/** @type {string} */ name) {
  const last = name.replace(/\.$/, "").split(".").pop() || "";
  const literal = name.startsWith("[") || name.includes(":") || /^(\d+|0x[0-9a-f]*)$/.test(last);
  if (literal || /[^ -~]/.test(name)) { // an address, or an international name (punycode, as URLs have it)
    try {
      return canonicalHost(new URL(`http://${name.includes(":") && !name.startsWith("[") ? `[${name}]` : name}/`)
        .hostname);
    } catch {
      return canonicalHost(name);
    }
  }
  return canonicalHost(name);
}

// "[::1]:3000" -> ["[::1]", "3000"]; "host:8080" -> ["host", "8080"]; "::1" -> ["::1", null]
/** @param {string} p @returns {[string, string | null]} */
function splitPattern(p) {
  if (p.startsWith("[")) {
    const end = p.indexOf("]");
    const inside = end === -1 ? p.slice(1) : p.slice(1, end);
    const rest = end === -1 ? "" : p.slice(end + 1);
    return [`[${inside}]`, rest.startsWith(":") && rest.length > 1 ? rest.slice(1) : null];
  }
  if (p.split(":").length === 2) {
    const [name, port] = p.split(":");
    return [name, port];
  }
  return [p, null];
}

/**
 * Why the list entry `raw` can match no URL ("" when it can): a port that is not a number from 1 to 65535, or no
 * host. The daemon's policy.pattern_problem: the same steps.
 * @param {string} raw
 * @returns {string}
 */
export function patternProblem(raw) {
  const p = normalizePattern(raw);
  const wildcard = p.startsWith("*.");
  const [name, port] = splitPattern(wildcard ? p.slice(2) : p);
  if (!name.replace(/[[\]]/g, "")) return `"${raw}" names no host`;
  if (port !== null && !(/^[0-9]+$/.test(port) && Number(port) >= 1 && Number(port) <= 65535)) {
    return `"${raw}": the port "${port}" is not a number from 1 to 65535`;
  }
  return "";
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
  const host = canonicalHost(u.hostname);
  // An entry's port is a number compared with the URL's port, its scheme's default filled in (the daemon's
  // policy.pattern_matches: "bank.com:443" names https://bank.com/, "localhost:08080" port 8080).
  const port = u.port ? Number(u.port) : ["https:", "wss:"].includes(u.protocol) ? 443 : 80;
  const wildcard = p.startsWith("*.");
  const [raw, want] = splitPattern(wildcard ? p.slice(2) : p);
  const name = patternHost(raw);
  if (want !== null && !(/^[0-9]+$/.test(want) && Number(want) === port)) return false;
  if (wildcard) return host.endsWith("." + name);
  return host === name || (want === null && host.endsWith("." + name));
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
    // The hashes above took time: a copy stored meanwhile (the options page, another sync) is not overwritten.
    const now = await loadPolicy();
    if (!sameRules(now, ours) || now.base !== ours.base) return "resend";
    await chrome.storage.local.set({ policy: { ...theirs, base: theirHash } });
    return "taken";
  }
  return "resend";
}
