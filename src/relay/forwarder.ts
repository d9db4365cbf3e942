/**
 * The relay, sans-IO: forwards datagrams between the two sides of an allocation, for peers that
 * NAT punching cannot connect (a symmetric NAT on either side). docs/PROTOCOL.md §8 has the
 * datagram; ./wire.ts the token and virtual addresses.
 *
 * An allocation is two random tokens, one per side, made by `allocate()` and handed out by
 * whoever introduces the peers (the lobby: src/game/nat.ts). The relay knows nothing else about
 * the peers. A side is bound to an address X once X has shown it receives there: a datagram of
 * the side from X (a BIND, or data) draws a CHALLENGE to X with a cookie (a keyed hash of the
 * token, X and the time), and X's CONFIRM echoing it binds the side to X (the newest confirmed
 * address wins, so a side whose NAT moved it keeps working, one round trip to the relay later).
 * A datagram `[token | payload]` from the side's bound address is forwarded, if the other side
 * is bound, to the other side's address as `[other side's token | payload]`: the same number of
 * bytes. Everything else is counted and dropped: unknown tokens, datagrams shorter than a
 * token or longer than MAX_RELAY_DATAGRAM, payloads from an address not (yet) confirmed, for a
 * side not yet bound, or over a side's rate (a token bucket per side), and CONFIRMs with a
 * wrong cookie.
 *
 * What it does not let anyone do: reach an address that has not confirmed a challenge sent
 * there (a token holder spoofing a victim's address cannot aim the other side's traffic at it),
 * or get more bytes out than were sent in (a CHALLENGE answers only a datagram at least as
 * long, at most one per side per CHALLENGE_INTERVAL_MS). The tokens are bearer credentials:
 * whoever sees one on the path can use that allocation (as they could spoof the peer itself);
 * the payload is ackwire's datagram, checked end to end by its CRC.
 *
 * Allocations end after `idleTimeoutMs` without a datagram (once both sides are bound: without
 * a forwarded one), and after `bindTimeoutMs` if both sides have not bound by then (an introduction whose joiner never needed the relay, or someone
 * drawing allocations to fill the table); at most `maxAllocations` exist.
 */
import { sipHash64, type SipKey } from "../session/cookie.js";
import type { Address } from "../session/sans-io.js";
import { RelayConfigError } from "./errors.js";
import {
  MAX_RELAY_DATAGRAM, RELAY_BIND, RELAY_CHALLENGE, RELAY_CONFIRM, RELAY_CONTROL_BYTES, RELAY_TOKEN_BYTES, relayControlKind, tokenKey,
  writeRelayControl,
} from "./wire.js";

/** At most one CHALLENGE per side this often: a token holder cannot make the relay a reflector. */
export const CHALLENGE_INTERVAL_MS = 100;
/** A cookie is good in its time window and the next (10-20 s). */
const COOKIE_WINDOW_MS = 10_000;
/** Longest address text hashed into a cookie (a bracketed IPv6 literal and port is <= 47). */
const MAX_ADDRESS_CHARS = 64;

export interface RelayForwarderOptions {
  /** Allocations at once; allocate() returns undefined beyond. Default 1024. */
  maxAllocations?: number;
  /** An allocation with no datagram for this long ends (once both sides are bound: no forwarded datagram). Default 30,000 ms. */
  idleTimeoutMs?: number;
  /** An allocation whose two sides have not both bound this long after it was made ends. Default 15,000 ms. */
  bindTimeoutMs?: number;
  /** Payload bytes per second each side may send through (token bucket). Default 1,000,000. */
  bytesPerSecond?: number;
  /** The bucket's size in bytes. Default 256 KiB. */
  burstBytes?: number;
  /** 16 random bytes per allocation (the two tokens). Default: Web Crypto. */
  random?: () => Uint8Array;
}

/** What allocate() hands out: one token per side. */
export interface RelayAllocation {
  tokens: [Uint8Array, Uint8Array];
}

export interface RelayForwarderCounters {
  allocations: number;
  /** allocate() found no room. */
  full: number;
  /** allocate() drew a token already in use (or two equal ones) and refused. */
  collisions: number;
  expired: number;
  /** Datagrams forwarded, and their bytes (in = out). */
  forwarded: number;
  forwardedBytes: number;
  /** BIND datagrams (from any address). */
  binds: number;
  /** CHALLENGEs sent to an address a side's datagram came from. */
  challenges: number;
  /** CONFIRMs that bound a side to their address. */
  confirmed: number;
  /** Dropped: a CONFIRM whose cookie is wrong or too old, or a CHALLENGE (only the relay sends those). */
  badCookie: number;
  /** Dropped: payload from an address its side has not confirmed (it drew a CHALLENGE, rate allowing). */
  unvalidated: number;
  /** Dropped: shorter than a token or longer than MAX_RELAY_DATAGRAM. */
  malformed: number;
  /** Dropped: no allocation has this token. */
  unknownToken: number;
  /** Dropped: the other side has not sent anything yet. */
  unbound: number;
  /** Dropped: over the sending side's rate. */
  rateLimited: number;
}

interface Side {
  token: Uint8Array;
  /** Where this side's traffic goes: the newest address that confirmed a challenge. */
  address: Address | undefined;
  /** When the side's last CHALLENGE left (-Infinity: never). */
  challengedAt: number;
  /** Token bucket, in bytes. */
  credit: number;
  refilledAt: number;
}

interface Allocation {
  sides: [Side, Side];
  lastActive: number;
  createdAt: number;
}

/** One side of an allocation, as found by its token. */
interface Entry {
  allocation: Allocation;
  side: 0 | 1;
}

/** A datagram to send: `bytes` is the input buffer rewritten in place (valid until the next call). */
export interface RelayTransmit {
  to: Address;
  bytes: Uint8Array;
}

export class RelayForwarder {
  readonly maxAllocations: number;
  readonly idleTimeoutMs: number;
  readonly bindTimeoutMs: number;
  readonly bytesPerSecond: number;
  readonly burstBytes: number;
  readonly counters: RelayForwarderCounters = {
    allocations: 0, full: 0, collisions: 0, expired: 0, forwarded: 0, forwardedBytes: 0, binds: 0, challenges: 0, confirmed: 0, badCookie: 0,
    unvalidated: 0, malformed: 0, unknownToken: 0, unbound: 0, rateLimited: 0,
  };
  readonly #byToken = new Map<string, Entry>();
  readonly #allocations = new Set<Allocation>();
  readonly #random: () => Uint8Array;
  /** The cookies' key: only this relay can mint or check one. */
  readonly #cookieKey: SipKey;
  /** Cookie input (token, time window, address) and output. */
  readonly #cookieInput = new Uint8Array(RELAY_TOKEN_BYTES + 4 + MAX_ADDRESS_CHARS);
  readonly #cookie = new Uint8Array(8);
  /** When the next expiry sweep is due. */
  #sweepAt = Infinity;

  constructor(options: RelayForwarderOptions = {}) {
    this.maxAllocations = integerIn("maxAllocations", options.maxAllocations ?? 1024, 1, 1_000_000);
    this.idleTimeoutMs = integerIn("idleTimeoutMs", options.idleTimeoutMs ?? 30_000, 1000, 3_600_000);
    this.bindTimeoutMs = integerIn("bindTimeoutMs", options.bindTimeoutMs ?? 15_000, 1000, 3_600_000);
    this.bytesPerSecond = integerIn("bytesPerSecond", options.bytesPerSecond ?? 1_000_000, 1000, 1e10);
    this.burstBytes = integerIn("burstBytes", options.burstBytes ?? 256 * 1024, MAX_RELAY_DATAGRAM, 1e10);
    this.#random = options.random ?? (() => (globalThis as unknown as { crypto: { getRandomValues(a: Uint8Array): Uint8Array } }).crypto.getRandomValues(new Uint8Array(16)));
    const key = this.#random();
    if (key.length < 16) throw new RelayConfigError("RelayForwarder random() must return 16 bytes");
    const word = (i: number): number => (key[i]! | (key[i + 1]! << 8) | (key[i + 2]! << 16) | (key[i + 3]! << 24)) >>> 0;
    this.#cookieKey = [word(0), word(4), word(8), word(12)];
  }

  /** Allocations alive now. */
  get size(): number {
    return this.#allocations.size;
  }

  /** Whether the allocation with this token (either side's) still exists. */
  isAlive(token: Uint8Array): boolean {
    return token.length === RELAY_TOKEN_BYTES && this.#byToken.has(tokenKey(token));
  }

  /** A new allocation (expired ones are swept first), or undefined when maxAllocations are alive. */
  allocate(now: number): RelayAllocation | undefined {
    this.handleTimeout(now);
    if (this.#allocations.size >= this.maxAllocations) {
      this.counters.full++;
      return undefined;
    }
    const random = this.#random();
    if (random.length < 2 * RELAY_TOKEN_BYTES) throw new RelayConfigError("RelayForwarder random() must return 16 bytes");
    const tokens: [Uint8Array, Uint8Array] = [random.slice(0, RELAY_TOKEN_BYTES), random.slice(RELAY_TOKEN_BYTES, 2 * RELAY_TOKEN_BYTES)];
    const keys = [tokenKey(tokens[0]), tokenKey(tokens[1])];
    // Two equal tokens, or one already in use, would route a side's datagrams to itself or to
    // another allocation: 2^-64 with a working random source, but refused, not trusted.
    if (keys[0] === keys[1] || this.#byToken.has(keys[0]!) || this.#byToken.has(keys[1]!)) {
      this.counters.collisions++;
      return undefined;
    }
    const side = (token: Uint8Array): Side => ({ token, address: undefined, challengedAt: -Infinity, credit: this.burstBytes, refilledAt: now });
    const allocation: Allocation = { sides: [side(tokens[0]), side(tokens[1])], lastActive: now, createdAt: now };
    this.#allocations.add(allocation);
    this.#byToken.set(keys[0]!, { allocation, side: 0 });
    this.#byToken.set(keys[1]!, { allocation, side: 1 });
    this.counters.allocations++;
    if (this.#sweepAt === Infinity) this.#sweepAt = now + this.#sweepEvery();
    return { tokens: [tokens[0].slice(), tokens[1].slice()] };
  }

  /**
   * One datagram from `from`. Returns what to send (the same buffer rewritten: a forward with its
   * token swapped for the receiver's, or a CHALLENGE back to `from`) or undefined (a BIND from
   * the bound address, a CONFIRM, or a counted drop).
   */
  handleDatagram(now: number, from: Address, bytes: Uint8Array): RelayTransmit | undefined {
    if (bytes.length <= RELAY_TOKEN_BYTES || bytes.length > MAX_RELAY_DATAGRAM) {
      this.counters.malformed++;
      return undefined;
    }
    const entry = this.#byToken.get(tokenKey(bytes));
    if (entry === undefined) {
      this.counters.unknownToken++;
      return undefined;
    }
    const { allocation } = entry;
    const sender = allocation.sides[entry.side];
    const receiver = allocation.sides[1 - entry.side]!;
    // Until both sides are bound, any datagram keeps the allocation (the bind timeout bounds
    // that phase); after, only forwarded payload does: binds alone cannot hold it for ever.
    if (sender.address === undefined || receiver.address === undefined) allocation.lastActive = now;
    const kind = relayControlKind(bytes);
    if (kind === RELAY_BIND) this.counters.binds++;
    if (kind === RELAY_CONFIRM || kind === RELAY_CHALLENGE) {
      if (kind === RELAY_CONFIRM && this.#cookieMatches(bytes, from, now)) {
        sender.address = from;
        this.counters.confirmed++;
      } else {
        this.counters.badCookie++;
      }
      return undefined;
    }
    if (from !== sender.address) {
      // Not where this side's traffic goes (yet): `from` must first show that it receives there.
      if (kind !== RELAY_BIND) this.counters.unvalidated++;
      return this.#challenge(now, sender, from, bytes);
    }
    if (kind === RELAY_BIND) return undefined;
    const payload = bytes.length - RELAY_TOKEN_BYTES;
    if (receiver.address === undefined) {
      this.counters.unbound++;
      return undefined;
    }
    sender.credit = Math.min(this.burstBytes, sender.credit + ((now - sender.refilledAt) * this.bytesPerSecond) / 1000);
    sender.refilledAt = now;
    if (sender.credit < payload) {
      this.counters.rateLimited++;
      return undefined;
    }
    sender.credit -= payload;
    allocation.lastActive = now;
    bytes.set(receiver.token, 0);
    this.counters.forwarded++;
    this.counters.forwardedBytes += bytes.length;
    return { to: receiver.address, bytes };
  }

  /**
   * A CHALLENGE to `from` for `side`, written over `bytes` (the datagram that drew it, at least
   * as long: never more bytes out than in), at most one per side per CHALLENGE_INTERVAL_MS.
   */
  #challenge(now: number, side: Side, from: Address, bytes: Uint8Array): RelayTransmit | undefined {
    if (bytes.length < RELAY_CONTROL_BYTES || now - side.challengedAt < CHALLENGE_INTERVAL_MS) return undefined;
    if (!this.#computeCookie(side.token, from, Math.floor(now / COOKIE_WINDOW_MS))) return undefined;
    side.challengedAt = now;
    this.counters.challenges++;
    writeRelayControl(bytes, side.token, RELAY_CHALLENGE, this.#cookie);
    return { to: from, bytes: bytes.subarray(0, RELAY_CONTROL_BYTES) };
  }

  /** Whether a CONFIRM carries the cookie of its token and `from`, of this time window or the one before. */
  #cookieMatches(bytes: Uint8Array, from: Address, now: number): boolean {
    const window = Math.floor(now / COOKIE_WINDOW_MS);
    for (const w of [window, window - 1]) {
      if (!this.#computeCookie(bytes, from, w)) return false;
      // No early exit: the time taken says nothing about how much of a guess was right.
      let diff = 0;
      for (let i = 0; i < 8; i++) diff |= this.#cookie[i]! ^ bytes[RELAY_TOKEN_BYTES + 1 + i]!;
      if (diff === 0) return true;
    }
    return false;
  }

  /** The cookie of (token, address, window) into #cookie; false for an address too long to hash. */
  #computeCookie(token: Uint8Array, address: Address, window: number): boolean {
    if (address.length > MAX_ADDRESS_CHARS) return false;
    const input = this.#cookieInput;
    input.set(token.subarray(0, RELAY_TOKEN_BYTES), 0);
    const w = window >>> 0;
    input[8] = w & 0xff;
    input[9] = (w >>> 8) & 0xff;
    input[10] = (w >>> 16) & 0xff;
    input[11] = w >>> 24;
    for (let i = 0; i < address.length; i++) input[12 + i] = address.charCodeAt(i) & 0xff;
    sipHash64(this.#cookieKey, input, 0, 12 + address.length, this.#cookie);
    return true;
  }

  /** When handleTimeout should next run (the expiry sweep), or undefined with no allocation. */
  pollTimeout(): number | undefined {
    return this.#allocations.size === 0 ? undefined : this.#sweepAt;
  }

  /**
   * Ends allocations idle for idleTimeoutMs, or not bound by both sides within bindTimeoutMs.
   * A sweep runs at most every quarter of the shorter of the two.
   */
  handleTimeout(now: number): void {
    if (now < this.#sweepAt) return;
    for (const allocation of this.#allocations) {
      const [a, b] = allocation.sides;
      const unbound = a.address === undefined || b.address === undefined;
      if (now - allocation.lastActive < this.idleTimeoutMs && !(unbound && now - allocation.createdAt >= this.bindTimeoutMs)) continue;
      this.#allocations.delete(allocation);
      for (const side of allocation.sides) this.#byToken.delete(tokenKey(side.token));
      this.counters.expired++;
    }
    this.#sweepAt = this.#allocations.size === 0 ? Infinity : now + this.#sweepEvery();
  }

  #sweepEvery(): number {
    return Math.min(this.idleTimeoutMs, this.bindTimeoutMs) / 4;
  }
}

function integerIn(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) throw new RelayConfigError(`RelayForwarder ${name} must be an integer in ${min}..${max}, got ${String(value)}`);
  return value;
}
