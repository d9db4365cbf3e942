/**
 * Default controller (bbr-lite) on the flow-level bottleneck model: the goals it is measured
 * against (docs/CONGESTION.md, "Measured numbers"). Deterministic: the model has no randomness;
 * controller seeds are fixed and printed on failure.
 */
import { describe, expect, it } from "vitest";
import { DefaultController } from "../../src/congestion/default.js";
import { jainFairness, runBottleneck } from "./bottleneck-model.js";

describe("bbr-lite on a tail-drop bottleneck", () => {
  it("2 Mbit/s, 60 ms RTT, 50-packet queue: >= 85% utilization, p95 queueing delay < 30 ms", () => {
    const seed = 1;
    const r = runBottleneck(
      { rateBps: 2_000_000, rttMs: 60, queuePackets: 50 },
      [{ controller: new DefaultController({ seed }), startMs: 0 }],
      30_000,
    );
    const util = r.utilization(2_000, 30_000);
    const p95 = r.queueDelayPercentile(0.95, 2_000, 30_000);
    const p50 = r.queueDelayPercentile(0.5, 2_000, 30_000);
    console.log(`[2M/60ms] seed=${seed} util=${util.toFixed(3)} qdelay p50=${p50.toFixed(1)}ms p95=${p95.toFixed(1)}ms drops=${r.flows[0]!.drops}`);
    expect(util, `seed ${seed}`).toBeGreaterThanOrEqual(0.85);
    expect(p95, `seed ${seed}`).toBeLessThan(30);
  });

  it("100 Mbit/s, 1 ms RTT: >= 80% utilization within the first simulated second", () => {
    const seed = 2;
    const r = runBottleneck(
      { rateBps: 100_000_000, rttMs: 1, queuePackets: 50 },
      [{ controller: new DefaultController({ seed }), startMs: 0 }],
      2_000,
    );
    const first = r.utilization(0, 1_000);
    const second = r.utilization(1_000, 2_000);
    const p95 = r.queueDelayPercentile(0.95, 0, 2_000);
    console.log(`[100M/1ms] seed=${seed} util[0,1s)=${first.toFixed(3)} util[1,2s)=${second.toFixed(3)} qdelay p95=${p95.toFixed(2)}ms drops=${r.flows[0]!.drops}`);
    expect(first, `seed ${seed}`).toBeGreaterThanOrEqual(0.8);
  });

  it("two flows sharing 2 Mbit/s get Jain fairness >= 0.9", () => {
    const seeds = [3, 4];
    const r = runBottleneck(
      { rateBps: 2_000_000, rttMs: 60, queuePackets: 50 },
      [
        { controller: new DefaultController({ seed: seeds[0] }), startMs: 0 },
        { controller: new DefaultController({ seed: seeds[1] }), startMs: 2_000 },
      ],
      40_000,
    );
    const a = r.deliveredBytes(0, 10_000, 40_000);
    const b = r.deliveredBytes(1, 10_000, 40_000);
    const j = jainFairness([a, b]);
    const util = r.utilization(10_000, 40_000);
    console.log(`[2 flows] seeds=${seeds} share=${(a / (a + b)).toFixed(3)}/${(b / (a + b)).toFixed(3)} jain=${j.toFixed(3)} util=${util.toFixed(3)} p95=${r.queueDelayPercentile(0.95, 10_000, 40_000).toFixed(1)}ms`);
    expect(j, `seeds ${seeds}`).toBeGreaterThanOrEqual(0.9);
    expect(util, `seeds ${seeds}`).toBeGreaterThanOrEqual(0.85);
  });
});
