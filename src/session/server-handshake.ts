/**
 * The server's side of the handshake (docs/PROTOCOL.md §4), beside the client's in
 * ./handshake.ts: the stateless cookie, and what a connection keeps of the RESPONSE it was
 * accepted for until the first packet of its session arrives.
 */
import { writeU32 } from "../wire/bytes.js";
import { COOKIE_BYTES } from "../wire/control.js";
import type { ResponseFields } from "../wire/control-server.js";
import { addressBytes } from "./address.js";
import { cookiesEqual, sipHash128, type SipKey } from "./cookie.js";
import type { Address } from "./types.js";

/** Moves of an accepted connection by repeats of its RESPONSE (the endpoint's acceptedElsewhere), at most. */
export const MAX_HANDSHAKE_MOVES = 4;

/**
 * Mints and checks cookies. Holds only the secret and scratch space: no per-address state.
 */
export class CookieJar {
  private readonly scratch = new Uint8Array(320);
  private readonly out = new Uint8Array(COOKIE_BYTES);

  constructor(
    private readonly secret: SipKey,
    /** Length of one time window in ms (PROTOCOL §4: default 10 s). */
    readonly windowMs: number,
  ) {}

  /** The cookie for (address, salt) in the window containing `now` (or `windowOffset` windows earlier). */
  mint(now: number, address: Address, salt: number, windowOffset = 0): Uint8Array {
    const window = (Math.floor(now / this.windowMs) - windowOffset) >>> 0;
    const n = addressBytes(address, this.scratch, 0);
    writeU32(this.scratch, n, salt);
    writeU32(this.scratch, n + 4, window);
    sipHash128(this.secret, this.scratch, 0, n + 8, this.out, 0);
    return this.out;
  }

  /** True if the cookie at `b[at..at+16)` is valid for the current or the previous window. */
  check(now: number, address: Address, salt: number, b: Uint8Array, at: number): boolean {
    if (cookiesEqual(this.mint(now, address, salt, 0), 0, b, at)) return true;
    return cookiesEqual(this.mint(now, address, salt, 1), 0, b, at);
  }
}

/**
 * A server connection's CONNECT_RESPONSE as accepted, kept until the first packet of its
 * session arrives: a RESPONSE from another address that repeats it is the same attempt, whose
 * client moved after its RESPONSE left (the endpoint's acceptedElsewhere).
 */
export class AcceptedResponse {
  /** The addresses the connection was moved away from, which never get it back. */
  readonly #left: Address[] = [];
  readonly #appVersion: number;
  readonly #channelHash: number;
  readonly #userData: Uint8Array;

  constructor(res: Pick<ResponseFields, "appVersion" | "channelHash" | "userData">) {
    this.#appVersion = res.appVersion;
    this.#channelHash = res.channelHash;
    this.#userData = res.userData.slice();
  }

  /** Whether `res` repeats the accepted RESPONSE (the same attempt of the same client). */
  repeatedBy(res: ResponseFields): boolean {
    if (res.appVersion !== this.#appVersion || res.channelHash !== this.#channelHash) return false;
    const a = this.#userData;
    const b = res.userData;
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }

  /** Whether the connection may follow its client to `to`: never back to an address it left,
   *  and at most MAX_HANDSHAKE_MOVES times. */
  mayMoveTo(to: Address): boolean {
    return !this.#left.includes(to) && this.#left.length < MAX_HANDSHAKE_MOVES;
  }

  /** The connection leaves `from` for good. */
  leave(from: Address): void {
    this.#left.push(from);
  }
}
