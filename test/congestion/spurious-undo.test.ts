/**
 * Spurious-loss undo in bbr-lite: a loss that caused a reaction (in-flight cap) and is then
 * acknowledged after all restores the cap as it was before the reaction.
 */
import { describe, expect, it } from "vitest";
import { DefaultController } from "../../src/congestion/default.js";
import type { SentPacket } from "../../src/congestion/controller.js";

const MTU = 1200;

/** Steady flow at 10 ms RTT, then the RTT grows to 40 ms (a queue), then one loss. */
function reactedController(): { cc: DefaultController; lost: SentPacket; now: number } {
  const cc = new DefaultController({ mtu: MTU, seed: 1 });
  let now = 0;
  let inFlight = 0;
  const flight: SentPacket[] = [];
  for (let step = 0; step < 2000; step++) {
    now += 0.5;
    const rtt = step < 1500 ? 10 : 40;
    while (flight.length > 0 && now - flight[0]!.sentTime >= rtt) {
      const p = flight.shift()!;
      inFlight -= p.bytes;
      cc.onAck(now, p, inFlight);
    }
    if (cc.canSend(inFlight, MTU) && cc.nextSendTime(now) <= now) {
      flight.push(cc.onSent(now, MTU, inFlight));
      inFlight += MTU;
    }
  }
  // Declare losses of the newest packets until one triggers a reaction (bounded).
  for (let i = 0; i < 20 && cc.lossStats.reactions === 0 && flight.length > 0; i++) {
    const p = flight.pop()!;
    inFlight -= p.bytes;
    cc.onLoss(now, p, inFlight);
    if (cc.lossStats.reactions > 0) return { cc, lost: p, now };
  }
  throw new Error(`no loss reaction (stats ${JSON.stringify(cc.lossStats)})`);
}

describe("bbr-lite spurious-loss undo", () => {
  it("a late ack for the loss that caused a reaction restores the window", () => {
    const { cc, lost, now } = reactedController();
    const capped = cc.windowBytes();
    cc.onSpuriousLoss(now + 1, lost);
    expect(cc.lossStats.undone).toBe(1);
    expect(cc.windowBytes()).toBeGreaterThan(capped);
  });

  it("a late ack for a loss that caused no reaction changes no window", () => {
    const { cc, lost, now } = reactedController();
    const other: SentPacket = { ...lost, sentTime: lost.sentTime - 1 };
    const before = cc.windowBytes();
    cc.onSpuriousLoss(now + 1, other);
    expect(cc.lossStats.spurious).toBe(1);
    expect(cc.lossStats.undone).toBe(0);
    expect(cc.windowBytes()).toBe(before);
  });
});
