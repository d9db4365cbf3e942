/**
 * A one-directional, seeded, sans-IO datagram link: the building block of the simulated
 * network and of the impairment proxy.
 *
 * A datagram handed to `send(now, bytes)` goes through, in this order:
 *   1. MTU check (larger datagrams are dropped: `mtuDropped`);
 *   2. random loss: Gilbert-Elliott burst loss (`burstLost`) and independent loss, both counted
 *      in `lost`. Loss happens before the bottleneck, so lost datagrams take no bandwidth;
 *   3. the bottleneck (only with `bandwidthBps`): a FIFO queue served at `bandwidthBps`.
 *      A datagram that finds the queue full is tail-dropped (`tailDropped`). Otherwise it waits
 *      behind every earlier datagram still in the queue (its queueing delay is recorded) and then
 *      takes `(size + overheadBytes) * 8 / bandwidthBps` seconds to serialize;
 *   4. propagation: `latencyMs` plus a uniform random extra in [0, jitterMs). Unless `reorder`
 *      is true, arrivals stay in send order: arrival = max(previous arrival, computed time).
 *      With `reorderRate`, that fraction of datagrams is held back an extra `reorderDelayMs`
 *      outside the FIFO rule, so later datagrams overtake them;
 *   5. corruption (1..3 distinct random bits flipped in each delivered copy) and duplication
 *      (a second copy arrives with the first, or up to `jitterMs` after it when `reorder`).
 *
 * Every impairment draws from its own forked random stream, so turning one knob on does not
 * change the pattern produced by another for the same seed.
 */

import { TimeHeap } from "../util/time-heap.js";
import { SampleRecorder } from "./recorder.js";
import { Rng, type Seed } from "./rng.js";

/** Gilbert-Elliott two-state loss model. All values are probabilities in [0, 1]. */
export interface BurstLossConfig {
  /** Per datagram, chance the channel moves from the good state to the bad state. */
  pGoodToBad: number;
  /** Per datagram, chance the channel moves from the bad state back to the good state. */
  pBadToGood: number;
  /** Loss probability while in the bad state. Default 1. */
  lossInBad?: number;
  /** Loss probability while in the good state. Default 0. */
  lossInGood?: number;
}

export interface LinkConfig {
  /** Seed for every random choice on this link. Default 1. */
  seed?: Seed;
  /** Independent loss probability per datagram, [0, 1]. */
  lossRate?: number;
  /** Bursty loss (Gilbert-Elliott), applied in addition to `lossRate`. */
  burst?: BurstLossConfig;
  /** One-way propagation delay in ms. */
  latencyMs?: number;
  /** Uniform random extra delay in [0, jitterMs) ms per datagram. */
  jitterMs?: number;
  /** If true, jitter may reorder datagrams; if false (default), arrival order = send order. */
  reorder?: boolean;
  /** Fraction of datagrams held back by `reorderDelayMs` so later ones overtake them, [0, 1]. */
  reorderRate?: number;
  /** Extra delay of a held-back datagram. Default max(10, 2 * jitterMs). */
  reorderDelayMs?: number;
  /**
   * Probability a datagram is delivered twice, [0, 1]. The copy arrives together with the
   * original, or (with `reorder: true`) up to `jitterMs` after it.
   */
  duplicateRate?: number;
  /** Probability a delivered copy has 1..3 bits flipped, [0, 1]. */
  corruptRate?: number;
  /** Bottleneck rate in bits per second. Unset: no bottleneck (infinite bandwidth). */
  bandwidthBps?: number;
  /** Bottleneck capacity in datagrams, counting the one being serialized. Unset: unbounded. */
  queuePackets?: number;
  /** Bottleneck capacity in bytes (payload + overhead), counting the one being serialized. */
  queueBytes?: number;
  /** Per-datagram bytes added at the bottleneck (e.g. 28 for IPv4 + UDP headers). Default 0. */
  overheadBytes?: number;
  /** Largest datagram carried, in bytes; larger ones are dropped. Unset: no limit. */
  mtu?: number;
}

/** What happened to one datagram handed to `send`. */
export type SendOutcome = "queued" | "lost" | "tailDropped" | "mtuDropped";

/** A configuration value makes no sense, or the link was driven wrongly. */
export class LinkError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = "LinkError";
    this.code = code;
  }
}

export interface LinkCounters {
  sent: number;
  sentBytes: number;
  delivered: number;
  deliveredBytes: number;
  /** Random losses (independent + burst). */
  lost: number;
  /** The part of `lost` caused by the Gilbert-Elliott model. */
  burstLost: number;
  duplicated: number;
  corrupted: number;
  /** Datagrams delivered after a datagram that was sent later than them. */
  reordered: number;
  /** Datagrams chosen by `reorderRate` to be held back. */
  heldBack: number;
  tailDropped: number;
  mtuDropped: number;
}

/** One delivered copy, with its history (for traces and tests). */
export interface Delivery {
  bytes: Uint8Array;
  /** Index of the original `send` call (0-based, counting every call, dropped or not). */
  sendIndex: number;
  sentAt: number;
  arriveAt: number;
  duplicate: boolean;
  corrupted: boolean;
}

interface InFlight {
  time: number;
  order: number;
  delivery: Delivery;
}

interface QueuedAtBottleneck {
  finish: number;
  bytes: number;
}

const RATE_KEYS = ["lossRate", "reorderRate", "duplicateRate", "corruptRate"] as const;

function fail(field: string, value: unknown, want: string): never {
  throw new LinkError("ERR_SIM_LINK_CONFIG", `link config ${field} = ${String(value)} is invalid: ${want}`);
}

function checkProbability(field: string, value: number | undefined): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !(value >= 0 && value <= 1)) {
    fail(field, value, "use a probability between 0 and 1 (e.g. 0.05 for 5%)");
  }
}

function checkNonNegative(field: string, value: number | undefined): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    fail(field, value, "use a finite number >= 0 (milliseconds or bytes)");
  }
}

function checkPositiveInteger(field: string, value: number | undefined): void {
  if (value === undefined) return;
  if (!Number.isInteger(value) || value < 1) fail(field, value, "use an integer >= 1");
}

/** Throws a `LinkError` naming the first invalid field. */
export function validateLinkConfig(config: LinkConfig): void {
  if (config === null || typeof config !== "object") {
    throw new LinkError("ERR_SIM_LINK_CONFIG", "link config must be an object (use {} for a perfect link)");
  }
  for (const key of RATE_KEYS) checkProbability(key, config[key]);
  checkNonNegative("latencyMs", config.latencyMs);
  checkNonNegative("jitterMs", config.jitterMs);
  checkNonNegative("reorderDelayMs", config.reorderDelayMs);
  checkNonNegative("overheadBytes", config.overheadBytes);
  if (config.bandwidthBps !== undefined) {
    if (!Number.isFinite(config.bandwidthBps) || config.bandwidthBps <= 0) {
      fail("bandwidthBps", config.bandwidthBps, "use bits per second > 0 (e.g. 2_000_000 for 2 Mbit/s), or leave it unset");
    }
  }
  checkPositiveInteger("queuePackets", config.queuePackets);
  checkPositiveInteger("queueBytes", config.queueBytes);
  checkPositiveInteger("mtu", config.mtu);
  if ((config.queuePackets !== undefined || config.queueBytes !== undefined) && config.bandwidthBps === undefined) {
    fail("queuePackets/queueBytes", config.queuePackets ?? config.queueBytes, "a queue limit needs bandwidthBps (the queue sits at the bottleneck)");
  }
  if (config.reorder !== undefined && typeof config.reorder !== "boolean") {
    fail("reorder", config.reorder, "use true or false");
  }
  if (config.burst !== undefined) {
    const b = config.burst;
    if (b === null || typeof b !== "object") fail("burst", b, "use { pGoodToBad, pBadToGood, lossInBad?, lossInGood? }");
    if (b.pGoodToBad === undefined || b.pBadToGood === undefined) {
      fail("burst", JSON.stringify(b), "pGoodToBad and pBadToGood are both required");
    }
    checkProbability("burst.pGoodToBad", b.pGoodToBad);
    checkProbability("burst.pBadToGood", b.pBadToGood);
    checkProbability("burst.lossInBad", b.lossInBad);
    checkProbability("burst.lossInGood", b.lossInGood);
    if (b.pBadToGood === 0 && b.pGoodToBad > 0) {
      fail("burst.pBadToGood", 0, "with pBadToGood = 0 the link would stay in the bad state forever; use a value > 0");
    }
  }
}

/**
 * Long-run average loss of a Gilbert-Elliott model: the stationary probability of the bad state
 * is pGoodToBad / (pGoodToBad + pBadToGood).
 */
export function burstAverageLoss(burst: BurstLossConfig): number {
  const total = burst.pGoodToBad + burst.pBadToGood;
  const inBad = total === 0 ? 0 : burst.pGoodToBad / total;
  return inBad * (burst.lossInBad ?? 1) + (1 - inBad) * (burst.lossInGood ?? 0);
}

/** All link counters at zero. */
export function emptyLinkCounters(): LinkCounters {
  return {
    sent: 0,
    sentBytes: 0,
    delivered: 0,
    deliveredBytes: 0,
    lost: 0,
    burstLost: 0,
    duplicated: 0,
    corrupted: 0,
    reordered: 0,
    heldBack: 0,
    tailDropped: 0,
    mtuDropped: 0,
  };
}

export class Link {
  readonly config: Readonly<LinkConfig>;
  /** Time each accepted datagram waited at the bottleneck behind earlier ones (ms). */
  readonly queueDelay: SampleRecorder;

  private readonly counters: LinkCounters = emptyLinkCounters();

  private readonly lossRng: Rng;
  private readonly burstRng: Rng;
  private readonly jitterRng: Rng;
  private readonly reorderRng: Rng;
  private readonly duplicateRng: Rng;
  private readonly corruptRng: Rng;

  private readonly inFlight = new TimeHeap<InFlight>();
  private order = 0;
  private sendIndex = 0;
  private lastSendAt = -Infinity;
  /** Latest arrival time given to a datagram that obeys the FIFO rule. */
  private fifoFloor = -Infinity;
  private highestDeliveredIndex = -1;
  private inBadState = false;

  // Bottleneck queue: datagrams accepted and not yet fully serialized, oldest first.
  private readonly bottleneck: QueuedAtBottleneck[] = [];
  private bottleneckHead = 0;
  private bottleneckBytes = 0;
  private bottleneckFreeAt = -Infinity;

  private readonly reorderDelayMs: number;
  private lastDelay: number | undefined;

  constructor(config: LinkConfig = {}) {
    validateLinkConfig(config);
    this.config = { ...config, burst: config.burst ? { ...config.burst } : undefined };
    const root = new Rng(config.seed ?? 1);
    this.lossRng = root.fork("loss");
    this.burstRng = root.fork("burst");
    this.jitterRng = root.fork("jitter");
    this.reorderRng = root.fork("reorder");
    this.duplicateRng = root.fork("duplicate");
    this.corruptRng = root.fork("corrupt");
    this.queueDelay = new SampleRecorder(100_000, root.fork("recorder").key);
    this.reorderDelayMs = config.reorderDelayMs ?? Math.max(10, 2 * (config.jitterMs ?? 0));
  }

  /** A snapshot of the counters. */
  get stats(): LinkCounters {
    return { ...this.counters };
  }

  /** Queueing delay (ms) of the datagram given to the latest `send`, if it entered the bottleneck. */
  get lastQueueDelay(): number | undefined {
    return this.lastDelay;
  }

  /** Datagrams (copies) accepted and not yet delivered. */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Datagrams currently held at the bottleneck as of the last `send` call. */
  get queuedPackets(): number {
    return this.bottleneck.length - this.bottleneckHead;
  }

  /**
   * Offer one datagram to the link at time `now` (ms). The bytes are copied, so the caller may
   * reuse its buffer at once. `now` must not go backwards between calls.
   */
  send(now: number, bytes: Uint8Array): SendOutcome {
    if (!Number.isFinite(now)) {
      throw new LinkError("ERR_SIM_TIME", `send(now) needs a finite time in ms, got ${now}`);
    }
    if (now < this.lastSendAt) {
      throw new LinkError(
        "ERR_SIM_TIME_BACKWARDS",
        `send(now=${now}) is earlier than the previous send (${this.lastSendAt}); drive the link with a monotonic clock`,
      );
    }
    this.lastSendAt = now;
    this.lastDelay = undefined;
    const index = this.sendIndex++;
    const c = this.counters;
    c.sent++;
    c.sentBytes += bytes.length;
    const cfg = this.config;

    if (cfg.mtu !== undefined && bytes.length > cfg.mtu) {
      c.mtuDropped++;
      return "mtuDropped";
    }

    // Both loss processes advance on every datagram that reaches this point, so the burst
    // pattern and the independent pattern do not shift each other.
    const burstLoss = this.dropByBurst();
    const randomLoss = cfg.lossRate !== undefined && cfg.lossRate > 0 && this.lossRng.next() < cfg.lossRate;
    if (burstLoss || randomLoss) {
      c.lost++;
      if (burstLoss) c.burstLost++;
      return "lost";
    }

    let departure = now;
    if (cfg.bandwidthBps !== undefined) {
      const result = this.enterBottleneck(now, bytes.length);
      if (result === undefined) {
        c.tailDropped++;
        return "tailDropped";
      }
      departure = result;
    }

    const latency = cfg.latencyMs ?? 0;
    const jitter = cfg.jitterMs ?? 0;
    const computed = departure + latency + (jitter > 0 ? this.jitterRng.next() * jitter : 0);
    let arriveAt: number;
    if (cfg.reorderRate !== undefined && cfg.reorderRate > 0 && this.reorderRng.next() < cfg.reorderRate) {
      // Held back outside the FIFO rule: later datagrams are free to arrive first.
      c.heldBack++;
      arriveAt = computed + this.reorderDelayMs;
    } else if (cfg.reorder === true) {
      arriveAt = computed;
    } else {
      arriveAt = Math.max(this.fifoFloor, computed);
      this.fifoFloor = arriveAt;
    }
    this.schedule(index, now, arriveAt, bytes, false);

    if (cfg.duplicateRate !== undefined && cfg.duplicateRate > 0 && this.duplicateRng.next() < cfg.duplicateRate) {
      c.duplicated++;
      // In order-keeping mode the copy arrives right behind the original (same time, later
      // tie order). Pushing it later would have to raise the FIFO floor, and with frequent
      // duplicates at a high send rate that floor would ratchet away from real time.
      const dupAt = cfg.reorder === true && jitter > 0 ? arriveAt + this.duplicateRng.next() * jitter : arriveAt;
      this.schedule(index, now, dupAt, bytes, true);
    }
    return "queued";
  }

  /** Arrival time of the earliest datagram in flight, or undefined if none. */
  nextDelivery(): number | undefined {
    return this.inFlight.peek()?.time;
  }

  /** The next datagram whose arrival time is <= now, or undefined. */
  pollDelivery(now: number): Uint8Array | undefined {
    return this.pollDeliveryRecord(now)?.bytes;
  }

  /** Like `pollDelivery`, with the datagram's history. */
  pollDeliveryRecord(now: number): Delivery | undefined {
    const top = this.inFlight.peek();
    if (top === undefined || top.time > now) return undefined;
    this.inFlight.pop();
    const d = top.delivery;
    const c = this.counters;
    c.delivered++;
    c.deliveredBytes += d.bytes.length;
    if (!d.duplicate) {
      if (d.sendIndex < this.highestDeliveredIndex) c.reordered++;
      else this.highestDeliveredIndex = d.sendIndex;
    }
    return d;
  }

  private schedule(sendIndex: number, sentAt: number, arriveAt: number, bytes: Uint8Array, duplicate: boolean): void {
    const copy = bytes.slice();
    const cfg = this.config;
    let corrupted = false;
    if (cfg.corruptRate !== undefined && cfg.corruptRate > 0 && copy.length > 0 && this.corruptRng.next() < cfg.corruptRate) {
      flipDistinctBits(copy, 1 + this.corruptRng.int(3), this.corruptRng);
      corrupted = true;
      this.counters.corrupted++;
    }
    this.inFlight.push({
      time: arriveAt,
      order: this.order++,
      delivery: { bytes: copy, sendIndex, sentAt, arriveAt, duplicate, corrupted },
    });
  }

  /** Advance the Gilbert-Elliott chain by one datagram; true if this datagram is lost. */
  private dropByBurst(): boolean {
    const b = this.config.burst;
    if (b === undefined) return false;
    // Loss is decided in the current state, then the chain moves for the next datagram.
    const p = this.inBadState ? (b.lossInBad ?? 1) : (b.lossInGood ?? 0);
    const lost = this.burstRng.next() < p;
    const flip = this.burstRng.next();
    if (this.inBadState) {
      if (flip < b.pBadToGood) this.inBadState = false;
    } else if (flip < b.pGoodToBad) {
      this.inBadState = true;
    }
    return lost;
  }

  /**
   * Put a datagram of `size` bytes into the bottleneck FIFO at `now`. Returns the time its last
   * bit leaves the bottleneck, or undefined if the queue is full (tail drop).
   */
  private enterBottleneck(now: number, size: number): number | undefined {
    const cfg = this.config;
    const wireBytes = size + (cfg.overheadBytes ?? 0);
    // Everything that finished serializing by `now` has left the queue.
    const q = this.bottleneck;
    while (this.bottleneckHead < q.length && q[this.bottleneckHead].finish <= now) {
      this.bottleneckBytes -= q[this.bottleneckHead].bytes;
      this.bottleneckHead++;
    }
    if (this.bottleneckHead > 1024 && this.bottleneckHead * 2 > q.length) {
      q.splice(0, this.bottleneckHead);
      this.bottleneckHead = 0;
    }
    const held = q.length - this.bottleneckHead;
    if (cfg.queuePackets !== undefined && held >= cfg.queuePackets) return undefined;
    if (cfg.queueBytes !== undefined && this.bottleneckBytes + wireBytes > cfg.queueBytes) return undefined;

    const start = Math.max(now, this.bottleneckFreeAt);
    this.lastDelay = start - now;
    this.queueDelay.record(this.lastDelay);
    const finish = start + (wireBytes * 8 * 1000) / (cfg.bandwidthBps as number);
    this.bottleneckFreeAt = finish;
    q.push({ finish, bytes: wireBytes });
    this.bottleneckBytes += wireBytes;
    return finish;
  }
}

/** Flip `count` distinct bits of `bytes` (fewer if the datagram has fewer bits). */
function flipDistinctBits(bytes: Uint8Array, count: number, rng: Rng): void {
  const totalBits = bytes.length * 8;
  const n = Math.min(count, totalBits);
  const chosen: number[] = [];
  while (chosen.length < n) {
    const bit = rng.int(totalBits);
    if (!chosen.includes(bit)) chosen.push(bit);
  }
  for (const bit of chosen) bytes[bit >>> 3] ^= 1 << (bit & 7);
}
