/**
 * A 30 Hz stream of 200-byte messages on an uncongested 2 Mbit/s, 60 ms link must never be held
 * back by the default controller's window or pacing (no added latency).
 */
import { describe, expect, it } from "vitest";
import { ackPacket, type SentPacket } from "../../src/congestion/controller.js";
import { DefaultController } from "../../src/congestion/default.js";

function run(callAppLimited: boolean, rttMs: number): number {
  const cc = new DefaultController({ seed: 5 });
  const acks: Array<{ at: number; rec: SentPacket }> = [];
  let inFlight = 0;
  let held = 0;
  const serviceMs = (200 * 8) / 2000; // 0.8 ms at 2 Mbit/s
  for (let k = 0; k < 30 * 60; k++) {
    const now = 1_000_000 + (k * 1000) / 30;
    while (acks.length > 0 && acks[0]!.at <= now) {
      const a = acks.shift()!;
      inFlight -= a.rec.bytes;
      ackPacket(cc, a.at, a.rec, inFlight);
    }
    if (!cc.canSend(inFlight, 200) || cc.nextSendTime(now) > now) held++;
    const rec = cc.onSent(now, 200, inFlight);
    inFlight += 200;
    acks.push({ at: now + rttMs + serviceMs, rec });
    if (callAppLimited) cc.onAppLimited(now, inFlight);
  }
  return held;
}

describe("light application-limited traffic", () => {
  for (const rtt of [1, 60, 300]) {
    it(`30 Hz x 200 B is never held back (RTT ${rtt} ms, session reports app-limited)`, () => {
      expect(run(true, rtt)).toBe(0);
    });
    it(`30 Hz x 200 B is never held back (RTT ${rtt} ms, session never reports app-limited)`, () => {
      expect(run(false, rtt)).toBe(0);
    });
  }
});
