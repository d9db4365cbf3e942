/**
 * Seed 004's two ping figures.
 *
 * - Link ping: round trips of messages acked on their FIRST transmission only (what a ping tool
 *   would show).
 * - Transmission ping: time from a reliable message's FIRST send to its ack, resends included
 *   (what the application actually waits).
 *
 * Each is a ring of the most recent 64 samples (O(1) insert). The reading is the average of the
 * best (smallest) N percent of the samples held, N configurable (default 50). Reading sorts a
 * 64-entry copy, at most once per insert (the result is cached until the next insert).
 *
 * Interface:
 *   const p = new PingTracker({ bestPercent: 50 });
 *   p.onAck(now, firstSentAt, timesSent);    // timesSent 1 -> both figures, >1 -> transmission only
 *   p.linkPingMs(); p.transmissionPingMs();
 *
 * Differences from the seed's code (the idea is kept, the code is not): the seed pre-fills the
 * 64 slots with defaults (150 / 200 ms), which biases the first readings; here only real samples
 * are averaged and the default is reported only while there are none. The count averaged is
 * ceil(held * N / 100), as in the seed, and at least 1.
 */
import { doubleArray } from "./doubles.js";
import { requireInRange } from "./errors.js";
import { PING_META_BASE, PING_META_SLOTS, PING_RING_BASE, PING_RING_SLOTS } from "./state-layout.js";

export const PING_WINDOW = 64;

/** Sort buffer shared by every window: only used inside averageBest, which never re-enters,
 *  so one per process instead of 512 bytes per window (two windows per connection). */
const SCRATCH = new Float64Array(PING_WINDOW);

// A window's bookkeeping, 4 doubles at its `meta` offset in the array it shares with its ring.
const NEXT = 0;
const HELD = 1;
/** averageBest's last percent (NaN: nothing cached) and result. */
const CACHED_PERCENT = 2;
const CACHED = 3;
const META_SLOTS = 4;

function initWindow(a: number[], meta: number): void {
  a[meta + CACHED_PERCENT] = NaN;
  a[meta + CACHED] = NaN;
}

/** One sample into the window whose bookkeeping is at `meta` and samples at `ring`, every
 *  `stride` slots. */
function addSample(a: number[], meta: number, ring: number, stride: number, sampleMs: number): void {
  if (!Number.isFinite(sampleMs) || sampleMs < 0) return;
  const next = a[meta + NEXT];
  a[ring + next * stride] = sampleMs;
  a[meta + NEXT] = next === PING_WINDOW - 1 ? 0 : next + 1;
  if (a[meta + HELD] < PING_WINDOW) a[meta + HELD]++;
  a[meta + CACHED_PERCENT] = NaN;
}

export class PingWindow {
  /** The bookkeeping (at `meta`) and the PING_WINDOW samples (from `ring` on), in a plain array
   *  of doubles (doubles.ts) that a PingTracker shares between its two windows: an ack touches
   *  that one array, not the window objects. */
  private readonly a: number[];

  constructor(
    private readonly defaultMs: number,
    array?: number[],
    private readonly meta = 0,
    private readonly ring = META_SLOTS,
    /** Slots from one sample to the next (a PingTracker interleaves its two rings). */
    private readonly stride = 1,
  ) {
    this.a = array ?? doubleArray(META_SLOTS + PING_WINDOW);
    initWindow(this.a, meta);
  }

  /** Number of samples currently held (at most 64). */
  get size(): number {
    return this.a[this.meta + HELD];
  }

  add(sampleMs: number): void {
    addSample(this.a, this.meta, this.ring, this.stride, sampleMs);
  }

  /** Average of the best `percent` (0 < percent <= 100) of the samples held. */
  averageBest(percent: number): number {
    const a = this.a;
    const meta = this.meta;
    const n = a[meta + HELD];
    if (n === 0) return this.defaultMs;
    if (!(percent > 0 && percent <= 100)) percent = 100;
    if (percent === a[meta + CACHED_PERCENT]) return a[meta + CACHED];
    const ring = this.ring;
    const stride = this.stride;
    for (let i = 0; i < n; i++) SCRATCH[i] = a[ring + i * stride]!;
    const s = SCRATCH.subarray(0, n);
    s.sort();
    const count = Math.max(1, Math.ceil((n * percent) / 100));
    let sum = 0;
    for (let i = 0; i < count; i++) sum += s[i]!;
    const average = sum / count;
    a[meta + CACHED] = average;
    a[meta + CACHED_PERCENT] = percent;
    return average;
  }
}

export interface PingConfig {
  /** Percent of the best samples averaged (default 50). */
  bestPercent?: number;
  /** Reported before any link sample (default 150 ms, as MTUDP). */
  defaultLinkMs?: number;
  /** Reported before any transmission sample (default 200 ms, as MTUDP). */
  defaultTransmissionMs?: number;
}

// Layout of a tracker's array: both windows' bookkeeping first (one cache line), then the two
// rings interleaved (link sample k, transmission sample k, ...): a first-transmission ack adds
// the same sample to both, and while neither ring has taken a sample the other has not (no
// resends), both land in one cache line instead of two 512 bytes apart.
// The array is a connection's state array (state-layout.ts: the bookkeeping at
// PING_META_BASE = 104, the rings from PING_RING_BASE = 112 on) or one of its own of that size.
const LINK_META = 104;
const TRANSMISSION_META = LINK_META + META_SLOTS;
const LINK_RING = 112;
const TRANSMISSION_RING = LINK_RING + 1;
const RING_STRIDE = 2;
const END = LINK_RING + 2 * PING_WINDOW;
if (LINK_META !== PING_META_BASE || 2 * META_SLOTS > PING_META_SLOTS || LINK_RING !== PING_RING_BASE || 2 * PING_WINDOW > PING_RING_SLOTS) {
  throw new Error("state-layout.ts: ping regions do not match ping.ts");
}

export class PingTracker {
  readonly link: PingWindow;
  readonly transmission: PingWindow;
  readonly bestPercent: number;
  /** Both windows' state (one array: one object and its neighbourhood per ack, not three). */
  private readonly a: number[];

  constructor(config: PingConfig = {}, state?: number[]) {
    this.a = state ?? doubleArray(END);
    this.bestPercent = requireInRange("bestPercent", config.bestPercent ?? 50, 1e-9, 100);
    const a = this.a;
    this.link = new PingWindow(requireInRange("defaultLinkMs", config.defaultLinkMs ?? 150, 0, 1e6), a, LINK_META, LINK_RING, RING_STRIDE);
    this.transmission = new PingWindow(
      requireInRange("defaultTransmissionMs", config.defaultTransmissionMs ?? 200, 0, 1e6),
      a,
      TRANSMISSION_META,
      TRANSMISSION_RING,
      RING_STRIDE,
    );
  }

  /**
   * A reliable message was acked at `now`. `firstSentAt` is when it was FIRST sent; `timesSent`
   * is how many times it was transmitted (1 = never resent).
   */
  onAck(now: number, firstSentAt: number, timesSent: number): void {
    pingTrackerOnAck(this.a, now, firstSentAt, timesSent);
  }

  linkPingMs(percent = this.bestPercent): number {
    return this.link.averageBest(percent);
  }

  transmissionPingMs(percent = this.bestPercent): number {
    return this.transmission.averageBest(percent);
  }
}

/**
 * PingTracker.onAck on the tracker whose array is `state`, a connection's state array
 * (state-layout.ts; the tracker was constructed with it): its caller need not touch the
 * tracker object, one cold cache line less per sample with many connections.
 */
export function pingTrackerOnAck(state: number[], now: number, firstSentAt: number, timesSent: number): void {
  const sample = now - firstSentAt;
  if (timesSent <= 1) addSample(state, LINK_META, LINK_RING, RING_STRIDE, sample);
  addSample(state, TRANSMISSION_META, TRANSMISSION_RING, RING_STRIDE, sample);
}
