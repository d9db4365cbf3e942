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
import { requireInRange } from "./errors.js";

export const PING_WINDOW = 64;

/** Sort buffer shared by every window: only used inside averageBest, which never re-enters,
 *  so one per process instead of 512 bytes per window (two windows per connection). */
const SCRATCH = new Float64Array(PING_WINDOW);

export class PingWindow {
  /** The samples: PING_WINDOW doubles from `base` on, in a plain array (on the JS heap, near
   *  its owner) that a PingTracker shares between its two windows. */
  private readonly ring: number[];
  private next = 0;
  private held = 0;
  private cached = NaN;
  private cachedPercent = NaN;

  constructor(
    private readonly defaultMs: number,
    ring?: number[],
    private readonly base = 0,
  ) {
    this.ring = ring ?? doubleRing(PING_WINDOW);
  }

  /** Number of samples currently held (at most 64). */
  get size(): number {
    return this.held;
  }

  add(sampleMs: number): void {
    if (!Number.isFinite(sampleMs) || sampleMs < 0) return;
    this.ring[this.base + this.next] = sampleMs;
    this.next = (this.next + 1) % PING_WINDOW;
    if (this.held < PING_WINDOW) this.held++;
    this.cachedPercent = NaN;
  }

  /** Average of the best `percent` (0 < percent <= 100) of the samples held. */
  averageBest(percent: number): number {
    if (this.held === 0) return this.defaultMs;
    if (!(percent > 0 && percent <= 100)) percent = 100;
    if (percent === this.cachedPercent) return this.cached;
    const n = this.held;
    const ring = this.ring;
    const base = this.base;
    for (let i = 0; i < n; i++) SCRATCH[i] = ring[base + i]!;
    const s = SCRATCH.subarray(0, n);
    s.sort();
    const count = Math.max(1, Math.ceil((n * percent) / 100));
    let sum = 0;
    for (let i = 0; i < count; i++) sum += s[i]!;
    this.cached = sum / count;
    this.cachedPercent = percent;
    return this.cached;
  }
}

export interface PingConfig {
  /** Percent of the best samples averaged (default 50). */
  bestPercent?: number;
  /** Reported before any link sample (seed 004: 150 ms). */
  defaultLinkMs?: number;
  /** Reported before any transmission sample (seed 004: 200 ms). */
  defaultTransmissionMs?: number;
}

export class PingTracker {
  readonly link: PingWindow;
  readonly transmission: PingWindow;
  readonly bestPercent: number;

  constructor(config: PingConfig = {}) {
    this.bestPercent = requireInRange("bestPercent", config.bestPercent ?? 50, 1e-9, 100);
    // One array for both windows: one object and its neighbourhood per ack, not two.
    const ring = doubleRing(2 * PING_WINDOW);
    this.link = new PingWindow(requireInRange("defaultLinkMs", config.defaultLinkMs ?? 150, 0, 1e6), ring, 0);
    this.transmission = new PingWindow(
      requireInRange("defaultTransmissionMs", config.defaultTransmissionMs ?? 200, 0, 1e6),
      ring,
      PING_WINDOW,
    );
  }

  /**
   * A reliable message was acked at `now`. `firstSentAt` is when it was FIRST sent; `timesSent`
   * is how many times it was transmitted (1 = never resent).
   */
  onAck(now: number, firstSentAt: number, timesSent: number): void {
    const sample = now - firstSentAt;
    if (timesSent <= 1) this.link.add(sample);
    this.transmission.add(sample);
  }

  linkPingMs(percent = this.bestPercent): number {
    return this.link.averageBest(percent);
  }

  transmissionPingMs(percent = this.bestPercent): number {
    return this.transmission.averageBest(percent);
  }
}

/** `size` zeros as a plain array of unboxed doubles (the fractional literal fixes the kind). */
function doubleRing(size: number): number[] {
  const ring = [0.5];
  ring.length = 0;
  for (let i = 0; i < size; i++) ring.push(0);
  return ring;
}
