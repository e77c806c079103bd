// The socket to the daemon: handshake, application-level ping, reconnection with backoff.
//
// MV3 service workers stop after 30 s without extension events; WebSocket protocol pings do not count,
// application messages do, so the extension sends a JSON ping every limits.ping_interval_s. When the daemon
// goes away the link retries fast (backoff reconnect_min_ms .. reconnect_max_ms) for
// limits.fast_reconnect_window_s, then leaves it to the 30-second chrome.alarms alarm, which also restarts
// the link after the worker itself was stopped.

import { validate } from "./protocol.js";

export class Link {
  constructor({ proto, hello, onRequest, onWelcome, onStatus }) {
    this.proto = proto;
    this.hello = hello; // async () => hello message fields
    this.onRequest = onRequest; // async (msg) => reply message
    this.onWelcome = onWelcome; // async (welcome) => void
    this.onStatus = onStatus; // (status) => void
    this.ws = null;
    this.status = { state: "disconnected", detail: "", since: Date.now() };
    this.attempt = 0;
    this.retryTimer = null;
    this.pingTimer = null;
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
    const err = validate(this.proto, msg, "extension");
    if (err) console.error("trawl: refusing to send an invalid message:", err, msg.type);
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  // Opens the socket unless one is open or opening. `now` resets the backoff (user action, alarm).
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
    let welcomed = false;
    ws.onopen = async () => {
      const fields = await this.hello();
      this.send({ type: "hello", ...fields });
    };
    ws.onmessage = async (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch (e) {
        console.error("trawl: daemon sent invalid JSON");
        return;
      }
      const err = validate(this.proto, msg, "daemon");
      if (err) {
        console.error("trawl: invalid message from the daemon:", err);
        if (msg && Number.isInteger(msg.id)) {
          this.send({ type: "error", id: msg.id, code: "invalid_request", message: err });
        }
        return;
      }
      if (!welcomed) {
        if (msg.type === "welcome") {
          welcomed = true;
          this.attempt = 0;
          await this.onWelcome(msg);
          this.setStatus("connected", `protocol ${msg.protocol}, daemon ${msg.daemon_version}`);
          this.startPing();
        } else if (msg.type === "refused") {
          this.refused = msg;
          this.setStatus("refused", `${msg.code}: ${msg.message}`);
        }
        return;
      }
      if (msg.type === "pong") {
        clearTimeout(this.pongTimer);
        return;
      }
      const reply = await this.onRequest(msg);
      if (reply) this.send(reply);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.stopPing();
      if (this.status.state === "connected") this.lostAt = Date.now();
      if (this.status.state !== "refused") {
        this.setStatus("disconnected", ev.reason || (welcomed ? "the daemon closed the link" : "daemon not reachable"));
      }
      this.scheduleRetry();
    };
    ws.onerror = () => {}; // onclose follows
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
