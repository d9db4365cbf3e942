/**
 * Random (non-congestive) loss and jitter through the real stack: the default controller must
 * find the capacity despite loss that comes without a queue, and must not keep a standing queue
 * because jitter bunches acks. Scenarios from bench/sim/scenarios.ts (as `npm run bench:sim`),
 * shorter windows, fixed seeds printed on failure.
 */
import { describe, expect, it } from "vitest";
import { runBulk } from "../../bench/sim/scenarios.js";

const info = (seed: number, r: ReturnType<typeof runBulk>) => `seed ${seed}: ${JSON.stringify({ ...r, trace: undefined })}`;

describe("default controller on lossy and jittery paths (simulator, real Endpoints)", () => {
  it.each([
    [0.05, 0.7, 31],
    [0.1, 0.6, 32],
  ])("20 Mbit/s, 80 ms RTT, generous queue, %f random loss each way: goodput >= %f of the link (seed %i)", (lossRate, goal, seed) => {
    const r = runBulk({ seed, bandwidthBps: 20e6, rttMs: 80, queuePackets: 400, lossRate, senderWindow: 2048, warmupMs: 2000, durationMs: 8000 });
    expect(r.randomLost, info(seed, r)).toBeGreaterThan(0);
    expect(r.goodputRatio, info(seed, r)).toBeGreaterThanOrEqual(goal);
    // The estimate stays near the bottleneck (19.5 Mbit/s of datagram bytes), not near 1 Mbit/s.
    expect(r.bandwidthEstimateBps, info(seed, r)).toBeGreaterThan(0.8 * 19.54e6);
  });

  it.each([33, 34])("2 Mbit/s, 60 ms RTT, 50-packet queue, 2%% random loss: >= 85%% utilization, p95 queue < 30 ms (seed %i)", (seed) => {
    const r = runBulk({ seed, bandwidthBps: 2e6, rttMs: 60, queuePackets: 50, lossRate: 0.02, warmupMs: 2000, durationMs: 12_000 });
    expect(r.randomLost, info(seed, r)).toBeGreaterThan(0);
    expect(r.utilization, info(seed, r)).toBeGreaterThanOrEqual(0.85);
    expect(r.p95QueueDelayMs, info(seed, r)).toBeLessThan(30);
  });

  it.each([35, 36])("2 Mbit/s, 60 ms RTT, 2 ms jitter each way: p95 queue < 30 ms, >= 85%% utilization (seed %i)", (seed) => {
    const r = runBulk({ seed, bandwidthBps: 2e6, rttMs: 60, queuePackets: 50, jitterMs: 2, warmupMs: 2000, durationMs: 12_000 });
    expect(r.p95QueueDelayMs, info(seed, r)).toBeLessThan(30);
    expect(r.utilization, info(seed, r)).toBeGreaterThanOrEqual(0.85);
  });

  it("2 Mbit/s with 2% loss AND 2 ms jitter: p95 queue < 30 ms, >= 85% utilization (seed 37)", () => {
    const seed = 37;
    const r = runBulk({ seed, bandwidthBps: 2e6, rttMs: 60, queuePackets: 50, lossRate: 0.02, jitterMs: 2, warmupMs: 2000, durationMs: 12_000 });
    expect(r.p95QueueDelayMs, info(seed, r)).toBeLessThan(30);
    expect(r.utilization, info(seed, r)).toBeGreaterThanOrEqual(0.85);
  });
});
