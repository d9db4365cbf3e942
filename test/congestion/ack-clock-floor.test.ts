/**
 * Slow links behind a delaying receiver (ackwire's: an ack at once after 8 packets, else after
 * a timer). Two things used to keep a standing queue there, which every other message on the
 * connection waits behind while an upload runs:
 * - the pacing floor (minWindow per min RTT) paced above the link once its BDP was under 4
 *   packets, so Drain never drained and the window held the queue;
 * - the window's ack-clock floor (the peer's threshold + 2 = 10 packets) is ~100 ms of queue at
 *   1 Mbit/s whenever btlBw reads a little high.
 * Flow-level bottleneck model with a delaying receiver (bottleneck-model.ts), deterministic,
 * seed fixed; over a real link: test/interop/real-network.test.ts.
 */
import { describe, expect, it } from "vitest";
import { DefaultController } from "../../src/congestion/default.js";
import { runBottleneck } from "./bottleneck-model.js";

/** ackwire's receiver: 8 packets, or the longest wait for data to carry the ack (15 + 0.25 ms). */
const RECEIVER = { threshold: 8, delayMs: 15.25 };
const MTU = 1200;

function run(mbit: number, rttMs: number, endMs = 30_000) {
  const controller = new DefaultController({ seed: 5 });
  const r = runBottleneck({ rateBps: mbit * 1e6, rttMs, queuePackets: 200, receiverAck: RECEIVER }, [{ controller, startMs: 0 }], endMs);
  const from = endMs / 4;
  const util = r.utilization(from, endMs);
  const p95 = r.queueDelayPercentile(0.95, from, endMs);
  const why = `[${mbit} Mbit/s, ${rttMs} ms, seed 5] util=${util.toFixed(3)} qdelay p95=${p95.toFixed(1)} ms window=${controller.windowBytes().toFixed(0)} B drops=${r.flows[0]!.drops}`;
  return { util, p95, window: controller.windowBytes(), why };
}

describe("slow links behind a delaying receiver", () => {
  for (const mbit of [1, 2, 5]) {
    it(`${mbit} Mbit/s, 1 ms: the link stays full and the queue short (p95 <= 20 ms)`, () => {
      const r = run(mbit, 1);
      // Before: p95 99 ms at 1 Mbit/s, 46 at 2, 17 at 5.
      expect(r.util, r.why).toBeGreaterThanOrEqual(0.9);
      expect(r.p95, r.why).toBeLessThanOrEqual(20);
    });
  }

  it("1 Mbit/s: the window floor is what the link needs, not the peer's full ack threshold", () => {
    const r = run(1, 1);
    // 1.25 x 125 B/ms x (min RTT + 16 ms) is under 4 packets: the floor is minWindow, and the
    // window stays well under the 10 packets (12,000 B) of the fixed floor.
    expect(r.window, r.why).toBeLessThanOrEqual(6 * MTU);
  });

  for (const [mbit, rtt] of [[20, 20], [100, 0.2]] as const) {
    it(`${mbit} Mbit/s, ${rtt} ms: unchanged, the full ack-clock floor and >= 90 % of the link`, () => {
      const r = run(mbit, rtt);
      expect(r.util, r.why).toBeGreaterThanOrEqual(0.9);
      expect(r.window, r.why).toBeGreaterThanOrEqual(10 * MTU);
    });
  }
});
