/**
 * Address migration (PROTOCOL §5): a client whose address changed under it (a NAT rebinding
 * after a quiet spell, a phone moving from Wi-Fi to cellular) keeps its connection instead of
 * losing it and reconnecting from scratch.
 *
 *   client (new address)                     server
 *   DATA ----------------------------------> unknown address: NO_CONNECTION (echoes the DATA)
 *            <----------------------------- NO_CONNECTION
 *   REBIND_REQUEST (sessionId, counter, proof) -> connection found by sessionId, proof and
 *                                            counter checked; nothing moves, nothing stored
 *            <----------------------------- REBIND_CHALLENGE (sessionId, tag, counter, proof)
 *                                            to the address the request came from
 *   REBIND_RESPONSE (the same tag and counter) -> tag checked for this address: the
 *                                            connection moves ("migrate" event)
 *
 * The proof is SipHash-2-4 keyed with the connection key (the client's salt, which only the two
 * ends have seen, and the session id) over the packet's first 13 bytes, so a sender that is not
 * on the path cannot make a REBIND packet either end accepts. The challenge makes the new
 * address prove it receives there, so a connection's traffic can never be pointed at an
 * address that did not answer. All three packets are 21 bytes: the challenge is no larger than
 * the request it answers.
 *
 * The challenge is stateless, like the handshake's cookie: its tag is SipHash, under the
 * server's secret, of (session id, request counter, address, 5 s time window), checked for this
 * window and the previous one. So every address that sends a valid request gets its own
 * challenge and nothing a request does can displace another's: a copy of the client's request
 * that an observer gets to the server first, from another address, draws a challenge that
 * address cannot answer, and the client's own request still draws one it can.
 *
 * Freshness: each request carries the connection's request counter (it only grows); the server
 * answers a request only if its counter is at least the highest it has seen on the connection,
 * and moves only for a counter above that of the last completed move. A request or response
 * replayed later is refused without a reply.
 *
 * The client accepts a challenge for any request of its current round (its counter is in the
 * challenge), so a path slower than the retry timer still moves; it retries on a timer, and
 * after REBIND_ATTEMPTS repeats the last request each second until an answer or its idle
 * timeout (silence only says the path is dark). A request naming a session the server does
 * not hold is answered NO_CONNECTION, echoing the request's CRC, so a client whose server
 * really dropped it learns that one round trip later.
 */
import { PROTOCOL_MAGIC } from "../engine/abi.js";
import { readU32, writeU32 } from "../wire/bytes.js";
import { encodeRebindFields, REBIND_PROVEN_BYTES, writeRebindProof, type RebindFields, type RebindType } from "../wire/control.js";
import { addressBytes } from "./address.js";
import { sipHash64, type SipKey } from "./cookie.js";

/** Client: requests with a new counter per move (then the last one is repeated). */
export const REBIND_ATTEMPTS = 4;
/**
 * Server: how far a request's counter may run ahead of the highest seen. A client uses at
 * most REBIND_ATTEMPTS counters per move, so its counter is never more than a few ahead.
 */
export const REBIND_COUNTER_LEAD = 64;
/** Server: a challenge's tag is good in its time window and the next one (5-10 s). */
export const REBIND_WINDOW_MS = 5000;

const proofOut = new Uint8Array(8);
const key: [number, number, number, number] = [0, 0, 0, 0];

/** The proof of the 13 bytes at `at` under the connection key. */
function proofOf(b: Uint8Array, at: number, protocolId: number, salt: number, sessionId: number): number {
  key[0] = salt >>> 0;
  key[1] = sessionId >>> 0;
  key[2] = protocolId >>> 0;
  key[3] = PROTOCOL_MAGIC;
  sipHash64(key as SipKey, b, at, REBIND_PROVEN_BYTES, proofOut);
  return readU32(proofOut, 0);
}

/**
 * Write a REBIND packet (type, sessionId, token, proof); returns the length before the CRC.
 * REQUEST: token = (counter, 0); CHALLENGE and RESPONSE: token = (tag, counter).
 */
export function encodeRebind(
  b: Uint8Array,
  at: number,
  type: RebindType,
  protocolId: number,
  salt: number,
  sessionId: number,
  tokenLow: number,
  tokenHigh: number,
): number {
  const length = encodeRebindFields(b, at, type, sessionId, tokenLow, tokenHigh);
  writeRebindProof(b, at, proofOf(b, at, protocolId, salt, sessionId));
  return length;
}

/** Does the packet whose body is at `bodyAt` carry a proof made with this connection's key? */
export function rebindProofValid(b: Uint8Array, bodyAt: number, fields: RebindFields, protocolId: number, salt: number): boolean {
  return proofOf(b, bodyAt - 1, protocolId, salt, fields.sessionId) === fields.proof;
}

const tagInput = new Uint8Array(12 + 64);
const tagOut = new Uint8Array(8);

/**
 * Server: the challenge tag for a request with `counter` on session `sessionId` from `address`
 * in time window `window` (floor(now / REBIND_WINDOW_MS)), under the server's secret.
 */
export function rebindTag(secret: SipKey, sessionId: number, counter: number, address: string, window: number): number {
  writeU32(tagInput, 0, sessionId);
  writeU32(tagInput, 4, counter);
  writeU32(tagInput, 8, window);
  const n = addressBytes(address, tagInput, 12);
  sipHash64(secret, tagInput, 0, 12 + n, tagOut);
  return readU32(tagOut, 0);
}

/** Client: a rebinding in progress (requests on a timer until the server answers or we give up). */
export class ClientRebind {
  /** Requests sent so far. */
  attempts = 0;
  /** When the next request goes. */
  nextSendAt: number;
  /** The newest request's counter. The move's requests carried the `attempts` counters up to
   *  it, and a challenge for any of them is accepted (a slow path's answer to an earlier one). */
  counter = 0;
  /** CRC field of the newest request (a NO_CONNECTION echoing it is genuine). */
  requestCrc = 0;
  /** A challenge's token to send back (responseDue). */
  responseDue = false;
  tokenLow = 0;
  tokenHigh = 0;

  constructor(now: number) {
    this.nextSendAt = now;
  }

  /** A request left at `now`; the next one after `intervalMs` doubled per attempt, at most `maxMs`. */
  onRequestSent(now: number, intervalMs: number, maxMs: number): void {
    this.nextSendAt = now + Math.min(intervalMs * 2 ** this.attempts, maxMs);
    this.attempts++;
  }

  get exhausted(): boolean {
    return this.attempts >= REBIND_ATTEMPTS;
  }
}

/**
 * A connection's REBIND counters (PROTOCOL §5, "Freshness"). Client: the counter of its newest
 * request; each new request takes the next. Server: the highest counter of a request with a
 * valid proof (lower ones are replays), and that of the last completed move (a response at or
 * below it is a replay).
 */
export class RebindCounters {
  highest = 0;
  done = 0;

  /** Client: the counter of a new request. */
  next(): number {
    return ++this.highest;
  }

  /**
   * Server: a request with `counter` is fresh: at least the highest seen (the same one again
   * is a retransmission, or an observer's copy racing it: each address gets its own challenge),
   * above the last completed move, and at most REBIND_COUNTER_LEAD ahead (a client sends 4
   * requests per move, so a jump past that is no client's, and would lock the real client's
   * requests out). (highest >= done always: a move completes at the highest seen.)
   */
  requestFresh(counter: number): boolean {
    return counter >= this.highest && counter > this.done && counter <= this.highest + REBIND_COUNTER_LEAD;
  }

  /** Server: a fresh request with a valid proof is answered. */
  requested(counter: number): void {
    this.highest = counter;
  }

  /** Server: a response for `counter` may complete a move. */
  responseFresh(counter: number): boolean {
    return counter > this.done;
  }

  /** Server: a move completed: every request of it is spent, not only the one answered (on a
   *  slow path the server has seen later ones too), so a replay of any gets no reply. */
  moved(): void {
    this.done = this.highest;
  }
}
