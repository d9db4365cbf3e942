/**
 * Allocation cuts must not change results: PingWindows share one sort buffer, and onSent can
 * fill a caller-owned record.
 */
import { describe, expect, it } from "vitest";
import { PingWindow } from "../../src/congestion/ping.js";
import { ackPacket, createController, type CongestionAlgorithm, type SentPacket } from "../../src/congestion/controller.js";

describe("shared ping scratch", () => {
  it("interleaved windows each read the mean of their own best half", () => {
    const a = new PingWindow(150);
    const b = new PingWindow(150);
    for (let i = 0; i < 100; i++) {
      a.add(10 + (i % 10)); // last 64 samples: 10..19; best half: mean of the 32 smallest
      b.add(200 - (i % 7));
      expect(a.averageBest(50)).toBeGreaterThanOrEqual(10);
      expect(b.averageBest(50)).toBeGreaterThanOrEqual(194);
    }
    const expectBest = (samples: number[]) => {
      const s = samples.slice(-64).sort((x, y) => x - y);
      const n = Math.ceil(s.length / 2);
      return s.slice(0, n).reduce((x, y) => x + y, 0) / n;
    };
    const sa = Array.from({ length: 100 }, (_, i) => 10 + (i % 10));
    const sb = Array.from({ length: 100 }, (_, i) => 200 - (i % 7));
    expect(a.averageBest(50)).toBeCloseTo(expectBest(sa), 9);
    expect(b.averageBest(50)).toBeCloseTo(expectBest(sb), 9);
  });
});

describe("onSent into a caller-owned record", () => {
  for (const algorithm of ["default", "binary", "fixed", "none"] as CongestionAlgorithm[]) {
    it(`${algorithm}: fills and returns the given record, same fields as a fresh one`, () => {
      const fresh = createController({ algorithm, default: { seed: 3 } });
      const reusing = createController({ algorithm, default: { seed: 3 } });
      const out: SentPacket = { sentTime: -1, bytes: -1, inFlightAtSend: -1, delivered: -1, deliveredTime: -1, firstSentTime: -1, appLimited: true };
      let inFlight = 0;
      for (let i = 0; i < 20; i++) {
        const now = i * 2;
        const a = fresh.onSent(now, 1200, inFlight);
        const b = reusing.onSent(now, 1200, inFlight, out);
        expect(b).toBe(out);
        expect({ ...b }).toEqual({ ...a });
        ackPacket(fresh, now + 1, a, inFlight);
        ackPacket(reusing, now + 1, b, inFlight);
        inFlight = 0;
      }
    });
  }
});
