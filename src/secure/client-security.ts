/**
 * The client's half of the secure layer (PROTOCOL §9), sans-IO: it seals what the client's
 * Endpoint sends, as HELLO (carrying the token's sealed part) until the first authentic datagram
 * from the server has told it its association id, then as SEALED; and it opens what the server
 * sends. A client talks to one server, so it keeps one key pair, one replay window and one
 * packet counter.
 */
import { TAG_BYTES, type PacketAead } from "./aead.js";
import { wasmAead } from "./wasm-aead.js";
import { host } from "../api/host.js";
import { CLIENT_NONCE_BYTES, clientToServerKey, serverToClientKey } from "./keys.js";
import { ReplayWindow } from "./replay-window.js";
import type { ConnectToken } from "./token.js";
import {
  AD_BYTES,
  HELLO,
  HELLO_COOKIE,
  HELLO_TAIL_BYTES,
  MAX_SECURE_DATAGRAM,
  readU32,
  readU64,
  RETRY,
  RETRY_BYTES,
  RETRY_COOKIE_BYTES,
  RETRY_ECHO_BYTES,
  SEALED,
  SEALED_HEADER_BYTES,
  unsealPayload,
  writeAd,
  writeU64,
} from "./wire.js";

export interface ClientSecurityCounters {
  /** Too short, or not a SEALED datagram. */
  malformed: number;
  /** Tag did not match (forged, corrupted, not from the server). */
  badTag: number;
  /** Packet numbers already accepted, or more than the window old. */
  replayed: number;
  /** Sends too large once sealed (a HELLO carries the token too). */
  sendDropped: number;
  /** RETRYs taken (each answered with the last HELLO again, now with the server's cookie). */
  retries: number;
}

export class ClientSecurity {
  readonly counters: ClientSecurityCounters = { malformed: 0, badTag: 0, replayed: 0, sendDropped: 0, retries: 0 };
  readonly #token: ConnectToken;
  readonly #aead: PacketAead;
  readonly #window = new ReplayWindow();
  readonly #out = new Uint8Array(MAX_SECURE_DATAGRAM);
  readonly #ad = new Uint8Array(AD_BYTES);
  /** Random per attempt: the sealing keys are derived from it (./keys.ts). */
  readonly #clientNonce: Uint8Array;
  readonly #sendKey: Uint8Array;
  /** The server's sending key for association #receiveKeyId (-1: none derived yet). */
  #receiveKey: Uint8Array | undefined;
  #receiveKeyId = -1;
  /** The association id the server gave; -1 until its first authentic datagram. */
  #id = -1;
  #sendPn = 0;
  /** The server's retry cookie (its latest RETRY), sent with every HELLO from then on. */
  #cookie: Uint8Array | undefined;
  /** A copy of the inner datagram of the latest HELLO, to send again at once after a RETRY. */
  #lastHelloInner: Uint8Array | undefined;
  /** That HELLO again, with the cookie, waiting for takeRetryHello(). */
  #retryHello: Uint8Array | undefined;

  constructor(token: ConnectToken, aead: PacketAead = wasmAead, clientNonce = host.crypto.getRandomValues(new Uint8Array(CLIENT_NONCE_BYTES))) {
    this.#token = token;
    this.#aead = aead;
    this.#clientNonce = clientNonce;
    this.#sendKey = clientToServerKey(token.clientToServerKey, clientNonce);
  }

  /** The server's id for this client, once it has answered (-1 before). */
  get associationId(): number {
    return this.#id;
  }

  /** `inner` sealed for the server: a view of this object's buffer, valid until the next seal; undefined if too large (counted). */
  seal(inner: Uint8Array): Uint8Array | undefined {
    const out = this.#out;
    const pn = this.#sendPn;
    if (this.#id < 0) {
      // After a RETRY: the cookie first, then the HELLO from its byte 1 (PROTOCOL §9).
      const cookie = this.#cookie;
      const start = cookie === undefined ? 0 : RETRY_COOKIE_BYTES;
      const body = this.#token.helloBody;
      const at = start + 1 + body.length + HELLO_TAIL_BYTES;
      if (at + inner.length + TAG_BYTES > MAX_SECURE_DATAGRAM) return this.#drop();
      if (cookie === undefined) out[0] = HELLO;
      else {
        out[0] = HELLO_COOKIE;
        out.set(cookie, 1);
      }
      out.set(body, start + 1);
      out.set(this.#clientNonce, start + 1 + body.length);
      writeU64(out, start + 1 + body.length + CLIENT_NONCE_BYTES, pn);
      this.#sendPn++;
      if (this.#lastHelloInner !== inner) this.#lastHelloInner = inner.slice();
      const n = this.#aead.seal(this.#sendKey, pn, writeAd(this.#ad, HELLO, 0, pn), inner, out, at);
      return out.subarray(0, at + n);
    }
    if (SEALED_HEADER_BYTES + inner.length + TAG_BYTES > MAX_SECURE_DATAGRAM) return this.#drop();
    this.#sendPn++;
    writeAd(out, SEALED, this.#id, pn);
    const n = this.#aead.seal(this.#sendKey, pn, out.subarray(0, AD_BYTES), inner, out, SEALED_HEADER_BYTES);
    return out.subarray(0, SEALED_HEADER_BYTES + n);
  }

  /** A datagram from the server: the inner datagram (decrypted in place, a view of `bytes`), or undefined (dropped, counted). */
  open(bytes: Uint8Array): Uint8Array | undefined {
    if (bytes[0] === RETRY) {
      this.#onRetry(bytes);
      return undefined;
    }
    if (bytes[0] !== SEALED || bytes.length < SEALED_HEADER_BYTES + TAG_BYTES) {
      this.counters.malformed++;
      return undefined;
    }
    const id = readU32(bytes, 1);
    // A token opens one association, so once the server has answered, its id is the only one.
    if (this.#id >= 0 && id !== this.#id) {
      this.counters.badTag++;
      return undefined;
    }
    const pn = readU64(bytes, 5);
    const inner = unsealPayload(this.#aead, this.#keyFor(id), this.#window, pn, bytes.subarray(0, AD_BYTES), bytes, SEALED_HEADER_BYTES, this.counters);
    if (inner === undefined) return undefined;
    this.#window.accept(pn);
    // Only the server (and the backend) has the key, so the id is the server's own.
    this.#id = id;
    return inner;
  }

  /**
   * The HELLO to send at once after a RETRY (a copy; the last one sealed again, with the
   * server's cookie), or undefined. A carrier asks after each open().
   */
  takeRetryHello(): Uint8Array | undefined {
    const hello = this.#retryHello;
    this.#retryHello = undefined;
    return hello;
  }

  /**
   * A RETRY: taken while the client sends HELLOs, if it echoes this attempt's nonce (which
   * only a party that saw the HELLO knows); anything else is `malformed`.
   */
  #onRetry(bytes: Uint8Array): void {
    let echoed = bytes.length === RETRY_BYTES && this.#id < 0 && this.#lastHelloInner !== undefined;
    for (let i = 0; echoed && i < RETRY_ECHO_BYTES; i++) echoed = bytes[1 + i] === this.#clientNonce[i];
    if (!echoed) {
      this.counters.malformed++;
      return;
    }
    this.counters.retries++;
    this.#cookie = bytes.slice(1 + RETRY_ECHO_BYTES, RETRY_BYTES);
    this.#retryHello = this.seal(this.#lastHelloInner!)?.slice();
  }

  /** The server's sending key for association `id` (derived once per id). */
  #keyFor(id: number): Uint8Array {
    if (id !== this.#receiveKeyId || this.#receiveKey === undefined) {
      this.#receiveKey = serverToClientKey(this.#token.serverToClientKey, this.#clientNonce, id);
      this.#receiveKeyId = id;
    }
    return this.#receiveKey;
  }

  #drop(): undefined {
    this.counters.sendDropped++;
    return undefined;
  }
}
