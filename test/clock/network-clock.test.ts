import { describe, expect, it } from "vitest";
import { NetworkClock, unwrapU32 } from "../../src/clock/network-clock.js";

/** mulberry32: small seeded PRNG for the test network. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Scenario {
  seed: number;
  /** Server clock = local * (1 + driftPpm e-6) + offset0. */
  offset0: number;
  driftPpm: number;
  durationMs: number;
  /** Quantize all timestamps to whole ms, as the u32 wire does. */
  quantize: boolean;
  /** Extra asymmetry: forward path slower by this many ms. */
  asymmetryMs?: number;
}

/**
 * Runs a client probing 10 times a second over a path whose one-way delay is
 * 25 ms +/- 10 ms (uniform, independent each way), i.e. RTT 50 ms +/- 20 ms; the server holds
 * each request 0..16 ms (it replies on its next tick). Checks after every sample that the error
 * bound contains the true error. Returns the final absolute error.
 */
function run(s: Scenario): { error: number; bound: number; maxViolation: number; clock: NetworkClock } {
  const r = rng(s.seed);
  const clock = new NetworkClock();
  const serverAt = (local: number) => local * (1 + s.driftPpm * 1e-6) + s.offset0;
  const q = (x: number) => (s.quantize ? Math.floor(x) : x);
  let maxViolation = -Infinity;
  let error = NaN;
  let bound = NaN;
  for (let t0 = 0; t0 <= s.durationMs; t0 += 100) {
    const fwd = 25 + (r() * 20 - 10) + (s.asymmetryMs ?? 0);
    const back = 25 + (r() * 20 - 10);
    const hold = r() * 16;
    const serverReplyLocal = t0 + fwd + hold;
    const t3 = serverReplyLocal + back;
    clock.onSample(q(t0), q(serverAt(serverReplyLocal)), q(t3), q(hold));
    const trueOffset = serverAt(t3) - t3;
    error = Math.abs(clock.offsetMs(t3) - trueOffset);
    bound = clock.errorBoundMs(t3);
    maxViolation = Math.max(maxViolation, error - bound);
  }
  return { error, bound, maxViolation, clock };
}

describe("NetworkClock", () => {
  const cases: Scenario[] = [
    { seed: 11, offset0: 123_456.7, driftPpm: 0, durationMs: 5_000, quantize: false },
    { seed: 12, offset0: -98_765.4, driftPpm: 0, durationMs: 5_000, quantize: true },
    { seed: 13, offset0: 5_000, driftPpm: 200, durationMs: 5_000, quantize: false },
    { seed: 14, offset0: 5_000, driftPpm: -200, durationMs: 5_000, quantize: true },
    { seed: 15, offset0: 42, driftPpm: 150, durationMs: 120_000, quantize: true },
  ];
  for (const c of cases) {
    it(`within 2 ms after ${c.durationMs / 1000} s, bound always holds (seed ${c.seed}, drift ${c.driftPpm} ppm, quantized ${c.quantize})`, () => {
      const res = run(c);
      console.log(
        `[clock] seed=${c.seed} drift=${c.driftPpm}ppm q=${c.quantize} error=${res.error.toFixed(3)}ms bound=${res.bound.toFixed(3)}ms estDrift=${res.clock.driftPpm().toFixed(1)}ppm`,
      );
      expect(res.error, `seed ${c.seed}`).toBeLessThan(2);
      expect(res.maxViolation, `seed ${c.seed}: error exceeded bound`).toBeLessThanOrEqual(0);
    });
  }

  it("with an asymmetric path the estimate is biased but the bound still contains the error", () => {
    const res = run({ seed: 16, offset0: 1000, driftPpm: 50, durationMs: 10_000, quantize: true, asymmetryMs: 20 });
    // Asymmetry is invisible to any two-way exchange: the error is about asymmetry / 2.
    expect(res.error).toBeGreaterThan(5);
    expect(res.maxViolation).toBeLessThanOrEqual(0);
  });

  it("rejects impossible samples and counts them", () => {
    const c = new NetworkClock();
    expect(c.onSample(100, 5000, 90)).toBe(false); // ack before send
    expect(c.onSample(100, 5000, 200, 150)).toBe(false); // hold longer than the round trip
    expect(c.onSample(100, NaN, 200)).toBe(false);
    expect(c.onSample(0, 5000, 20_000)).toBe(false); // round trip above 10 s (seed 004)
    expect(c.rejected).toBe(4);
    expect(c.synchronized).toBe(false);
    expect(c.errorBoundMs(0)).toBe(Infinity);
    expect(c.onSample(100, 5000, 140, 10)).toBe(true);
    expect(c.offsetMs(120)).toBeCloseTo(5000 - 5 - 120, 9);
    expect(c.errorBoundMs(120)).toBeCloseTo(15 + 1, 9); // rtt/2 + quantization
  });

  it("unwrapU32 lifts wire values across the 2^32 wrap", () => {
    const ref = 2 ** 32 + 10; // just past a wrap
    expect(unwrapU32(ref, 5)).toBe(2 ** 32 + 5);
    expect(unwrapU32(ref, 2 ** 32 - 3)).toBe(2 ** 32 - 3);
    expect(unwrapU32(1000, 1500)).toBe(1500);
    expect(unwrapU32(5 * 2 ** 32 + 7, 7)).toBe(5 * 2 ** 32 + 7);
  });
});
