/**
 * A bulk upload through a bottleneck whose buffer is too shallow to show a queue (a few packets:
 * under the up-probe gate's max(1 ms, 0.125 min RTT), and under the queue test's margin, so the
 * overflow losses are ignored as random ones). ProbeBW's up-probe is lengthened by the reports'
 * gap only after a probe that found spare capacity (probeExtensionMs): here the queue cannot
 * say so, and a review found every probe lengthened, each at 1.25 into a full buffer, 35-60 %
 * more drops than one-min-RTT probes (10 Mbit/s, 4 packets, 25 ms one way: 1460 -> 2335 in
 * 30 s). The gate also stays shut after a probe that lost more than 5 % of what it sent.
 * Bounds: the drops of the code before the lengthened probe, 15 s, seeds 1-2 (928 / 938 at
 * 10 Mbit/s, 646 / 647 at 5), plus about 15 %; the probe lengthened every cycle dropped 1363 /
 * 1377 and 858 / 865.
 */
import { describe, expect, it } from "vitest";
import { runStallBulk } from "./stall-harness.js";

describe("a full path with a shallow buffer: the up-probe is not lengthened into it", () => {
  it.each([
    // [seed, bit/s, queue packets, one-way ms, tail drops at most in 15 s]
    [1, 10e6, 4, 25, 1080],
    [2, 10e6, 4, 25, 1080],
    [1, 5e6, 3, 50, 750],
    [2, 5e6, 3, 50, 750],
  ])("seed %i, %d bit/s, %i-packet buffer, %i ms one way: drops <= %i", (seed, bandwidthBps, queuePackets, oneWayMs, maxDrops) => {
    const r = runStallBulk({ seed, lossRate: 0, bandwidthBps, queuePackets, durationMs: 15_000, idleMs: 0, oneWayMs });
    const info = `seed ${seed}: drops ${r.tailDropped}, dispatched ${r.dispatched}, loss ${JSON.stringify(r.controller.lossStats)}`;
    expect(r.tailDropped, info).toBeLessThanOrEqual(maxDrops);
    // Still fills the path: the drops are the shallow buffer's, not a stall's.
    expect(r.dispatched, info).toBeGreaterThan(((bandwidthBps / 8) * 15 * 0.8) / 1200);
  }, 60_000);
});
