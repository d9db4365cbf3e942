/** Seed 002's binary congestion avoidance: one test per rule, exact thresholds. */
import { describe, expect, it } from "vitest";
import { BinaryController } from "../../src/congestion/binary.js";

/** Counts sends over [from, to) when the controller is polled every 1 ms and always has data. */
function countSends(c: BinaryController, from: number, to: number): number {
  let n = 0;
  for (let t = from; t < to; t += 1) {
    if (c.canSend() && c.nextSendTime(t) <= t) {
      c.onSent(t, 200, 0);
      n++;
    }
  }
  return n;
}

/** Puts a fresh controller in bad mode at time `t` (first sample initializes the average). */
function badAt(t: number, c = new BinaryController()): BinaryController {
  c.onRttSample(t, 300);
  expect(c.mode).toBe("bad");
  return c;
}

describe("BinaryController (seed 002)", () => {
  it("good mode paces at 30 packets/s", () => {
    const c = new BinaryController();
    expect(c.mode).toBe("good");
    const n = countSends(c, 0, 10_000);
    expect(n).toBeGreaterThanOrEqual(300);
    expect(n).toBeLessThanOrEqual(301); // one token of burst
  });

  it("bad mode paces at 10 packets/s", () => {
    const c = badAt(0);
    const n = countSends(c, 0, 10_000); // t stays bad: no good samples arrive
    expect(c.mode).toBe("bad");
    expect(n).toBeGreaterThanOrEqual(100);
    expect(n).toBeLessThanOrEqual(101);
  });

  it("drops to bad at once when the smoothed RTT exceeds 250 ms, not at 250 exactly", () => {
    const c = new BinaryController();
    c.onRttSample(0, 250);
    expect(c.mode).toBe("good");
    // 10% moving average: 250 -> 250.1 on a 251 sample
    c.onRttSample(1, 251);
    expect(c.smoothedRttMs).toBeCloseTo(250.1, 12);
    expect(c.mode).toBe("bad");
  });

  it("returns to good after conditions were good for t = 1 s (initial t)", () => {
    const c = badAt(0, new BinaryController({ rttSmoothing: 1 }));
    expect(c.penaltyMs).toBe(2000); // fell back within 10 s of start: 1 s doubled
    const d = new BinaryController({ rttSmoothing: 1, initialMode: "bad" });
    expect(d.penaltyMs).toBe(1000);
    d.onRttSample(5000, 50); // good conditions start
    d.nextSendTime(5999);
    expect(d.mode).toBe("bad");
    d.nextSendTime(6000);
    expect(d.mode).toBe("good");
    // a bad sample in bad mode restarts the good-conditions clock
    const e = new BinaryController({ rttSmoothing: 1, initialMode: "bad" });
    e.onRttSample(0, 50);
    e.onRttSample(900, 300);
    e.onRttSample(950, 50);
    e.nextSendTime(1900);
    expect(e.mode).toBe("bad");
    e.nextSendTime(1950);
    expect(e.mode).toBe("good");
  });

  it("doubles t when good mode falls back within 10 s, capped at 60 s", () => {
    const c = new BinaryController({ rttSmoothing: 1, initialMode: "bad" });
    let now = 0;
    const expected = [2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000];
    for (const want of expected) {
      c.onRttSample(now, 50);
      now += c.penaltyMs;
      c.nextSendTime(now);
      expect(c.mode).toBe("good");
      now += 9_999; // fall back just under 10 s after entering good
      c.onRttSample(now, 300);
      expect(c.mode).toBe("bad");
      expect(c.penaltyMs).toBe(want);
    }
  });

  it("does not double t when good mode lasted 10 s or more", () => {
    const c = new BinaryController({ rttSmoothing: 1, initialMode: "bad", initialPenaltyMs: 4000 });
    c.onRttSample(0, 50);
    c.nextSendTime(4000);
    expect(c.mode).toBe("good");
    c.onRttSample(14_000, 300); // exactly 10 s in good: one halving (4 -> 2), no doubling
    expect(c.mode).toBe("bad");
    expect(c.penaltyMs).toBe(2000);
  });

  it("halves t for every 10 s in good mode, floored at 1 s", () => {
    const c = new BinaryController({ rttSmoothing: 1, initialMode: "bad", initialPenaltyMs: 16_000 });
    c.onRttSample(0, 50);
    c.nextSendTime(16_000);
    expect(c.mode).toBe("good");
    c.nextSendTime(16_000 + 9_999);
    expect(c.penaltyMs).toBe(16_000);
    c.nextSendTime(16_000 + 10_000);
    expect(c.penaltyMs).toBe(8000);
    c.nextSendTime(16_000 + 25_000);
    expect(c.penaltyMs).toBe(4000);
    c.nextSendTime(16_000 + 60_000);
    expect(c.penaltyMs).toBe(1000); // 4 -> 2 -> 1 -> 1 (floor)
  });

  it("pacing follows the mode: 10/s after a drop, 30/s after recovery", () => {
    const c = new BinaryController({ rttSmoothing: 1 });
    expect(countSends(c, 0, 1000)).toBeGreaterThanOrEqual(30);
    c.onRttSample(1000, 300);
    const bad = countSends(c, 1000, 3000);
    expect(bad).toBeGreaterThanOrEqual(20);
    expect(bad).toBeLessThanOrEqual(21);
    c.onRttSample(3000, 50);
    c.nextSendTime(3000 + c.penaltyMs);
    expect(c.mode).toBe("good");
    const good = countSends(c, 5000, 7000);
    expect(good).toBeGreaterThanOrEqual(59);
    expect(good).toBeLessThanOrEqual(61);
  });
});
