/**
 * onAcks: the session reports a datagram's acks in one call (AckSummary), and the default
 * controller's decisions stay those of a sample per packet.
 */
import { describe, expect, it } from "vitest";
import { AckSummary, ackPacket, type SentPacket } from "../../src/congestion/controller.js";
import { DefaultController } from "../../src/congestion/default.js";
import { runStallBulk } from "../congestion-sim/stall-harness.js";

const MTU = 1200;

/** A steady bulk flow over a 10 Mbit/s, 20 ms path, acked `perAck` packets at a time. */
function drive(perAck: number): DefaultController {
  const cc = new DefaultController({ mtu: MTU });
  const acks = new AckSummary();
  const packetMs = (MTU * 8) / 10_000; // serialization at 10 Mbit/s
  let inFlight = 0;
  const pending: { at: number; record: SentPacket }[] = [];
  let now = 0;
  for (let step = 0; step < 20_000; step++) {
    now += packetMs;
    if (cc.canSend(inFlight, MTU)) {
      pending.push({ at: now + 20, record: cc.onSent(now, MTU, inFlight) });
      inFlight += MTU;
    }
    // Acks leave the receiver every `perAck` packets (or when the oldest has waited 5 ms).
    let arrived = 0;
    while (arrived < pending.length && pending[arrived]!.at <= now) arrived++;
    if (arrived > 0 && (arrived >= perAck || pending[0]!.at + 5 <= now)) {
      const batch = pending.splice(0, Math.min(arrived, perAck));
      for (const p of batch) {
        inFlight -= MTU;
        acks.add(p.record);
      }
      cc.onAcks(now, acks, inFlight);
      acks.clear();
    }
  }
  return cc;
}

describe("AckSummary and onAcks", () => {
  it("a summary of several packets estimates the path as acks of one packet each do", () => {
    const single = drive(1);
    const batched = drive(12);
    const pathBps = 10e6;
    expect(single.bandwidthEstimateBps()).toBeGreaterThan(0.8 * pathBps);
    expect(batched.bandwidthEstimateBps()).toBeGreaterThan(0.8 * pathBps);
    expect(Math.abs(batched.bandwidthEstimateBps() - single.bandwidthEstimateBps())).toBeLessThan(0.05 * pathBps);
    expect(batched.minRttMs()).toBeCloseTo(single.minRttMs(), 0);
  });

  it("ackPacket reports one packet, and clear() empties the summary", () => {
    const cc = new DefaultController({ mtu: MTU });
    const record = cc.onSent(0, MTU, 0);
    ackPacket(cc, 30, record, 0);
    expect(cc.minRttMs()).toBe(30);
    const acks = new AckSummary();
    acks.add(cc.onSent(40, MTU, 0));
    acks.add(cc.onSent(41, 500, MTU));
    expect(acks.bytes).toBe(MTU + 500);
    expect(acks.packets.length).toBe(2);
    acks.rttMs = 5;
    acks.clear();
    expect([acks.bytes, acks.packets.length, acks.rttMs]).toEqual([0, 0, NaN]);
  });

  it("the session calls the controller once per ack datagram, not once per packet", () => {
    const proto = DefaultController.prototype as unknown as { onAcks(now: number, acks: AckSummary, inFlight: number): void };
    const original = proto.onAcks;
    let calls = 0;
    let packets = 0;
    proto.onAcks = function (this: DefaultController, now: number, acks: AckSummary, inFlight: number) {
      calls++;
      packets += acks.packets.length;
      expect(acks.packets.length).toBeGreaterThan(0);
      return original.call(this, now, acks, inFlight);
    };
    try {
      runStallBulk({ seed: 3, lossRate: 0, bandwidthBps: 20e6, oneWayMs: 5, queuePackets: 100, durationMs: 2000, idleMs: 0, receiverAcks: false });
    } finally {
      proto.onAcks = original;
    }
    expect(packets).toBeGreaterThan(2000);
    // The receiver acks every few packets (its ack threshold), so a call carries several.
    expect(packets / calls).toBeGreaterThan(3);
  });
});
