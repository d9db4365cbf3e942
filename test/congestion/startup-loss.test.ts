/**
 * bbr-lite's Startup ends on loss only after several loss events in one round (BBRv2's rule),
 * not on the first loss that is 2 % of a small round. The old rule ended Startup at a tenth of
 * the path when a stall of the process (both ends in one, GC or a late timer) made the queue
 * test see a queue and one random loss fell in an early round of 10-50 packets
 * (test/congestion-sim/startup-stall.test.ts).
 */
import { describe, expect, it } from "vitest";
import { DefaultController } from "../../src/congestion/default.js";
import { ackPacket, type SentPacket } from "../../src/congestion/controller.js";

const MTU = 1200;
const RTT = 50;

/**
 * A controller in Startup on a 50 ms path without a bottleneck (acks after exactly one RTT),
 * for `startupMs`; then nothing is acked for `stallMs` (the process stalls) and the acks come
 * back with the stall in their round trips, until `acksAfter` packets were acked after it.
 */
function stalledStartup(startupMs: number, stallMs: number, acksAfter: number) {
  const cc = new DefaultController({ mtu: MTU, seed: 1 });
  let now = 0;
  let inFlight = 0;
  const flight: SentPacket[] = [];
  const stallEnd = startupMs + stallMs;
  let acked = 0;
  for (; acked < acksAfter; now += 0.25) {
    const acking = now < startupMs || now >= stallEnd;
    while (acking && acked < acksAfter && flight.length > 0 && now - flight[0]!.sentTime >= RTT) {
      const p = flight.shift()!;
      inFlight -= p.bytes;
      ackPacket(cc, now, p, inFlight);
      if (now >= stallEnd) acked++;
    }
    if (now < startupMs && cc.canSend(inFlight, MTU) && cc.nextSendTime(now) <= now) {
      flight.push(cc.onSent(now, MTU, inFlight));
      inFlight += MTU;
    }
  }
  return { cc, now, flight, inFlight };
}

describe("bbr-lite Startup and loss", () => {
  it("one loss in a small round, while a stall shows as a queue, does not end Startup", () => {
    const { cc, now, flight, inFlight } = stalledStartup(150, 100, 4);
    const info = () => `state ${cc.state}, queue ${cc.queueVisible()}, ${JSON.stringify(cc.lossStats)}, in flight ${flight.length}`;
    expect(cc.state, info()).toBe("startup");
    expect(cc.queueVisible(), info()).toBe(true);
    const p = flight.pop()!;
    cc.onLoss(now, p, inFlight - p.bytes);
    expect(cc.lossStats.congestive, info()).toBe(1);
    expect(cc.state, info()).toBe("startup");
    expect(cc.lossStats.reactions, info()).toBe(0);
  });

  it("many loss events in one round while a queue is visible (an overflowing buffer) still end Startup", () => {
    const { cc, now, flight } = stalledStartup(150, 100, 4);
    let inFlight = flight.length * MTU;
    for (let i = 0; i < 12 && flight.length > 0; i++) {
      const p = flight.pop()!;
      inFlight -= p.bytes;
      cc.onLoss(now + i * 0.5, p, inFlight);
    }
    const info = `state ${cc.state}, ${JSON.stringify(cc.lossStats)}`;
    expect(cc.state, info).not.toBe("startup");
    expect(cc.lossStats.reactions, info).toBe(1);
    expect(cc.windowBytes(), info).toBeLessThan(inFlight + 12 * MTU);
  });

  /** `events` loss events of `perEvent` packets each, 0.5 ms apart, in one round (after a stall that shows as a queue). */
  function lossesInOneRound(events: number, perEvent: number) {
    const { cc, now, flight } = stalledStartup(150, 100, 4);
    let inFlight = flight.length * MTU;
    for (let e = 0; e < events; e++) {
      for (let k = 0; k < perEvent && flight.length > 0; k++) {
        const p = flight.pop()!;
        inFlight -= p.bytes;
        cc.onLoss(now + e * 0.5, p, inFlight);
      }
    }
    return cc;
  }

  it("five one-packet loss events in a round do not end Startup; six do", () => {
    expect(lossesInOneRound(5, 1).state).toBe("startup");
    expect(lossesInOneRound(6, 1).state).not.toBe("startup");
  });

  it("packets declared lost at one moment are one event: twelve of them alone do not end Startup", () => {
    const cc = lossesInOneRound(1, 12);
    expect(cc.lossStats.congestive).toBe(12);
    expect(cc.state).toBe("startup");
  });

  it("twelve lost packets in two events end Startup: an overflow on a short path, whose round holds few acks", () => {
    const cc = lossesInOneRound(2, 6);
    expect(cc.state).not.toBe("startup");
    expect(cc.lossStats.reactions).toBe(1);
  });
});

