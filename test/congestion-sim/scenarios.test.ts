/**
 * Issue 4's properties through the real stack (Endpoint -> session -> channels -> engine ->
 * congestion controller / network clock) over the simulator's Links, virtual clock, fixed seeds.
 * The scenarios live in bench/sim/scenarios.ts (shared with `npm run bench:sim`).
 */
import { describe, expect, it } from "vitest";
import { runBulk, runClock, runFairness, runLight } from "../../bench/sim/scenarios.js";

describe("congestion through the session on the simulator", () => {
  it.each([1, 2])("light 30 Hz x 200 B traffic is never held back (60 ms RTT, seed %i)", (seed) => {
    const r = runLight({ seed, oneWayMs: 30, bandwidthBps: 10e6, rateHz: 30, messageBytes: 200, durationMs: 5000 });
    const info = `seed ${seed}: ${JSON.stringify(r)}`;
    expect(r.lost, info).toBe(0);
    expect(r.messages, info).toBe(2 * 150);
    // Nothing but the datagram's own serialization at 10 Mbit/s (0.2 ms) may be added.
    expect(r.maxExtraDelayMs, info).toBeLessThanOrEqual(r.serializationMs + 0.01);
  });

  it("light traffic is not held back at 1 ms RTT either (pacing floor vs a tiny min RTT)", () => {
    const r = runLight({ seed: 3, oneWayMs: 0.5, bandwidthBps: 100e6, rateHz: 60, messageBytes: 200, durationMs: 3000 });
    expect(r.lost, JSON.stringify(r)).toBe(0);
    expect(r.p99ExtraDelayMs, JSON.stringify(r)).toBeLessThanOrEqual(2);
  });

  it("bulk transfer on 2 Mbit/s, 60 ms RTT, 50-packet queue: >= 85% utilization, p95 queue < 30 ms", () => {
    const seed = 4;
    const r = runBulk({ seed, bandwidthBps: 2e6, rttMs: 60, queuePackets: 50, warmupMs: 2000, durationMs: 8000 });
    const info = `seed ${seed}: ${JSON.stringify({ ...r, trace: undefined })}`;
    expect(r.utilization, info).toBeGreaterThanOrEqual(0.85);
    expect(r.p95QueueDelayMs, info).toBeLessThan(30);
    // The estimate in stats() is the bottleneck's rate in datagram bytes (no IP/UDP overhead).
    const payloadRate = 2e6 * (1200 / (1200 + 28));
    expect(r.bandwidthEstimateBps, info).toBeGreaterThan(payloadRate / 1.25);
    expect(r.bandwidthEstimateBps, info).toBeLessThan(payloadRate * 1.25);
  });

  it("100 Mbit/s, 1 ms RTT: >= 80% utilization within the first simulated second", () => {
    const r = runBulk({ seed: 5, bandwidthBps: 100e6, rttMs: 1, queuePackets: 50, warmupMs: 0, durationMs: 1000 });
    expect(r.utilization, JSON.stringify({ ...r, trace: undefined })).toBeGreaterThanOrEqual(0.8);
  });

  it("two connections through one shared 2 Mbit/s bottleneck: Jain's index >= 0.9", () => {
    const r = runFairness({ seed: 6, bandwidthBps: 2e6, rttMs: 60, queuePackets: 50, secondStartMs: 2000, warmupMs: 6000, durationMs: 16_000 });
    expect(r.jain, `seed 6: ${JSON.stringify(r)}`).toBeGreaterThanOrEqual(0.9);
    expect(r.utilization, `seed 6: ${JSON.stringify(r)}`).toBeGreaterThanOrEqual(0.85);
  });

  it.each([1, 2, 3, 4])("clock: reported error bound always contains the true error (50 +/- 10 ms each way, seed %i)", (seed) => {
    const r = runClock({ seed, latencyMs: 40, jitterMs: 20, serverClockOffsetMs: 98_765.4321, afterMs: 10_000 });
    expect(r.boundChecks, `seed ${seed}: ${JSON.stringify(r)}`).toBeGreaterThan(150);
    expect(r.boundViolations, `seed ${seed}: ${JSON.stringify(r)}`).toBe(0);
  });

  it.each([1, 2, 3, 4])("clock: within 2 ms after 5 s when clock requests go out at 10/s (seed %i)", (seed) => {
    // The session's default is 1 request/s, which leaves ~5 samples by 5 s: not enough to find
    // the fast path in both directions on a +/- 10 ms link.
    const r = runClock({ seed, latencyMs: 40, jitterMs: 20, serverClockOffsetMs: -4321.5, afterMs: 5000, clockSyncMs: 100 });
    expect(r.errorMs, `seed ${seed}: ${JSON.stringify(r)}`).toBeLessThanOrEqual(2);
    expect(r.boundViolations, `seed ${seed}: ${JSON.stringify(r)}`).toBe(0);
  });
});
