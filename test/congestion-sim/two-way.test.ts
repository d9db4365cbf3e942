/**
 * Both directions of one connection saturated (bench/sim/two-way-scenario.ts): each direction's
 * acks ride the other's data through its queue. Before receive-time reports (RECEIVE_TIME,
 * docs/PROTOCOL.md §3) and the full-size min RTT floor, the upload got 17.0-17.3 Mbit/s of the
 * 19.6 a 20 Mbit/s link carries in messages, on every seed: ack compression inflated the server's
 * estimate, its queue inflated the client's round trip, and the client's window, sized on the
 * round trip of its small clock-sync packets, bound.
 */
import { describe, expect, it } from "vitest";
import { runTwoWay } from "../../bench/sim/two-way-scenario.js";

describe("both directions of one connection saturated", () => {
  it.each([
    [1, 20e6, 1.3],
    [2, 5e6, 5],
  ])("seed %i, %d bit/s, %d ms one way: each direction >= 95 % of the link", (seed, bandwidthBps, oneWayMs) => {
    const r = runTwoWay({ seed, bandwidthBps, oneWayMs, seconds: 6 });
    const info = `seed ${seed}: ${JSON.stringify(r)}`;
    expect(r.upMbps, info).toBeGreaterThanOrEqual(0.95 * r.ceilingMbps);
    expect(r.downMbps, info).toBeGreaterThanOrEqual(0.95 * r.ceilingMbps);
  }, 60_000);
});
