/**
 * bbr-lite's loss rule: loss is a congestion signal only while a queue is visible (recent RTT
 * above min RTT + margin), and a reaction never caps in-flight below one BDP.
 *
 * Driver: a tiny path model — one FIFO bottleneck of `rateBytesPerMs` with an unbounded queue,
 * fixed propagation delay, every packet acked on arrival, random loss before the bottleneck
 * from a seeded generator (lost packets are reported one RTT after their send, as a
 * packet-threshold detector would). 1 ms steps, bounded by `durationMs`.
 */
import { describe, expect, it } from "vitest";
import { DefaultController } from "../../src/congestion/default.js";
import { ackPacket, type SentPacket } from "../../src/congestion/controller.js";

const MTU = 1200;

function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

interface PathResult {
  deliveredBytes: number;
  cc: DefaultController;
}

function runPath(cc: DefaultController, o: { rateBytesPerMs: number; rttMs: number; loss: number; seed: number; durationMs: number; measureFromMs: number }): PathResult {
  const random = rng(o.seed);
  const events: { time: number; record: SentPacket; lost: boolean }[] = [];
  let inFlight = 0;
  let bottleneckFree = 0;
  let delivered = 0;
  for (let now = 0; now < o.durationMs; now += 0.25) {
    // Deliver due acks / loss reports (events are appended in time order per kind; sort is cheap here).
    events.sort((a, b) => a.time - b.time);
    while (events.length > 0 && events[0]!.time <= now) {
      const e = events.shift()!;
      inFlight -= e.record.bytes;
      if (e.lost) cc.onLoss(now, e.record, inFlight);
      else {
        ackPacket(cc, now, e.record, inFlight);
        if (now >= o.measureFromMs) delivered += e.record.bytes;
      }
    }
    for (let burst = 0; burst < 64 && cc.canSend(inFlight, MTU) && cc.nextSendTime(now) <= now; burst++) {
      const record = cc.onSent(now, MTU, inFlight);
      inFlight += MTU;
      if (random() < o.loss) {
        events.push({ time: now + o.rttMs, record, lost: true });
        continue;
      }
      const arrive = Math.max(now + o.rttMs / 2, bottleneckFree) + MTU / o.rateBytesPerMs;
      bottleneckFree = arrive;
      events.push({ time: arrive + o.rttMs / 2, record, lost: false });
    }
  }
  return { deliveredBytes: delivered, cc };
}

describe("bbr-lite loss tolerance", () => {
  it.each([
    [0.05, 11],
    [0.1, 12],
  ])("random loss %f without a queue does not cut the rate (20 Mbit/s, 80 ms; seed %i)", (loss, seed) => {
    const cc = new DefaultController({ seed: 3 });
    const rate = 20e6 / 8 / 1000; // bytes per ms
    const r = runPath(cc, { rateBytesPerMs: rate, rttMs: 80, loss, seed, durationMs: 10_000, measureFromMs: 2000 });
    const util = r.deliveredBytes / (rate * 8000);
    const info = `seed ${seed}, loss ${loss}: util ${util.toFixed(3)}, bw ${(cc.bandwidthEstimateBps() / 1e6).toFixed(2)} Mbit/s, ${JSON.stringify(cc.lossStats)}`;
    // Loss is before the bottleneck, so what the sender paces at btlBw arrives at (1 - loss).
    expect(util, info).toBeGreaterThanOrEqual(0.8 * (1 - loss));
    expect(cc.bandwidthEstimateBps(), info).toBeGreaterThan(0.85 * 20e6);
    expect(cc.lossStats.ignored, info).toBeGreaterThan(cc.lossStats.congestive);
  });

  it("the same loss while a queue is visible is a congestion signal, bounded below by one BDP", () => {
    const warm = () => {
      const cc = new DefaultController({ seed: 3 });
      runPath(cc, { rateBytesPerMs: 250, rttMs: 80, loss: 0, seed: 1, durationMs: 5000, measureFromMs: 0 });
      return cc;
    };
    const lossAfter = (rttMs: number) => {
      const cc = warm();
      const now = 5000;
      const before = cc.windowBytes();
      // Several acks at `rttMs`, then a loss of a packet sent after them, from a full window.
      let inFlight = Math.floor(before / MTU) * MTU;
      for (let i = 0; i < 8; i++) {
        const rec = cc.onSent(now - rttMs, MTU, inFlight - MTU);
        inFlight -= MTU;
        ackPacket(cc, now + i * 0.1, rec, inFlight);
      }
      const lost = cc.onSent(now, MTU, inFlight);
      const windowBefore = cc.windowBytes();
      cc.onLoss(now + 1, { ...lost, inFlightAtSend: windowBefore }, inFlight);
      return { before: windowBefore, after: cc.windowBytes(), bdp: cc.bdp(), stats: { ...cc.lossStats }, minRtt: cc.minRttMs() };
    };
    const atMin = lossAfter(80);
    const queued = lossAfter(80 * 1.6);
    const info = JSON.stringify({ atMin, queued });
    expect(atMin.stats.reactions, info).toBe(0);
    expect(atMin.after, info).toBe(atMin.before);
    expect(queued.stats.reactions, info).toBe(1);
    expect(queued.after, info).toBeLessThan(queued.before);
    expect(queued.after, info).toBeGreaterThanOrEqual(queued.bdp);
  });
});
