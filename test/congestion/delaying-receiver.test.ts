/**
 * bbr-lite behind ackwire's delaying receiver (an ack at once after 8 packets, else after its
 * timer: 5 ms, or up to 15.25 ms when its own data is due), on the flow-level bottleneck model
 * (bottleneck-model.ts `receiverAck`). The receiver honors the sender's ack-frequency requests,
 * as ackwire's session does (ACK_FREQUENCY, docs/PROTOCOL.md §3): where the BDP is small the
 * controller asks for an ack twice per min RTT, and its window floor follows the confirmed
 * threshold. Deterministic, seed fixed.
 *
 * These hold the controller to what it does well behind such a receiver, including the cases an
 * attempt to shrink its standing queue on slow links without ack-frequency requests broke
 * (seventh session, reverted): paths whose BDP is under the window floor, a peer that waits
 * longer than expected, and a capacity that rises after the pipe was filled. The last group is
 * what the requests are for: on slow links the queue no longer holds the old window floor of
 * 10 packets (96 ms at 1 Mbit/s).
 */
import { describe, expect, it } from "vitest";
import { DefaultController } from "../../src/congestion/default.js";
import { runBottleneck, type LinkSpec } from "./bottleneck-model.js";

const PACKET = 1200;

function run(link: Omit<LinkSpec, "queuePackets">, endMs: number) {
  const controller = new DefaultController({ seed: 5 });
  const r = runBottleneck({ queuePackets: 200, ...link, receiverAck: link.receiverAck && { ...link.receiverAck, honorsRequests: true } }, [{ controller, startMs: 0 }], endMs);
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

  for (const [mbit, rtt, delay] of [[50, 1, 5], [20, 2, 15.25], [10, 5, 5]] as const) {
    it(`${mbit} Mbit/s, ${rtt} ms: acks twice per round trip keep btlBw at the link (>= 97 %; 0.92-0.93 when the peer batched 8)`, () => {
      const { r, name } = run({ rateBps: mbit * 1e6, rttMs: rtt, receiverAck: { threshold: 8, delayMs: delay } }, 20_000);
      const util = r.utilization(5_000, 20_000);
      expect(util, `${name} util=${util.toFixed(3)}`).toBeGreaterThanOrEqual(0.97);
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

  for (const [mbit, rtt, queueP95] of [[1, 1, 10], [2, 1, 10], [5, 1, 10], [1, 25, 15]] as const) {
    it(`${mbit} Mbit/s, ${rtt} ms: the link stays full and the queue stays under ${queueP95} ms (it held the old 10-packet floor)`, () => {
      const { r, controller, name } = run({ rateBps: mbit * 1e6, rttMs: rtt, receiverAck: { threshold: 8, delayMs: 15.25 } }, 30_000);
      const util = r.utilization(7_500, 30_000);
      const p95 = r.queueDelayPercentile(0.95, 7_500, 30_000);
      const why = `${name} util=${util.toFixed(3)} queue p95=${p95.toFixed(1)} ms, peer asked to ack every ${controller.peerAckThreshold()}`;
      expect(util, why).toBeGreaterThanOrEqual(0.95);
      expect(p95, why).toBeLessThanOrEqual(queueP95);
      // 10 packets of 1200 B: 96 ms at 1 Mbit/s, the floor a peer acking every 8 would need.
      expect(controller.peerAckThreshold(), why).toBeLessThan(8);
    });
  }

  it("a fast path keeps the default threshold: 50 Mbit/s, 5 ms (BDP ~26 packets)", () => {
    const { r, controller, name } = run({ rateBps: 50e6, rttMs: 5, receiverAck: { threshold: 8, delayMs: 5 } }, 10_000);
    const util = r.utilization(3_000, 10_000);
    expect(util, `${name} util=${util.toFixed(3)}`).toBeGreaterThanOrEqual(0.95);
    expect(controller.peerAckThreshold(), name).toBe(8);
  });
});
