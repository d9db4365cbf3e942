/**
 * A PingTracker keeps its two rings interleaved in one array (ping.ts): whatever the mix of
 * first-transmission and resent acks, and across ring wrap-around, each figure must equal what a
 * standalone window fed the same samples reports.
 */
import { describe, expect, it } from "vitest";
import { PING_WINDOW, PingTracker, PingWindow } from "../../src/congestion/ping.js";

describe("PingTracker with interleaved rings", () => {
  it("matches two standalone windows over many samples, resends and wrap-arounds", () => {
    const tracker = new PingTracker({ bestPercent: 50 });
    const link = new PingWindow(150);
    const transmission = new PingWindow(200);
    let seed = 12345;
    const next = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    let now = 1000;
    for (let i = 0; i < 5 * PING_WINDOW; i++) {
      now += 1 + next() * 40;
      const sample = 20 + next() * 200;
      // About one ack in five is for a resent message: the transmission ring runs ahead.
      const timesSent = next() < 0.2 ? 2 + Math.floor(next() * 3) : 1;
      tracker.onAck(now, now - sample, timesSent);
      if (timesSent <= 1) link.add(sample);
      transmission.add(sample);
      if (i % 7 === 0) {
        for (const percent of [10, 50, 100]) {
          expect(tracker.linkPingMs(percent)).toBe(link.averageBest(percent));
          expect(tracker.transmissionPingMs(percent)).toBe(transmission.averageBest(percent));
        }
      }
    }
    expect(tracker.link.size).toBe(PING_WINDOW);
    expect(tracker.transmission.size).toBe(PING_WINDOW);
    expect(tracker.linkPingMs()).toBe(link.averageBest(50));
    expect(tracker.transmissionPingMs()).toBe(transmission.averageBest(50));
  });

  it("reports the defaults until each ring has a sample", () => {
    const tracker = new PingTracker();
    expect(tracker.linkPingMs()).toBe(150);
    expect(tracker.transmissionPingMs()).toBe(200);
    tracker.onAck(300, 210, 2); // a resent message (90 ms): transmission only
    expect(tracker.linkPingMs()).toBe(150);
    expect(tracker.transmissionPingMs()).toBe(90);
  });
});
