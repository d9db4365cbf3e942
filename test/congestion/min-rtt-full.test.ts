/**
 * The default controller's min RTT takes a full-size packet's round trip as its floor once one
 * is known (DefaultController.minRttFull): a small packet's round trip leaves out the
 * serialization of the packets a bulk flow sends, and a window sized on it binds (two-way
 * saturation, docs/CONGESTION.md). A flow of small packets alone keeps its small min RTT.
 */
import { describe, expect, it } from "vitest";
import { ackPacket } from "../../src/congestion/controller.js";
import { DefaultController } from "../../src/congestion/default.js";

const MTU = 1200;

function ack(cc: DefaultController, sentAt: number, bytes: number, rttMs: number): void {
  const p = cc.onSent(sentAt, bytes, 0);
  ackPacket(cc, sentAt + rttMs, p, 0, rttMs);
}

describe("min RTT with a full-size floor", () => {
  it("small packets' shorter round trips do not lower it below a full-size one", () => {
    const cc = new DefaultController({ mtu: MTU });
    ack(cc, 0, 1100, 3.4);
    expect(cc.minRttMs()).toBe(3.4);
    ack(cc, 10, 60, 2.6);
    expect(cc.minRttMs()).toBe(3.4);
    ack(cc, 20, 1100, 3.3); // a shorter full-size one still lowers it
    expect(cc.minRttMs()).toBe(3.3);
  });

  it("a min RTT taken from small packets first is raised to the first full-size round trip", () => {
    const cc = new DefaultController({ mtu: MTU });
    ack(cc, 0, 60, 2.6);
    expect(cc.minRttMs()).toBe(2.6);
    ack(cc, 10, 1100, 3.4);
    expect(cc.minRttMs()).toBe(3.4);
  });

  it("without full-size packets (a light flow, or 10 s after the last one) small ones set it", () => {
    const light = new DefaultController({ mtu: MTU });
    ack(light, 0, 100, 30);
    ack(light, 40, 100, 25);
    expect(light.minRttMs()).toBe(25);
    const quiet = new DefaultController({ mtu: MTU, minRttWindowMs: 10_000 });
    ack(quiet, 0, 1100, 3.4);
    ack(quiet, 11_000, 60, 2.6); // the full-size sample has expired
    expect(quiet.minRttMs()).toBe(2.6);
  });

  it("a full-size sample behind a queue never raises a min RTT that full-size packets set", () => {
    const cc = new DefaultController({ mtu: MTU, minRttWindowMs: 10_000 });
    for (let t = 0; t <= 12_000; t += 100) ack(cc, t, 1100, 40);
    expect(cc.minRttMs()).toBe(40);
    ack(cc, 12_100, 1100, 80); // one sample taken behind a queue
    expect(cc.minRttMs()).toBe(40);
    ack(cc, 12_200, 60, 30); // and a small one below the floor does not lower it
    expect(cc.minRttMs()).toBe(40);
  });
});
