/**
 * NAT hole punching (PROTOCOL §7): the one packet two endpoints behind NATs send each other so
 * that each NAT lets the other's packets in.
 *
 * A NAT forwards an inbound datagram only if the host behind it has sent to that peer first
 * (address- and port-dependent filtering, what most home routers and Linux firewalls do). Two
 * hosts behind two such NATs can still reach each other when a third party both can reach (an
 * introducer: the lobby, src/game/nat.ts) tells each the other's public address: each sends
 * NAT_PUNCH there. The first punches are dropped by the other's NAT, but each one opens its
 * sender's own NAT for the peer, and once both have sent, punches get through both ways. The
 * joining side then connects (a normal handshake) to the address a punch came from.
 *
 * A punch carries an 8-byte token the introducer made for this pair. An endpoint reports a
 * punch (the "punch" event) only for a token it named when it punched itself (the one it sends,
 * or the peer's: src/game/nat.ts gives each side its own), within PUNCH_ACCEPT_MS of its last
 * punch, and at most PUNCH_EVENTS_PER_TOKEN times per token: a sender that does not know the
 * token (it is not the introducer, the peer, or on the path) cannot make the application act,
 * and no sender can flood it with events. A punch is never
 * answered: the endpoint sends punches only when its application asks, so it cannot be used
 * to reflect traffic.
 */
import { PUNCH_BODY_BYTES } from "../engine/abi.js";
import { readU32 } from "../wire/bytes.js";
import { isValidAddress } from "./address.js";
import { InvalidAddressError, InvalidPunchTokenError } from "./errors.js";
import type { Address } from "./sans-io.js";

/** A token is accepted for this long after this endpoint last punched with it. */
export const PUNCH_ACCEPT_MS = 30_000;
/** Tokens remembered at once; the least recently used is forgotten first. */
export const MAX_PUNCH_TOKENS = 64;
/** "punch" events per token: enough for every candidate address of a peer, several times. */
export const PUNCH_EVENTS_PER_TOKEN = 16;

/** A token as a Map key: its two u32 halves. */
function tokenKey(b: Uint8Array, at: number): string {
  return `${readU32(b, at)}:${readU32(b, at + 4)}`;
}

interface ActiveToken {
  expiresAt: number;
  events: number;
}

/** The tokens this endpoint is punching with: which received punches are reported. */
export class PunchTokens {
  readonly #active = new Map<string, ActiveToken>();

  get size(): number {
    return this.#active.size;
  }

  /** This endpoint punches at `now`, accepting punches with `token` for PUNCH_ACCEPT_MS. */
  punching(now: number, token: Uint8Array): void {
    const key = tokenKey(token, 0);
    const entry = this.#active.get(key);
    // Re-inserted so the Map's order is least recently punched first.
    if (entry !== undefined) this.#active.delete(key);
    this.#active.set(key, { expiresAt: now + PUNCH_ACCEPT_MS, events: entry?.events ?? 0 });
    if (this.#active.size > MAX_PUNCH_TOKENS) this.#active.delete(this.#active.keys().next().value as string);
  }

  /** A punch with the token at `b[at..at+8]` arrived: should the application hear of it? */
  accept(now: number, b: Uint8Array, at: number): boolean {
    const key = tokenKey(b, at);
    const entry = this.#active.get(key);
    if (entry === undefined) return false;
    if (now > entry.expiresAt) {
      this.#active.delete(key);
      return false;
    }
    if (entry.events >= PUNCH_EVENTS_PER_TOKEN) return false;
    entry.events++;
    return true;
  }
}

/** Is `token` a punch token (8 bytes)? */
export function isPunchToken(token: unknown): token is Uint8Array {
  return token instanceof Uint8Array && token.length === PUNCH_BODY_BYTES;
}

/** The arguments of a punch() (the Endpoint's, or a front end's on another thread), checked. */
export function checkPunchArguments(address: Address, token: Uint8Array, acceptToken: Uint8Array): void {
  if (!isValidAddress(address)) throw new InvalidAddressError(address);
  if (!isPunchToken(token)) throw new InvalidPunchTokenError(token);
  if (!isPunchToken(acceptToken)) throw new InvalidPunchTokenError(acceptToken);
}
