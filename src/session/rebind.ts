/**
 * Address migration (PROTOCOL §5): a client whose address changed under it (a NAT rebinding
 * after a quiet spell, a phone moving from Wi-Fi to cellular) keeps its connection instead of
 * losing it and reconnecting from scratch.
 *
 *   client (new address)                     server
 *   DATA ----------------------------------> unknown address: NO_CONNECTION (echoes the DATA)
 *            <----------------------------- NO_CONNECTION
 *   REBIND_REQUEST (sessionId, counter, proof) -> connection found by sessionId, proof and
 *                                            counter checked; nothing moves yet
 *            <----------------------------- REBIND_CHALLENGE (sessionId, token, proof bound to
 *                                            the request's counter) to the new address
 *   REBIND_RESPONSE (sessionId, token, proof) -> same token, from that same address: the
 *                                            connection moves there ("migrate" event)
 *
 * The proof is SipHash-2-4 keyed with the connection key (the client's salt, which only the two
 * ends have seen, and the session id) over the packet's first 13 bytes and a u32 it is bound
 * to, so a sender that is not on the path cannot move a connection; the challenge makes the new
 * address prove it receives there, so a connection's traffic can never be pointed at an address
 * that did not ask for it. All three packets are 21 bytes: the challenge is no larger than the
 * request it answers.
 *
 * Freshness: each request carries the connection's request counter (it only grows), and the
 * server acts only on a counter above the last it accepted (or the same one from the same
 * address: a duplicate). A request copied off the path and replayed later, from anywhere, is
 * refused without a reply, so it can neither overwrite the move in progress nor make the
 * server challenge other addresses. The challenge's proof is bound to the counter of the
 * request it answers, so a late challenge for an earlier request is ignored.
 *
 * The server keeps one pending move per connection (the newest request's address, counter and
 * token); the client retries its request on a timer and gives up after a few tries (then it
 * closes with "no-connection", as it did before migration existed). A request naming a session
 * the server does not hold is answered NO_CONNECTION, echoing the request's CRC, so a client
 * whose server really dropped it learns that one round trip later.
 */
import { PacketType, PROTOCOL_MAGIC, REBIND_BODY_BYTES } from "../engine/abi.js";
import { sipHash64, type SipKey } from "./cookie.js";
import { readU32, writeU32 } from "./handshake.js";

/** Bytes the proof covers: type, sessionId, token. */
const PROVEN_BYTES = 13;
/** Client: requests sent before giving up. */
export const REBIND_ATTEMPTS = 4;
/** Server: how long a challenge's token stays good. */
export const REBIND_TOKEN_MS = 5000;

export interface RebindFields {
  sessionId: number;
  tokenLow: number;
  tokenHigh: number;
  /** The proof field as read (checked with rebindProofValid). */
  proof: number;
}

const proofOut = new Uint8Array(8);
/** The 13 proven bytes, then the u32 the proof is bound to. */
const proofIn = new Uint8Array(PROVEN_BYTES + 4);
const key: [number, number, number, number] = [0, 0, 0, 0];

/** The proof of the 13 bytes at `at`, bound to `bound`, under the connection key. */
function proofOf(b: Uint8Array, at: number, protocolId: number, salt: number, sessionId: number, bound: number): number {
  key[0] = salt >>> 0;
  key[1] = sessionId >>> 0;
  key[2] = protocolId >>> 0;
  key[3] = PROTOCOL_MAGIC;
  proofIn.set(b.subarray(at, at + PROVEN_BYTES));
  writeU32(proofIn, PROVEN_BYTES, bound);
  sipHash64(key as SipKey, proofIn, 0, proofIn.length, proofOut);
  return readU32(proofOut, 0);
}

/**
 * Write a REBIND packet (type, sessionId, token, proof); returns the length before the CRC.
 * `bound`: a CHALLENGE's is the counter of the request it answers; 0 for the other two.
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
  bound = 0,
): number {
  b[at] = type;
  writeU32(b, at + 1, sessionId);
  writeU32(b, at + 5, tokenLow);
  writeU32(b, at + 9, tokenHigh);
  writeU32(b, at + 13, proofOf(b, at, protocolId, salt, sessionId, bound));
  return 1 + REBIND_BODY_BYTES;
}

/** Read a REBIND body (after the type byte, before the CRC). */
export function parseRebind(b: Uint8Array, at: number, length: number): RebindFields | undefined {
  if (length !== REBIND_BODY_BYTES) return undefined;
  return { sessionId: readU32(b, at), tokenLow: readU32(b, at + 4), tokenHigh: readU32(b, at + 8), proof: readU32(b, at + 12) };
}

/** Does the packet whose body is at `bodyAt` carry a proof made with this connection's key? */
export function rebindProofValid(b: Uint8Array, bodyAt: number, fields: RebindFields, protocolId: number, salt: number, bound = 0): boolean {
  return proofOf(b, bodyAt - 1, protocolId, salt, fields.sessionId, bound) === fields.proof;
}

/** Server: the one move a connection may make next (the newest request's address). */
export interface PendingRebind {
  address: string;
  /** The request counter it answers. */
  counter: number;
  tokenLow: number;
  tokenHigh: number;
  expiresAt: number;
}

/** Client: a rebinding in progress (requests on a timer until the server answers or we give up). */
export class ClientRebind {
  /** Requests sent so far. */
  attempts = 0;
  /** When the next request goes (Infinity: none due, e.g. a response is being written). */
  nextSendAt: number;
  /** The connection's request counter in the newest request (its challenge is bound to it). */
  counter = 0;
  /** CRC field of the newest request (a NO_CONNECTION echoing it is genuine). */
  requestCrc = 0;
  /** A challenge's token to send back (responseDue), and the challenge's session check. */
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
