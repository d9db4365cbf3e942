/**
 * Ack frequency (docs/PROTOCOL.md §3 ACK_FREQUENCY, src/session/ack-frequency.ts): a sender whose
 * window is small asks the peer to ack after fewer packets, so its window floor (the peer's
 * threshold + 2 packets) need not stand in a slow link's queue.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { AckFrequency, MAX_ACK_THRESHOLD } from "../../src/session/ack-frequency.js";
import { RECEIVE_TIMES_FLAG } from "../../src/wire/system.js";
import type { CongestionController } from "../../src/congestion/controller.js";
import type { Endpoint } from "../../src/session/endpoint.js";
import { connectPair, makePair, payload, checkPayload } from "./helpers.js";

/** A connection's internals behind an endpoint's id (what these tests read and set). */
type ConnectionInternals = { ackFrequency: AckFrequency; unackedReceived: number };
function connectionOf(endpoint: Endpoint, id: number): ConnectionInternals {
  return (endpoint as unknown as { byId: Map<number, ConnectionInternals> }).byId.get(id)!;
}

/** Make `af` put a request on the wire next, unchecked (what a faulty or hostile peer could send). */
function forceRequest(af: AckFrequency, sequence: number, threshold: number): void {
  const raw = af as unknown as { asked: number; sequence: number; due: boolean };
  raw.asked = threshold;
  raw.sequence = sequence;
  raw.due = true;
}

/** The two methods AckFrequency uses, with a settable want and a log of the floor it was given. */
function fakeController(want: number) {
  const floor: number[] = [];
  const cc = {
    want,
    peerAckThreshold() {
      return cc.want;
    },
    setPeerAckThreshold(n: number) {
      floor.push(n);
    },
  };
  return { cc, asController: cc as unknown as CongestionController, floor };
}

describe("AckFrequency, the receiver of requests", () => {
  it("applies a newer request, ignores an older or repeated one, rejects thresholds outside 1..16", () => {
    const af = new AckFrequency(8);
    expect(af.threshold).toBe(8);
    expect(af.onRequest(5, 2)).toBe(true);
    expect(af.threshold).toBe(2);
    expect(af.onRequest(4, 6)).toBe(true); // older (reordered): no change
    expect(af.threshold).toBe(2);
    expect(af.onRequest(5, 6)).toBe(true); // the same request resent: no change
    expect(af.threshold).toBe(2);
    expect(af.onRequest(6, 0)).toBe(false);
    expect(af.onRequest(6, MAX_ACK_THRESHOLD + 1)).toBe(false);
    expect(af.threshold).toBe(2);
    expect(af.onRequest(6, MAX_ACK_THRESHOLD)).toBe(true);
    expect(af.threshold).toBe(MAX_ACK_THRESHOLD);
  });

  it("the request sequence wraps: after 255 comes 0 (property: any run of in-order requests applies the last)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 255 }), fc.array(fc.integer({ min: 1, max: MAX_ACK_THRESHOLD }), { minLength: 1, maxLength: 300 }), (start, thresholds) => {
        const af = new AckFrequency(8);
        thresholds.forEach((t, i) => af.onRequest((start + i) & 0xff, t));
        return af.threshold === thresholds[thresholds.length - 1];
      }),
    );
  });
});

describe("receive-time reports (RECEIVE_TIMES_FLAG, RECEIVE_TIME)", () => {
  it("the flag in the threshold byte turns reports on and off; bits 5-6 make the request invalid", () => {
    const af = new AckFrequency(8);
    expect(af.reportTimes).toBe(false);
    expect(af.onRequest(1, RECEIVE_TIMES_FLAG | 3)).toBe(true);
    expect([af.threshold, af.reportTimes]).toEqual([3, true]);
    expect(af.onRequest(2, 8)).toBe(true);
    expect([af.threshold, af.reportTimes]).toEqual([8, false]);
    expect(af.onRequest(3, 0x20 | 3)).toBe(false);
    expect(af.onRequest(3, 0x40 | 3)).toBe(false);
    expect(af.onRequest(3, RECEIVE_TIMES_FLAG)).toBe(false); // threshold 0
    expect([af.threshold, af.reportTimes]).toEqual([8, false]);
  });

  it("a sender asks for reports only while blocked and its controller wants them (network-limited)", () => {
    const { cc, asController } = fakeController(8);
    let limited = false;
    const withTimes = { ...cc, onReceiveTime() {}, wantsReceiveTimes: () => limited } as unknown as CongestionController;
    const af = new AckFrequency(8);
    af.update(asController, 0); // not blocked, no reports taken: nothing to ask
    expect(af.due).toBe(false);
    af.blockedAt = 10;
    af.update(asController, 20); // blocked, but this controller takes no reports: still 8
    expect(af.due).toBe(false);
    af.update(withTimes, 30); // blocked, but not network-limited (a burst): still nothing
    expect(af.due).toBe(false);
    limited = true;
    af.update(withTimes, 40);
    expect(af.due).toBe(true);
    expect(af.requestThreshold).toBe(RECEIVE_TIMES_FLAG | 8);
    expect(af.asksTimes).toBe(true);
  });

  it("a receiver asked for reports puts RECEIVE_TIME first in packets carrying data, and never in a pure ack", () => {
    const pair = makePair(611);
    const [c, s] = connectPair(pair);
    const server = connectionOf(pair.server, s);
    // Data from the client, so the server has something to report and ack.
    pair.client.send(c, payload(1, 100), { channel: 0 });
    pair.network.flush();
    pair.drive({ maxTimeMs: 100 });
    const firstFrameType = (bytes: Uint8Array): [number, number] => [bytes[9]!, bytes[15]!];
    const sent: Uint8Array[] = [];
    const capture = () => {
      for (let tx = pair.server.pollTransmit(pair.now); tx !== undefined; tx = pair.server.pollTransmit(pair.now)) sent.push(tx.bytes.slice());
    };
    // Not asked: the server's data packet starts with its channel-0 frame.
    pair.client.send(c, payload(2, 100), { channel: 0 });
    pair.network.flush();
    pair.drive({ maxTimeMs: 50 });
    pair.server.send(s, payload(3, 100), { channel: 0 }, pair.now);
    capture();
    expect(sent.length).toBeGreaterThan(0);
    expect(firstFrameType(sent.at(-1)!)[0]).toBe(0);
    // Asked: a RECEIVE_TIME system frame (channel 255, type 6) comes first.
    (server.ackFrequency as unknown as { reportTimes: boolean }).reportTimes = true;
    pair.client.send(c, payload(4, 100), { channel: 0 });
    pair.network.flush();
    pair.drive({ maxTimeMs: 50 });
    sent.length = 0;
    pair.server.send(s, payload(5, 100), { channel: 0 }, pair.now);
    capture();
    expect(firstFrameType(sent.at(-1)!)).toEqual([255, 6]);
    expect(sent.at(-1)!.length).toBe(13 + 13 + 6 + 100); // header+CRC, RECEIVE_TIME, the message
  });

  it("a receiver asked for reports still sends a pure ack (no RECEIVE_TIME frame) when it has no data", () => {
    const pair = makePair(612);
    const [c, s] = connectPair(pair);
    (connectionOf(pair.server, s).ackFrequency as unknown as { reportTimes: boolean }).reportTimes = true;
    const received = pair.server.stats(s).packets.received;
    pair.client.send(c, payload(6, 100), { channel: 0 });
    pair.network.flush();
    for (let i = 0; i < 1000 && pair.server.stats(s).packets.received === received; i++) pair.step();
    expect(pair.server.stats(s).packets.received).toBe(received + 1);
    const later = pair.now + 50; // past the ack delay: the owed ack leaves on its own
    pair.server.handleTimeout(later);
    const pure: Uint8Array[] = [];
    for (let tx = pair.server.pollTransmit(later); tx !== undefined; tx = pair.server.pollTransmit(later)) pure.push(tx.bytes.slice());
    // 13 bytes and the 2-byte ack delay (PROTOCOL §2): the ack waited ~50 ms, 500 units of 0.1 ms.
    expect(pure.map((b) => b.length)).toEqual([15]);
    const waited = pure[0]![9]! | (pure[0]![10]! << 8);
    expect(waited).toBeGreaterThanOrEqual(490);
    expect(waited).toBeLessThanOrEqual(500);
  });
});

describe("AckFrequency, the sender of requests", () => {
  it("asks only while the network limits the flow, one request at a time; raises at once, lowers when acked", () => {
    const { cc, asController, floor } = fakeController(2);
    const af = new AckFrequency(8);
    af.update(asController, 0);
    expect(af.due, "never blocked: a light flow asks nothing").toBe(false);

    af.blockedAt = 100;
    af.update(asController, 150);
    expect(af.due).toBe(true);
    expect(af.requestThreshold).toBe(2);
    expect(floor, "a lower threshold waits for the peer").toEqual([]);
    af.onSent(7000);
    cc.want = 3;
    af.update(asController, 160);
    expect(af.due, "one request in flight at a time").toBe(false);
    af.onAcked(6999, asController);
    expect(floor).toEqual([]);
    af.onAcked(7000, asController);
    expect(floor, "confirmed by the ack of its packet").toEqual([2]);

    af.update(asController, 170); // now 3: higher than the confirmed 2, so at once
    expect(af.requestThreshold).toBe(3);
    expect(floor).toEqual([2, 3]);
    af.onSent(7001);
    af.onLost(7001);
    expect(af.due, "lost with its packet: asked again").toBe(true);
    const again = af.requestSequence;
    af.onSent(7002);
    expect(af.requestSequence, "the same request, the same sequence").toBe(again);
    af.onAcked(7002, asController);

    // No longer blocked for a second: back to the default.
    af.update(asController, 170 + 1001);
    expect(af.requestThreshold).toBe(8);
    expect(floor.at(-1)).toBe(8);
  });
});

/**
 * An upload of 1000 B messages over a 1 Mbit/s link (5 ms each way, a 64-packet tail-drop queue:
 * ~600 ms) beside a 30 Hz stream on the same connection. Returns the stream's delivery latency
 * (send to the server's message event) over the last 3 s, and what the server's connection was
 * asked.
 */
function uploadBesideStream(seed: number, engine: "ts" | "wasm") {
  const pair = makePair(seed, { server: { engine }, client: { engine }, pair: { link: { latencyMs: 5, bandwidthBps: 1e6, queuePackets: 64 } } });
  const [c, s] = connectPair(pair);
  const period = 1000 / 30;
  const start = pair.now;
  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  let uploaded = 0;
  let next = 0;
  let corrupt = 0;
  // Step event by event so each message's arrival time is exact.
  const collect = () => {
    for (const ev of pair.serverEvents()) {
      if (ev.type !== "message") continue;
      const index = checkPayload(ev.data);
      if (index < 0) corrupt++;
      else if (ev.channel === 6) uploaded++;
      else if (pair.now - start > 5_000) latencies.push(pair.now - sentAt.get(index)!);
    }
  };
  for (let tick = 0; tick < 8 * 30; tick++) {
    // Keep ~40 upload messages queued (the application's window), then one stream message.
    for (let k = next - uploaded; k < 40; k++) pair.client.send(c, payload(1_000_000 + next++, 1000), { channel: 6 });
    sentAt.set(tick, pair.now);
    pair.client.send(c, payload(tick, 64), { channel: 0 });
    const until = start + (tick + 1) * period;
    for (let steps = 0; steps < 100_000; steps++) {
      const at = pair.network.nextEventTime();
      if (at === undefined || at > until) break;
      pair.step();
      collect();
    }
    pair.drive({ until, maxSteps: 0 });
  }
  latencies.sort((a, b) => a - b);
  return { latencies, uploaded, corrupt, threshold: connectionOf(pair.server, s).ackFrequency.threshold };
}

describe("ack frequency over the simulator", () => {
  for (const [seed, engine] of [[611, "ts"], [612, "wasm"]] as const) {
    it(`an upload on a 1 Mbit/s link asks for acks more often, and a stream beside it stays out of the queue (seed ${seed}, ${engine})`, () => {
      const r = uploadBesideStream(seed, engine);
      const p50 = r.latencies[Math.floor(r.latencies.length / 2)]!;
      const p90 = r.latencies[Math.floor(r.latencies.length * 0.9)]!;
      // 8 s at 1 Mbit/s carry ~1000 messages of 1000 B (with headers); the upload must use the link.
      const why = `seed ${seed}: stream p50 ${p50.toFixed(1)} p90 ${p90.toFixed(1)} ms, uploaded ${r.uploaded}, server asked to ack every ${r.threshold}`;
      console.log(why);
      expect(r.corrupt, why).toBe(0);
      expect(r.uploaded, why).toBeGreaterThan(850);
      expect(r.threshold, why).toBeLessThan(8);
      // One way 5 ms, plus the upload packet ahead of it at the bottleneck (~8 ms). Behind the
      // old window floor of 10 packets (8 + 2; ~80 ms at 1 Mbit/s) it read p50 84.9 ms.
      expect(p50, why).toBeLessThan(30);
      expect(p90, why).toBeLessThan(35);
    });
  }

  it("an upload of large (fragmented) messages still gets its request out: it goes ahead of the fragments", () => {
    const pair = makePair(615, { pair: { link: { latencyMs: 5, bandwidthBps: 1e6, queuePackets: 64 } } });
    const [c, s] = connectPair(pair);
    for (let i = 0; i < 6; i++) pair.client.send(c, payload(i, 64 * 1024), { channel: 3 });
    pair.drive({ maxTimeMs: 3000, maxSteps: 200_000 });
    const server = connectionOf(pair.server, s);
    const received = pair.serverEvents().filter((e) => e.type === "message").length;
    expect(received, "3 s of a 1 Mbit/s link carry ~5 of the 6 messages: the transfer is still running").toBeLessThan(6);
    expect(server.ackFrequency.threshold).toBeLessThan(8);
  });

  it("a light flow that bursts keeps the pacing floor (its own rate is no measure of the path), and returns to the default threshold", () => {
    const pair = makePair(616, { pair: { link: { latencyMs: 10, bandwidthBps: 10e6 } } });
    const [c, s] = connectPair(pair);
    const start = pair.now;
    for (let i = 0; i < 150; i++) {
      pair.client.send(c, payload(i, 200), { channel: 3 });
      pair.network.flush();
      pair.drive({ until: start + (i + 1) * (1000 / 30), maxSteps: 100_000 });
    }
    pair.serverEvents();
    // 30 x 1000 B at once: 24 ms of the 10 Mbit/s link, plus 10 ms one way.
    const t0 = pair.now;
    for (let i = 0; i < 30; i++) pair.client.send(c, payload(1000 + i, 1000), { channel: 3 });
    let got = 0;
    let doneAt = Infinity;
    for (let k = 0; k < 100_000 && got < 30 && pair.now - t0 < 5000; k++) {
      if (pair.network.nextEventTime() === undefined) pair.drive({ maxTimeMs: 1, maxSteps: 1000 });
      else pair.step();
      for (const ev of pair.serverEvents()) if (ev.type === "message" && checkPayload(ev.data) >= 1000 && ++got === 30) doneAt = pair.now;
    }
    // Paced with the minimum window's floor, as before ack frequency: 103.9 ms. Paced at the
    // stream's own ~70 kbit/s "capacity" (a first version dropped the floor once the pipe was
    // filled, whatever limited the flow) it took twice that or more.
    expect(doneAt - t0).toBeLessThan(120);
    // The burst was held back for several round trips, long enough to ask the peer for more
    // acks; back to the stream alone, the default threshold returns.
    const resumed = pair.now;
    for (let i = 0; i < 45; i++) {
      pair.client.send(c, payload(2000 + i, 200), { channel: 3 });
      pair.network.flush();
      pair.drive({ until: resumed + (i + 1) * (1000 / 30), maxSteps: 100_000 });
    }
    const server = connectionOf(pair.server, s);
    expect(server.ackFrequency.threshold, "the stream alone again: the default threshold").toBe(8);
  });

  it("a request for a threshold outside 1..16 is counted invalid and changes nothing; the rest of its datagram is delivered", () => {
    const pair = makePair(617, { pair: { link: { latencyMs: 5 } } });
    const [c, s] = connectPair(pair);
    const client = connectionOf(pair.client, c);
    const server = connectionOf(pair.server, s);
    for (const [sequence, bad] of [[1, 0], [2, 17], [3, 255]] as const) {
      forceRequest(client.ackFrequency, sequence, bad);
      pair.client.send(c, payload(sequence, 100), { channel: 3 });
      pair.drive({ maxTimeMs: 50 });
    }
    const delivered = pair.serverEvents().filter((e) => e.type === "message").map((e) => (e.type === "message" ? checkPayload(e.data) : -1));
    expect(delivered).toEqual([1, 2, 3]);
    expect(pair.server.stats(s).invalid).toBe(3);
    expect(server.ackFrequency.threshold).toBe(8);
  });

  it("a request that reaches a closing side arms no ack timer (it would fall due with nothing to clear it)", () => {
    const pair = makePair(614, { pair: { link: { latencyMs: 20 } } });
    const [c, s] = connectPair(pair);
    const server = connectionOf(pair.server, s);
    const client = connectionOf(pair.client, c);
    // The server owes an ack for one packet when it closes...
    pair.client.send(c, payload(0, 100), { channel: 3 });
    pair.network.flush();
    for (let k = 0; k < 10_000 && server.unackedReceived < 1; k++) pair.step();
    expect(server.unackedReceived).toBe(1);
    pair.server.close(s);
    // ...and then receives a request for an ack every packet (as a blocked sender would make).
    forceRequest(client.ackFrequency, 1, 1);
    pair.client.send(c, payload(1, 100), { channel: 3 });
    pair.network.flush();
    const r = pair.drive({ maxTimeMs: 3000, maxSteps: 20_000 });
    expect(r.stop, `${r.steps} steps to ${r.now} ms`).not.toBe("steps");
    expect(pair.server.connections()).toHaveLength(0);
  });

  it("a 30 Hz stream alone asks nothing: the peer keeps acking after 8 packets (its acks wait for its own data)", () => {
    const pair = makePair(613, { pair: { link: { latencyMs: 10, lossRate: 0.05 } } });
    const [c, s] = connectPair(pair);
    const start = pair.now;
    for (let i = 0; i < 150; i++) {
      pair.client.send(c, payload(i, 100), { channel: 0 });
      pair.server.send(s, payload(i, 100), { channel: 0 });
      pair.network.flush();
      pair.drive({ until: start + (i + 1) * (1000 / 30), maxSteps: 100_000 });
    }
    const ends = [connectionOf(pair.client, c), connectionOf(pair.server, s)].map((conn) => conn.ackFrequency);
    expect(ends.map((af) => af.threshold)).toEqual([8, 8]);
    expect(ends.map((af) => af.requestSequence), "no request was ever made").toEqual([0, 0]);
  });
});
