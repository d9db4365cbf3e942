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
import { PacketType, PROTOCOL_MAGIC, REBIND_BODY_BYTES } from "../engine/abi.js";
import { addressBytes } from "./address.js";
import { sipHash64, type SipKey } from "./cookie.js";
import { readU32, writeU32 } from "./handshake.js";

/** Bytes the proof covers: type, sessionId, token. */
const PROVEN_BYTES = 13;
/** Client: requests with a new counter per move (then the last one is repeated). */
export const REBIND_ATTEMPTS = 4;
/**
 * Server: how far a request's counter may run ahead of the highest seen. A client uses at
 * most REBIND_ATTEMPTS counters per move, so its counter is never more than a few ahead.
 */
export const REBIND_COUNTER_LEAD = 64;
/** Server: a challenge's tag is good in its time window and the next one (5-10 s). */
export const REBIND_WINDOW_MS = 5000;

export interface RebindFields {
  sessionId: number;
  tokenLow: number;
  tokenHigh: number;
  /** The proof field as read (checked with rebindProofValid). */
  proof: number;
}

const proofOut = new Uint8Array(8);
const key: [number, number, number, number] = [0, 0, 0, 0];

/** The proof of the 13 bytes at `at` under the connection key. */
function proofOf(b: Uint8Array, at: number, protocolId: number, salt: number, sessionId: number): number {
  key[0] = salt >>> 0;
  key[1] = sessionId >>> 0;
  key[2] = protocolId >>> 0;
  key[3] = PROTOCOL_MAGIC;
  sipHash64(key as SipKey, b, at, PROVEN_BYTES, proofOut);
  return readU32(proofOut, 0);
}

/**
 * Write a REBIND packet (type, sessionId, token, proof); returns the length before the CRC.
 * REQUEST: token = (counter, 0); CHALLENGE and RESPONSE: token = (tag, counter).
 */
export function encodeRebind(
  b: Uint8Array,
  at: number,
  type: PacketType.RebindRequest | PacketType.RebindChallenge | PacketType.RebindResponse,
  protocolId: number,
  salt: number,
  sessionId: number,
  tokenLow: number,
  tokenHigh: number,
): number {
  b[at] = type;
  writeU32(b, at + 1, sessionId);
  writeU32(b, at + 5, tokenLow);
  writeU32(b, at + 9, tokenHigh);
  writeU32(b, at + 13, proofOf(b, at, protocolId, salt, sessionId));
  return 1 + REBIND_BODY_BYTES;
}

/** Read a REBIND body (after the type byte, before the CRC). */
export function parseRebind(b: Uint8Array, at: number, length: number): RebindFields | undefined {
  if (length !== REBIND_BODY_BYTES) return undefined;
  return { sessionId: readU32(b, at), tokenLow: readU32(b, at + 4), tokenHigh: readU32(b, at + 8), proof: readU32(b, at + 12) };
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
