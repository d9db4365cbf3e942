/**
 * The relay, sans-IO: forwards datagrams between the two sides of an allocation, for peers that
 * NAT punching cannot connect (a symmetric NAT on either side). docs/PROTOCOL.md §8 has the
 * datagram; ./wire.ts the token and virtual addresses.
 *
 * An allocation is two random tokens, one per side, made by `allocate()` and handed out by
 * whoever introduces the peers (the lobby: src/game/nat.ts). The relay knows nothing else about
 * the peers. A datagram `[token | payload]` from address X:
 *   - binds the token's side to X (latest wins, so a side whose NAT moved it keeps working);
 *   - is forwarded, if it has a payload and the other side is bound, to the other side's
 *     address as `[other side's token | payload]`: the same number of bytes.
 * Everything else is counted and dropped: unknown tokens, datagrams shorter than a token or
 * longer than MAX_RELAY_DATAGRAM, payloads for a side not yet bound, and bytes over a side's
 * rate (a token bucket per side).
 *
 * What it does not let anyone do: reach an address that did not itself send the matching
 * token (so it cannot be aimed at a victim), or get more bytes out than were sent in. The
 * tokens are bearer credentials: whoever sees one on the path can use that allocation (as they
 * could spoof the peer itself); the payload is ackwire's datagram, checked end to end by its CRC.
 *
 * Allocations end after `idleTimeoutMs` without a datagram (once both sides are bound: without
 * a forwarded one), and after `bindTimeoutMs` if both sides have not bound by then (an introduction whose joiner never needed the relay, or someone
 * drawing allocations to fill the table); at most `maxAllocations` exist.
 */
import type { Address } from "../session/sans-io.js";
import { RelayConfigError } from "./errors.js";
import { MAX_RELAY_DATAGRAM, RELAY_TOKEN_BYTES, tokenKey } from "./wire.js";

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
  /** Bind-only datagrams (token without payload). */
  binds: number;
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
  address: Address | undefined;
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
    allocations: 0, full: 0, collisions: 0, expired: 0, forwarded: 0, forwardedBytes: 0, binds: 0, malformed: 0, unknownToken: 0, unbound: 0, rateLimited: 0,
  };
  readonly #byToken = new Map<string, Entry>();
  readonly #allocations = new Set<Allocation>();
  readonly #random: () => Uint8Array;
  /** When the next expiry sweep is due. */
  #sweepAt = Infinity;

  constructor(options: RelayForwarderOptions = {}) {
    this.maxAllocations = integerIn("maxAllocations", options.maxAllocations ?? 1024, 1, 1_000_000);
    this.idleTimeoutMs = integerIn("idleTimeoutMs", options.idleTimeoutMs ?? 30_000, 1000, 3_600_000);
    this.bindTimeoutMs = integerIn("bindTimeoutMs", options.bindTimeoutMs ?? 15_000, 1000, 3_600_000);
    this.bytesPerSecond = integerIn("bytesPerSecond", options.bytesPerSecond ?? 1_000_000, 1000, 1e10);
    this.burstBytes = integerIn("burstBytes", options.burstBytes ?? 256 * 1024, MAX_RELAY_DATAGRAM, 1e10);
    this.#random = options.random ?? (() => (globalThis as unknown as { crypto: { getRandomValues(a: Uint8Array): Uint8Array } }).crypto.getRandomValues(new Uint8Array(16)));
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
    const side = (token: Uint8Array): Side => ({ token, address: undefined, credit: this.burstBytes, refilledAt: now });
    const allocation: Allocation = { sides: [side(tokens[0]), side(tokens[1])], lastActive: now, createdAt: now };
    this.#allocations.add(allocation);
    this.#byToken.set(keys[0]!, { allocation, side: 0 });
    this.#byToken.set(keys[1]!, { allocation, side: 1 });
    this.counters.allocations++;
    if (this.#sweepAt === Infinity) this.#sweepAt = now + this.#sweepEvery();
    return { tokens: [tokens[0].slice(), tokens[1].slice()] };
  }

  /**
   * One datagram from `from`. Returns what to send (the same buffer, its token swapped for the
   * receiver's) or undefined if it is not forwarded (a bind, or a counted drop).
   */
  handleDatagram(now: number, from: Address, bytes: Uint8Array): RelayTransmit | undefined {
    if (bytes.length < RELAY_TOKEN_BYTES || bytes.length > MAX_RELAY_DATAGRAM) {
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
    sender.address = from;
    const payload = bytes.length - RELAY_TOKEN_BYTES;
    if (payload === 0) {
      this.counters.binds++;
      return undefined;
    }
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
