import { describe, expect, it } from "vitest";
import { BandwidthChangeDetector } from "../../src/congestion/bandwidth-events.js";
import { CongestionConfigError } from "../../src/congestion/errors.js";
import { LossEstimator } from "../../src/congestion/loss.js";
import { PING_WINDOW, PingTracker, PingWindow } from "../../src/congestion/ping.js";
import { RttEstimator } from "../../src/congestion/rtt.js";

describe("RttEstimator (RFC 6298)", () => {
  it("uses the 1 s initial RTO before any sample (2.1) and backs off from it", () => {
    const r = new RttEstimator();
    expect(r.rtoMs()).toBe(1000);
    r.onRetransmitTimeout();
    expect(r.rtoMs()).toBe(2000);
    r.onRetransmitTimeout();
    expect(r.rtoMs()).toBe(2000); // capped by maxRtoMs (default 2 s)
  });

  it("matches a hand-computed SRTT/RTTVAR/RTO sequence (2.2, 2.3)", () => {
    const r = new RttEstimator({ minRtoMs: 30, maxRtoMs: 2000, granularityMs: 1 });
    r.onSample(0, 100); // SRTT 100, RTTVAR 50, RTO 100 + 4*50
    expect([r.smoothedMs, r.rttVarMs, r.rtoMs()]).toEqual([100, 50, 300]);
    r.onSample(10, 120); // RTTVAR .75*50+.25*20 = 42.5 ; SRTT .875*100+.125*120 = 102.5
    expect([r.smoothedMs, r.rttVarMs, r.rtoMs()]).toEqual([102.5, 42.5, 272.5]);
    r.onSample(20, 80); // RTTVAR .75*42.5+.25*22.5 = 37.5 ; SRTT .875*102.5+10 = 99.6875
    expect([r.smoothedMs, r.rttVarMs, r.rtoMs()]).toEqual([99.6875, 37.5, 249.6875]);
    expect(r.latestMs).toBe(80);
    expect(r.minMs).toBe(80);
    // seed 002 EWMA: 100 -> 102 -> 99.8
    expect(r.ewma10Ms).toBeCloseTo(99.8, 12);
    // RFC 3550-style jitter: 20/16 = 1.25, then 1.25 + (40 - 1.25)/16
    expect(r.jitterMs).toBeCloseTo(3.671875, 12);
  });

  it("backs off exponentially (5.5), caps at maxRtoMs, and a new sample ends the backoff (5.7)", () => {
    const r = new RttEstimator();
    r.onSample(0, 100);
    r.onSample(10, 120);
    r.onSample(20, 80);
    const base = 249.6875;
    r.onRetransmitTimeout();
    expect(r.rtoMs()).toBe(base * 2);
    r.onRetransmitTimeout();
    r.onRetransmitTimeout();
    expect(r.rtoMs()).toBe(base * 8);
    r.onRetransmitTimeout();
    expect(r.rtoMs()).toBe(2000);
    expect(r.backoffCount).toBe(4);
    r.onSample(30, 80);
    expect(r.backoffCount).toBe(0);
    expect(r.rtoMs()).toBe(r.baseRto());
    expect(r.rtoMs()).toBeLessThan(300);
  });

  it("never sets an RTO below the path's own SRTT + 4 RTTVAR: maxRtoMs caps the backoff, not the path (found by a review)", () => {
    // A 2.2 s round trip (the demo's --latency 2000 plus queueing): capped at 2 s, every packet
    // was resent before its ack could arrive, for ever (314 resends at 0 % loss, a 1 MiB
    // transfer stuck 70 s).
    const r = new RttEstimator();
    for (let i = 0; i < 20; i++) r.onSample(i * 100, 2200 + (i % 2) * 100);
    const raw = r.smoothedMs + 4 * r.rttVarMs;
    expect(raw).toBeGreaterThan(2200);
    expect(r.rtoMs()).toBeCloseTo(raw, 9);
    expect(r.baseRto()).toBeCloseTo(raw, 9);
    // Backoff doubles no further than max(maxRtoMs, the base): a resend at most every RTO.
    r.onRetransmitTimeout();
    expect(r.rtoMs()).toBeCloseTo(raw, 9);
    // Below the cap nothing changes: 400 + 4 x 200, doubled, capped at 2000.
    const q = new RttEstimator();
    q.onSample(0, 400);
    expect(q.rtoMs()).toBe(1200);
    q.onRetransmitTimeout();
    expect(q.rtoMs()).toBe(2000);
  });

  it("clamps to the minimum RTO and applies the clock granularity G", () => {
    const r = new RttEstimator({ minRtoMs: 30 });
    for (let i = 0; i < 200; i++) r.onSample(i, 2);
    expect(r.rtoMs()).toBe(30);
    const g = new RttEstimator({ minRtoMs: 0, granularityMs: 1 });
    for (let i = 0; i < 400; i++) g.onSample(i, 10);
    // RTTVAR decays toward 0, so RTO -> SRTT + max(G, 4*RTTVAR) -> 10 + 1
    expect(g.rtoMs()).toBeGreaterThanOrEqual(11);
    expect(g.rtoMs()).toBeLessThan(11.001);
  });

  it("min RTT is windowed: a route change to a longer path is noticed after the window", () => {
    const r = new RttEstimator({ minRttWindowMs: 10_000 });
    r.onSample(0, 50);
    for (let t = 1000; t <= 9000; t += 1000) r.onSample(t, 200);
    expect(r.minMs).toBe(50);
    for (let t = 10_000; t <= 21_000; t += 1000) r.onSample(t, 200);
    expect(r.minMs).toBe(200);
  });

  it("ignores garbage samples and rejects bad config with a typed error", () => {
    const r = new RttEstimator();
    r.onSample(0, NaN);
    r.onSample(0, -5);
    expect(r.sampleCount).toBe(0);
    expect(() => new RttEstimator({ minRtoMs: 5000, maxRtoMs: 1000 })).toThrow(CongestionConfigError);
  });
});

describe("PingTracker (seed 004)", () => {
  it("averages the best N percent of the most recent 64 samples", () => {
    const w = new PingWindow(150);
    expect(w.averageBest(50)).toBe(150); // default before samples
    // 100 samples: values 1..100 in scrambled order; only the last 64 stay.
    const values: number[] = [];
    for (let i = 0; i < 100; i++) values.push(((i * 37) % 100) + 1);
    for (const v of values) w.add(v);
    expect(w.size).toBe(PING_WINDOW);
    const kept = values.slice(-64).sort((a, b) => a - b);
    const avg = (n: number) => kept.slice(0, n).reduce((a, b) => a + b, 0) / n;
    expect(w.averageBest(50)).toBeCloseTo(avg(32), 12);
    expect(w.averageBest(100)).toBeCloseTo(avg(64), 12);
    expect(w.averageBest(10)).toBeCloseTo(avg(7), 12); // ceil(6.4)
    expect(w.averageBest(1)).toBeCloseTo(avg(1), 12);
  });

  it("link ping takes first-transmission acks only, transmission ping takes all, from first send", () => {
    const p = new PingTracker({ bestPercent: 100 });
    p.onAck(1100, 1000, 1); // 100 ms, first try
    p.onAck(1500, 1000, 3); // resent twice: 500 ms from first send
    expect(p.link.size).toBe(1);
    expect(p.transmission.size).toBe(2);
    expect(p.linkPingMs()).toBe(100);
    expect(p.transmissionPingMs()).toBe(300);
    expect(p.transmissionPingMs(50)).toBe(100);
  });
});

describe("LossEstimator", () => {
  it("windowed rate counts only the last `window` outcomes; EWMA moves toward the outcome", () => {
    const l = new LossEstimator({ window: 10, ewmaGain: 0.5 });
    expect(l.windowedRate()).toBe(0);
    for (let i = 0; i < 10; i++) l.onLost();
    expect(l.windowedRate()).toBe(1);
    for (let i = 0; i < 7; i++) l.onDelivered();
    expect(l.windowedRate()).toBeCloseTo(0.3, 12);
    expect(l.smoothedRate()).toBeCloseTo((1 - 2 ** -10) / 128, 12); // 10 losses then 7 halvings
    expect(l.totalLost + l.totalDelivered).toBe(17);
  });
});

describe("BandwidthChangeDetector", () => {
  it("reports the first estimate and then only moves of more than 20% from the last report", () => {
    const d = new BandwidthChangeDetector();
    expect(d.update(0, 0)).toBeUndefined();
    expect(d.update(1, 1_000_000)?.bps).toBe(1_000_000);
    expect(d.update(2, 1_190_000)).toBeUndefined();
    expect(d.update(3, 1_200_000)).toBeUndefined(); // exactly 20%: not more
    const up = d.update(4, 1_210_000);
    expect(up?.previousBps).toBe(1_000_000);
    expect(up?.ratio).toBeCloseTo(1.21, 12);
    // slow drift accumulates against the last REPORTED value
    expect(d.update(5, 1_000_000)).toBeUndefined();
    expect(d.update(6, 960_000)?.bps).toBe(960_000);
  });
});
