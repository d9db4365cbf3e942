/**
 * bbr-lite's Startup ends on loss only after several loss events in one round (BBRv2's rule),
 * not on the first loss that is 2 % of a small round. The old rule ended Startup at a tenth of
 * the path when a stall of the process (both ends in one, GC or a late timer) made the queue
 * test see a queue and one random loss fell in an early round of 10-50 packets
 * (test/congestion-sim/startup-stall.test.ts).
 */
import { describe, expect, it } from "vitest";
import { DefaultController } from "../../src/congestion/default.js";
import type { SentPacket } from "../../src/congestion/controller.js";

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
      cc.onAck(now, p, inFlight);
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
});
