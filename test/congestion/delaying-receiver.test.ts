/**
 * bbr-lite behind ackwire's delaying receiver (an ack at once after 8 packets, else after its
 * timer: 5 ms, or up to 15.25 ms when its own data is due), on the flow-level bottleneck model
 * (bottleneck-model.ts `receiverAck`). Deterministic, seed fixed.
 *
 * These hold the controller to what it does well behind such a receiver, including the cases an
 * attempt to shrink its standing queue on slow links broke (seventh session, reverted; see
 * docs/CONGESTION.md "Not done / limits"): paths whose BDP is under the window floor, a peer
 * that waits longer than expected, and a capacity that rises after the pipe was filled. The
 * last case documents the limit itself: on a slow link the window floor (the peer's threshold
 * + 2 packets) stands in the queue.
 */
import { describe, expect, it } from "vitest";
import { DefaultController } from "../../src/congestion/default.js";
import { runBottleneck, type LinkSpec } from "./bottleneck-model.js";

const PACKET = 1200;

function run(link: Omit<LinkSpec, "queuePackets">, endMs: number) {
  const controller = new DefaultController({ seed: 5 });
  const r = runBottleneck({ queuePackets: 200, ...link }, [{ controller, startMs: 0 }], endMs);
  const ack = link.receiverAck;
  const name = `[${link.rateBps / 1e6} Mbit/s${link.rateChange ? ` -> ${link.rateChange.rateBps / 1e6} at ${link.rateChange.atMs} ms` : ""}, ${link.rttMs} ms, ack ${ack?.threshold}/${ack?.delayMs} ms, seed 5]`;
  return { r, controller, name };
}

describe("bbr-lite behind a delaying receiver", () => {
  for (const [mbit, rtt, delay] of [[20, 1, 5], [10, 1, 5], [20, 1, 15.25], [3, 10, 15.25], [20, 20, 15.25], [100, 0.2, 5]] as const) {
    it(`${mbit} Mbit/s, ${rtt} ms, acks after 8 packets or ${delay} ms: >= 93 % of the link`, () => {
      const { r, name } = run({ rateBps: mbit * 1e6, rttMs: rtt, receiverAck: { threshold: 8, delayMs: delay } }, 20_000);
      const util = r.utilization(5_000, 20_000);
      expect(util, `${name} util=${util.toFixed(3)}`).toBeGreaterThanOrEqual(0.93);
    });
  }

  it("a peer that waits 40 ms to ack (longer than ackwire's default): the link stays full", () => {
    const { r, name } = run({ rateBps: 2e6, rttMs: 1, receiverAck: { threshold: 8, delayMs: 40 } }, 20_000);
    const util = r.utilization(5_000, 20_000);
    expect(util, `${name} util=${util.toFixed(3)}`).toBeGreaterThanOrEqual(0.93);
  });

  it("capacity rises from 2 to 100 Mbit/s after the pipe was filled: full again within 3 s", () => {
    const { r, name } = run({ rateBps: 2e6, rttMs: 5, receiverAck: { threshold: 8, delayMs: 5 }, rateChange: { atMs: 5_000, rateBps: 100e6 } }, 10_000);
    const bytesPerMs = 100e6 / 8 / 1000;
    const util = r.deliveredBytes(0, 8_000, 10_000) / (bytesPerMs * 2_000);
    expect(util, `${name} util[8 s, 10 s)=${util.toFixed(3)}`).toBeGreaterThanOrEqual(0.9);
  });

  it("the limit: at 1 Mbit/s the queue holds up to the window floor, about 10 packets, and no more", () => {
    const { r, name } = run({ rateBps: 1e6, rttMs: 1, receiverAck: { threshold: 8, delayMs: 15.25 } }, 30_000);
    const util = r.utilization(7_500, 30_000);
    const p95 = r.queueDelayPercentile(0.95, 7_500, 30_000);
    const why = `${name} util=${util.toFixed(3)} queue p95=${p95.toFixed(1)} ms`;
    expect(util, why).toBeGreaterThanOrEqual(0.95);
    // 10 packets of 1200 B are 96 ms at 1 Mbit/s (the window floor, docs/CONGESTION.md).
    expect(p95, why).toBeLessThanOrEqual((11 * PACKET) / (1e6 / 8 / 1000));
  });
});
