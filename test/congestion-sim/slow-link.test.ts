/**
 * A latest-state stream that overloads a 64 or 128 kbit/s link (bench/sim/slow-link-scenario.ts:
 * 20 Hz x one 60 B value per 8 kbit/s of the link, ~1.4x its rate; 30 Hz inputs back). Its
 * send queue empties with every packet (queued values are replaced), so the controller saw a
 * light flow and kept its floors in full-size packets: 10 x 1452 B of window are 1.8 s at 64
 * kbit/s, and the link's queue stood at 1.6-1.8 s (p95, 128 kbit/s: 0.7 s), the client's view
 * 1.75-1.9 s stale. On a slow path the floors now count the flow's own packets (DefaultController
 * computeSlowPath()). Measured from 10 s into the connection: Startup's queue takes ~8 s to
 * leave at 64 kbit/s.
 */
import { describe, expect, it } from "vitest";
import { runSlowLink } from "../../bench/sim/slow-link-scenario.js";

describe("a latest-state stream over a slow link (simulator, 25 ms one way, 64-datagram queue)", () => {
  it.each([
    [1, 64_000],
    [2, 64_000],
    [1, 128_000],
    [2, 128_000],
  ])("seed %i, %d bit/s: queueing delay p95 < 200 ms, staleness p95 < 300 ms, the link kept full", (seed, bandwidthBps) => {
    const r = runSlowLink({ seed, bandwidthBps });
    const why = JSON.stringify(r);
    expect(r.p95QueueDelayMs, why).toBeLessThan(200);
    expect(r.p95StalenessMs, why).toBeLessThan(300);
    // Not by sending less: the link stays busy, and every input still arrives.
    expect(r.utilization, why).toBeGreaterThan(0.9);
    expect(r.inputsDelivered, why).toBeGreaterThan(600);
  });
});
