// @ts-check
// The socket to the daemon: mutual proof, application-level ping, reconnection with backoff.
//
// Handshake (daemon/trawl/browser/pairing.py has the whole design): the extension says hello with a fresh
// nonce; the daemon must prove FIRST that it holds the pairing secret (or the pairing code the user pasted),
// with an HMAC over both nonces. Only then does the extension prove itself. A peer that cannot prove itself
// (another user's program listening on the port while the daemon is down) gets no proof, no answer to any
// request, and cannot make the extension store a secret: after a pairing, the new secret is derived from the
// code and both nonces on each side, never sent. WebCrypto HMAC-SHA256 only.
//
// MV3 service workers stop after 30 s without extension events; WebSocket protocol pings do not count,
// application messages do, so the extension sends a JSON ping every limits.ping_interval_s. When the daemon
// goes away the link retries fast (backoff reconnect_min_ms .. reconnect_max_ms) for
// limits.fast_reconnect_window_s, then leaves it to the 30-second chrome.alarms alarm, which also restarts
// the link after the worker itself was stopped.

import { validate } from "./protocol.js";

const enc = new TextEncoder();
const HEX64 = /^[0-9a-f]{64}$/;

// ---------------------------------------------------------------- the shared computations (see pairing.py)
export function toHex(buf) {
  return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");
}

export function fromHex(s) {
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function isHex64(s) {
  return typeof s === "string" && HEX64.test(s);
}

export function newNonce() {
  const b = new Uint8Array(32);
  crypto.getRandomValues(b);
  return toHex(b);
}

// The code as both sides key it: upper case, without spaces, dashes or the "trawl" prefix.
export function normalizeCode(code) {
  const c = String(code || "").replace(/[\s-]+/g, "").toUpperCase();
  return c.startsWith("TRAWL") ? c.slice(5) : c;
}

function transcript(version, label, mode, ne, nd) {
  return enc.encode(`trawl-link/${version}\n${label}\n${mode}\n${ne}\n${nd}`);
}

async function hmacKey(raw) {
  return crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}

export function codeKey(code) {
  return enc.encode(normalizeCode(code));
}

export function secretKey(secret) {
  return fromHex(secret);
}

export async function mac(raw, version, label, mode, ne, nd) {
  const key = await hmacKey(raw);
  return toHex(await crypto.subtle.sign("HMAC", key, transcript(version, label, mode, ne, nd)));
}

// Constant-time check (WebCrypto's verify) of the peer's proof.
export async function proofMatches(raw, proof, version, label, mode, ne, nd) {
  if (!isHex64(proof)) return false;
  const key = await hmacKey(raw);
  return crypto.subtle.verify("HMAC", key, fromHex(proof), transcript(version, label, mode, ne, nd));
}

export async function deriveSecret(code, version, ne, nd) {
  return mac(codeKey(code), version, "new-secret", "pair", ne, nd);
}

export async function keyId(secret) {
  const key = await hmacKey(secretKey(secret));
  return toHex(await crypto.subtle.sign("HMAC", key, enc.encode("trawl-link key-id"))).slice(0, 16);
}

// ---------------------------------------------------------------- the link
export class Link {
  // loadProto: async () => protocol.json; credentials: async () => ({secret, pairCode});
  // info: () => ({extension_version, browser}); onPaired: async (secret) => void, resolves once stored;
  // onConnected: async () => void; onRequest: async (msg) => reply; onStatus: (status) => void.
  constructor({ loadProto, credentials, info, onPaired, onConnected, onRequest, onStatus }) {
    this.loadProto = loadProto;
    this.credentials = credentials;
    this.info = info;
    this.onPaired = onPaired;
    this.onConnected = onConnected;
    this.onRequest = onRequest;
    this.onStatus = onStatus;
    this.proto = null;
    this.ws = null;
    this.status = { state: "disconnected", detail: "", since: Date.now() };
    this.attempt = 0;
    /** @type {any} timer ids, or null when none runs */
    this.retryTimer = null;
    /** @type {any} */
    this.pingTimer = null;
    /** @type {any} */
    this.pongTimer = null;
    this.lostAt = Date.now();
    this.nextId = 1;
    this.url = null;
  }

  setStatus(state, detail = "") {
    this.status = { state, detail, since: Date.now(), url: this.url };
    this.onStatus(this.status);
  }

  isOpen() {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN && this.status.state === "connected";
  }

  send(msg) {
    this.sendOn(this.ws, msg);
  }

  sendOn(ws, msg) {
    if (this.proto) {
      const err = validate(this.proto, msg, "extension");
      if (err) console.error("trawl: refusing to send an invalid message:", err, msg.type);
    }
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
  }

  // Opens the socket unless one is open or opening (synchronously: two callers never open two sockets).
  // `now` resets the backoff (user action, alarm).
  connect(url, now = false) {
    this.url = url;
    if (now) {
      this.attempt = 0;
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
    }
    if (this.ws && (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING)) return;
    let ws;
    try {
      ws = new WebSocket(url);
    } catch (e) {
      this.setStatus("disconnected", `bad daemon address ${url}`);
      return;
    }
    this.ws = ws;
    this.setStatus("connecting");
    // Handshake state of this socket. phase: hello -> auth -> open (or dead).
    /** @type {{phase: string, mode: string, ne: string, nd: string, key: Uint8Array | null, code: string, version: number}} */
    const hs = { phase: "hello", mode: "none", ne: "", nd: "", key: null, code: "", version: 0 };
    let chain = Promise.resolve();

    const current = () => this.ws === ws; // a socket replaced meanwhile (re-pairing) changes nothing
    const untrusted = (why) => {
      hs.phase = "dead";
      console.warn("trawl: the peer on the daemon's port is not trusted:", why);
      if (current()) this.setStatus("untrusted", why);
      ws.close(4003, "the peer did not prove it is the trawl daemon");
    };

    ws.onopen = () => {
      chain = chain.then(async () => {
        const proto = await this.loadProto();
        this.proto = proto;
        const cred = await this.credentials();
        hs.version = proto.version;
        hs.ne = newNonce();
        const hello = { type: "hello", protocol: proto.version, ...this.info(), nonce: hs.ne };
        if (cred.pairCode && normalizeCode(cred.pairCode)) {
          hs.mode = "pair";
          hs.code = cred.pairCode;
          hs.key = codeKey(cred.pairCode);
        } else if (isHex64(cred.secret)) {
          hs.mode = "secret";
          hs.key = secretKey(cred.secret);
          hello.key_id = await keyId(cred.secret);
        }
        hello.mode = hs.mode;
        this.sendOn(ws, hello);
      });
    };

    // Handshake frames are handled one at a time, in order; once open, requests run concurrently.
    const step = async (msg) => {
      if (hs.phase === "open") {
        this.dispatch(ws, msg);
        return;
      }
      if (hs.phase === "dead") return;
      if (!current()) {
        hs.phase = "dead";
        ws.close(1000, "replaced");
        return;
      }
      if (msg.type === "refused") {
        // Not authenticated: it changes what the popup shows, never what is stored.
        hs.phase = "dead";
        this.setStatus("refused", `${msg.code}: ${msg.message}`);
        return;
      }
      if (hs.phase === "hello" && msg.type === "challenge") {
        if (!hs.key || msg.protocol !== hs.version || !isHex64(msg.nonce)) {
          untrusted("the peer sent a challenge this extension cannot check");
          return;
        }
        const ok = await proofMatches(hs.key, msg.proof, hs.version, "daemon", hs.mode, hs.ne, msg.nonce);
        if (!ok) {
          untrusted(`something on ${this.url} did not prove it is your trawl daemon; nothing was sent to it`);
          return;
        }
        hs.nd = msg.nonce;
        hs.phase = "auth";
        this.sendOn(ws, { type: "auth", proof: await mac(hs.key, hs.version, "extension", hs.mode, hs.ne, hs.nd) });
        return;
      }
      if (hs.phase === "auth" && msg.type === "welcome") {
        if (hs.mode === "pair") {
          // The daemon proved it knows the code: the secret both sides derive replaces the stored one.
          const secret = await deriveSecret(hs.code, hs.version, hs.ne, hs.nd);
          await this.onPaired(secret, hs.code);
          const proof = await mac(secretKey(secret), hs.version, "stored", hs.mode, hs.ne, hs.nd);
          this.sendOn(ws, { type: "paired", proof });
        }
        hs.phase = "open";
        this.attempt = 0;
        this.setStatus("connected", `protocol ${msg.protocol}, daemon ${msg.daemon_version}`);
        this.startPing();
        await this.onConnected();
        return;
      }
      untrusted(`the peer sent ${msg.type} before proving it is the trawl daemon`);
    };

    ws.onmessage = (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch (e) {
        console.error("trawl: daemon sent invalid JSON");
        return;
      }
      const err = validate(this.proto || { messages: {} }, msg, "daemon");
      if (err) {
        console.error("trawl: invalid message from the daemon:", err);
        if (hs.phase === "open" && msg && Number.isInteger(msg.id)) {
          this.sendOn(ws, { type: "error", id: msg.id, code: "invalid_request", message: err });
        } else if (hs.phase !== "open") {
          untrusted(`the peer sent an invalid message before proving it is the trawl daemon (${err})`);
        }
        return;
      }
      if (hs.phase === "open") this.dispatch(ws, msg);
      else chain = chain.then(() => step(msg)).catch((e) => untrusted(`handshake failed: ${e.message || e}`));
    };

    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.stopPing();
      if (this.status.state === "connected") this.lostAt = Date.now();
      if (this.status.state !== "refused" && this.status.state !== "untrusted") {
        const opened = hs.phase === "open";
        this.setStatus("disconnected", ev.reason || (opened ? "the daemon closed the link" : "daemon not reachable"));
      }
      this.scheduleRetry();
    };
    ws.onerror = () => {}; // onclose follows
  }

  async dispatch(ws, msg) {
    if (msg.type === "pong") {
      clearTimeout(this.pongTimer);
      return;
    }
    const reply = await this.onRequest(msg);
    if (reply) this.sendOn(ws, reply);
  }

  close() {
    if (this.ws) this.ws.close(1000, "closed by the extension");
  }

  startPing() {
    this.stopPing();
    const every = this.proto.limits.ping_interval_s * 1000;
    this.pingTimer = setInterval(() => {
      this.send({ type: "ping", id: this.nextId++ });
      clearTimeout(this.pongTimer);
      this.pongTimer = setTimeout(() => {
        // No pong: a zombie socket. Drop it; onclose reconnects.
        if (this.ws) this.ws.close(4000, "no pong from the daemon");
      }, this.proto.limits.pong_timeout_s * 1000);
    }, every);
  }

  stopPing() {
    clearInterval(this.pingTimer);
    clearTimeout(this.pongTimer);
    this.pingTimer = null;
  }

  scheduleRetry() {
    clearTimeout(this.retryTimer);
    if (!this.proto) return; // the alarm takes over
    const lim = this.proto.limits;
    if (this.status.state === "refused") return; // wait for the user (pairing) or the alarm
    if (Date.now() - this.lostAt > lim.fast_reconnect_window_s * 1000) return; // the alarm takes over
    const delay = Math.min(lim.reconnect_max_ms, lim.reconnect_min_ms * 2 ** this.attempt);
    this.attempt += 1;
    this.retryTimer = setTimeout(() => {
      // An extension API call keeps the worker alive while the fast window lasts.
      chrome.runtime.getPlatformInfo().catch(() => {});
      this.connect(this.url);
    }, delay);
  }
}
