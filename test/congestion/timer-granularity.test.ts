/**
 * The default controller on a path faster than the sender's timers: loopback-like RTT (0.2 ms)
 * at 60 MB/s, a sender whose timers fire no sooner than 1 ms (whole milliseconds, rounded up,
 * plus 0.2 ms of lateness, as setTimeout on Node/Bun/Deno), and a receiver that acks at once
 * after 8 packets, else after its 5 ms ack-delay timer (ackwire's session rule). Virtual clock,
 * no randomness; every loop is bounded by the simulated end time and an event cap.
 *
 * What goes wrong without the send quantum and the ack-threshold window floor (both seen on
 * real loopback, `node dist/bench/sim/loopback.js`): the pacer asks for a wake-up a few
 * microseconds away, gets one 1+ ms later, and the bucket (1 ms of the rate) cannot hold what
 * the oversleep earned; and a window below 8 packets waits for the receiver's 5 ms timer every
 * round, so the delivery rate it measures keeps the window that small.
 */
import { describe, expect, it } from "vitest";
import { ackPacket, type SentPacket } from "../../src/congestion/controller.js";
import { DefaultController, type DefaultConfig } from "../../src/congestion/default.js";
import { Pacer } from "../../src/congestion/pacer.js";

const MTU = 1200;

interface PathSpec {
  /** Bottleneck rate, bytes per ms. */
  rate: number;
  /** Round-trip propagation delay, ms. */
  rttMs: number;
  ackThreshold: number;
  ackDelayMs: number;
  /** Timer lateness added to every sender timer (ms). */
  timerLateMs: number;
  /** Every `stallEveryMs` the receiving process stalls for `stallMs` (GC, other work). */
  stallEveryMs: number;
  stallMs: number;
}

const LOOPBACK: PathSpec = { rate: 60_000, rttMs: 0.2, ackThreshold: 8, ackDelayMs: 5, timerLateMs: 0.2, stallEveryMs: 100, stallMs: 10 };

/** When a stalled receiver gets to a packet that arrived at `t`. */
function afterStall(path: PathSpec, t: number): number {
  const phase = t % path.stallEveryMs;
  return phase < path.stallMs ? t - phase + path.stallMs : t;
}

interface Ev {
  time: number;
  kind: "arrive" | "ack" | "senderTimer" | "ackTimer";
  records?: SentPacket[];
}

/** Runs `endMs` of bulk transfer; returns delivered bytes per ms (acked at the sender). */
function runTimerGranular(config: DefaultConfig, path: PathSpec, endMs: number): { rate: number; minWindow: number } {
  const cc = new DefaultController({ mtu: MTU, ...config });
  const events: Ev[] = [];
  const push = (e: Ev): void => {
    let i = events.length;
    while (i > 0 && events[i - 1]!.time > e.time) i--;
    events.splice(i, 0, e);
  };
  let inFlight = 0;
  let ackedBytes = 0;
  let bottleneckFreeAt = 0;
  let senderTimerAt = Infinity;
  // receiver
  let unacked: SentPacket[] = [];
  let ackTimerAt = Infinity;
  let minWindow = Infinity;

  const sendAll = (now: number): void => {
    for (let n = 0; n < 10_000; n++) {
      if (!cc.canSend(inFlight, MTU)) return;
      const at = cc.nextSendTime(now);
      if (at > now) {
        // A runtime timer: whole milliseconds, at least 1, rounded up, then late.
        const fire = now + Math.max(1, Math.ceil(at - now)) + path.timerLateMs;
        if (fire < senderTimerAt) {
          senderTimerAt = fire;
          push({ time: fire, kind: "senderTimer" });
        }
        return;
      }
      const record = cc.onSent(now, MTU, inFlight);
      inFlight += MTU;
      bottleneckFreeAt = Math.max(bottleneckFreeAt, now) + MTU / path.rate;
      push({ time: afterStall(path, bottleneckFreeAt + path.rttMs / 2), kind: "arrive", records: [record] });
    }
  };
  const sendAck = (now: number): void => {
    push({ time: now + path.rttMs / 2, kind: "ack", records: unacked });
    unacked = [];
    ackTimerAt = Infinity;
  };

  let t = 0;
  let measuredFrom = -1;
  let ackedAtStart = 0;
  sendAll(0);
  for (let steps = 0; steps < 2_000_000 && events.length > 0; steps++) {
    const e = events.shift()!;
    t = e.time;
    if (t > endMs) break;
    if (measuredFrom < 0 && t >= endMs / 4) {
      measuredFrom = t;
      ackedAtStart = ackedBytes;
    }
    switch (e.kind) {
      case "arrive":
        unacked.push(...e.records!);
        if (unacked.length >= path.ackThreshold) sendAck(t);
        else if (ackTimerAt === Infinity) {
          ackTimerAt = t + path.ackDelayMs;
          push({ time: afterStall(path, ackTimerAt), kind: "ackTimer" });
        }
        break;
      case "ackTimer":
        if (unacked.length > 0) sendAck(t);
        break;
      case "ack":
        for (const r of e.records!) {
          inFlight -= r.bytes;
          ackedBytes += r.bytes;
          ackPacket(cc, t, r, inFlight);
        }
        if (t >= endMs / 4 && cc.state !== "probe-rtt") minWindow = Math.min(minWindow, cc.windowBytes());
        sendAll(t);
        break;
      case "senderTimer":
        if (t >= senderTimerAt) {
          senderTimerAt = Infinity;
          sendAll(t);
        }
        break;
    }
  }
  return { rate: (ackedBytes - ackedAtStart) / (t - measuredFrom), minWindow };
}

describe("default controller with 1 ms timers on a sub-millisecond path", () => {
  it("keeps >= 80 % of a 60 MB/s, 0.2 ms RTT path busy, more than packet-by-packet pacing with a 4-packet floor", () => {
    const now = runTimerGranular({}, LOOPBACK, 2000);
    const old = runTimerGranular({ sendQuantumMs: 0, peerAckThresholdPackets: 0 }, LOOPBACK, 2000);
    console.log(`[timer-granularity] new ${(now.rate / 1000).toFixed(1)} MB/s, old ${(old.rate / 1000).toFixed(1)} MB/s of 60`);
    expect(now.rate).toBeGreaterThanOrEqual(0.8 * LOOPBACK.rate);
    expect(old.rate).toBeLessThan(now.rate);
    // Outside ProbeRTT the window never fell below the receiver's ack threshold + 2 packets.
    expect(now.minWindow).toBeGreaterThanOrEqual(10 * MTU);
  });

  it("the quantum is what adds rate here; the floor is what keeps the window at 10 packets", () => {
    const quantumOnly = runTimerGranular({ peerAckThresholdPackets: 0 }, LOOPBACK, 1000);
    const floorOnly = runTimerGranular({ sendQuantumMs: 0 }, LOOPBACK, 1000);
    const both = runTimerGranular({}, LOOPBACK, 1000);
    console.log(
      `[timer-granularity] quantum only ${(quantumOnly.rate / 1000).toFixed(1)}, floor only ${(floorOnly.rate / 1000).toFixed(1)}, both ${(both.rate / 1000).toFixed(1)} MB/s`,
    );
    expect(both.rate).toBeGreaterThanOrEqual(0.8 * LOOPBACK.rate);
    expect(floorOnly.rate).toBeLessThan(both.rate);
    expect(both.minWindow).toBeGreaterThanOrEqual(10 * MTU);
  });

  it("window floor: a bandwidth estimate of a few packets per 5 ms still leaves room for the peer's 8-packet ack", () => {
    // The spiral seen on loopback: 4 packets in flight, the receiver waits 5 ms (fewer than 8),
    // the delivery rate is 4 packets / 5 ms, and the window (2 x BDP + 3 packets) stays at 4.
    const run = (config: DefaultConfig): number => {
      const cc = new DefaultController({ mtu: MTU, ...config });
      let t = 0;
      for (let round = 0; round < 400; round++) {
        const records: SentPacket[] = [];
        let inFlight = 0;
        for (let k = 0; k < 4; k++) {
          records.push(cc.onSent(t, MTU, inFlight));
          inFlight += MTU;
        }
        t += 5; // the peer's ack-delay timer
        for (const r of records) {
          inFlight -= MTU;
          ackPacket(cc, t, r, inFlight, 0.2); // the path's RTT; the timer wait is ack delay
        }
        t += 0.01;
      }
      return cc.windowBytes();
    };
    const withFloor = run({});
    const without = run({ peerAckThresholdPackets: 0 });
    expect(withFloor).toBeGreaterThanOrEqual(10 * MTU);
    expect(without).toBeLessThan(10 * MTU);
  });
});

describe("Pacer send quantum", () => {
  it("never exceeds the rate in the long run, whatever the wake-up times", () => {
    const rate = 50; // units per ms
    const quantum = 50;
    const capacity = 100;
    const p = new Pacer(10, rate, capacity, quantum);
    let sent = 0;
    let now = 0;
    let x = 12345; // xorshift for wake-up jitter, fixed seed
    for (let i = 0; i < 20_000 && now < 1000; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      const step = ((x >>> 0) % 1000) / 400; // 0..2.5 ms
      now += step;
      for (let k = 0; k < 1000 && p.nextSendTime(now) <= now; k++) {
        p.onSend(now, 12);
        sent += 12;
      }
      // Bounded debt at every step: quantum plus one send.
      expect(p.balance(now)).toBeGreaterThan(-(quantum + 12) - 1e-9);
    }
    // Initial tokens + capacity (idle burst) + quantum + one send above rate x time, at most.
    expect(sent).toBeLessThanOrEqual(rate * now + 10 + capacity + quantum + 12);
    expect(sent).toBeGreaterThan(0.9 * rate * now);
  });

  it("after releasing a quantum, asks for the next wake-up no sooner than quantum / rate", () => {
    const p = new Pacer(0, 10, 20, 10); // 10 units/ms, quantum 1 ms
    p.nextSendTime(0);
    let sends = 0;
    while (p.nextSendTime(0) <= 0 && sends < 100) {
      p.onSend(0, 1);
      sends++;
    }
    expect(sends).toBe(10); // a whole quantum at once
    expect(p.nextSendTime(0)).toBeGreaterThanOrEqual(1);
    // Without a quantum: one unit, then a wake-up 0.1 ms away.
    const q0 = new Pacer(0, 10, 20, 0);
    q0.nextSendTime(0);
    expect(q0.nextSendTime(0)).toBeGreaterThan(0);
    expect(q0.nextSendTime(0)).toBeLessThan(0.2);
  });
});
