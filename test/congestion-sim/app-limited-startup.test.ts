/**
 * A stream faster than its path, whose packets each empty the send queue: a server's 30 Hz x
 * 1000 B effects stream (240 kbit/s) to a client behind 120 kbit/s with a deep buffer (64
 * packets, ~4 s). For the sender every packet is application-limited (the window has room, the
 * queue is empty after each), so Startup's rounds never counted toward its exit while the
 * bottleneck's buffer filled: the RTT read ~1.5 s from the 3rd second to the 10th, and then the
 * 10 s min-RTT filter took the queue for the path. App-limited rounds that see a queue now count.
 */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { Pair } from "../../src/sim/network.js";

const PROTOCOL_ID = 0x0a9e2222;

function overload(seed: number): { rttBySecond: number[]; lateAges: number[]; minRttMs: number } {
  const channels = [{ mode: "reliable-ordered" as const }, { mode: "unreliable" as const }];
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: seed * 2 + 1, channels });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: seed * 2 + 2, channels });
  let s = -1;
  let late = false;
  const lateAges: number[] = [];
  const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, {
    seed,
    toServer: { latencyMs: 20 },
    toClient: { latencyMs: 20, bandwidthBps: 120_000, queuePackets: 64 },
    onEvent: (address, ev, now) => {
      if (address === pair.serverAddress && ev.type === "connect") s = ev.connection;
      if (address === pair.clientAddress && ev.type === "message" && late) lateAges.push(now - new DataView(ev.data.buffer, ev.data.byteOffset).getFloat64(0, true));
    },
  });
  client.connect(pair.now, pair.serverAddress);
  for (let i = 0; i < 400 && s < 0; i++) pair.drive({ maxTimeMs: 10, maxSteps: 10_000 });
  expect(s).toBeGreaterThanOrEqual(0);
  const start = pair.now;
  const payload = new Uint8Array(1000);
  const rttBySecond: number[] = [];
  for (let tick = 0; tick < 12 * 30; tick++) {
    pair.drive({ until: start + (tick * 1000) / 30, maxSteps: 200_000 });
    new DataView(payload.buffer).setFloat64(0, pair.now, true);
    server.send(s, payload, { channel: 1 }, pair.now);
    pair.network.flush();
    late = tick >= 9 * 30;
    if (tick % 30 === 29) rttBySecond.push(Math.round(server.stats(s).rttMs));
  }
  return { rttBySecond, lateAges, minRttMs: server.stats(s).minRttMs };
}

describe("an app-limited stream that overloads a slow path with a deep buffer (simulator, 120 kbit/s, 40 ms path)", () => {
  for (const seed of [1, 2]) {
    it(`leaves Startup and drains the queue it built (seed ${seed})`, () => {
      const r = overload(seed);
      const why = JSON.stringify({ rttBySecond: r.rttBySecond, minRttMs: r.minRttMs, late: r.lateAges.length, lateAgeMax: Math.max(...r.lateAges) });
      // The queue is gone from the 9th second: RTT near the path's (77 ms: 40 ms and one
      // 1000 B datagram's serialization), and what arrives is fresh.
      expect(Math.max(...r.rttBySecond.slice(8)), why).toBeLessThan(300);
      // About half the stream fits the path (the rest expires unsent: maxQueueMs).
      expect(r.lateAges.length, why).toBeGreaterThan(30);
      expect(Math.max(...r.lateAges), why).toBeLessThan(400);
      // The min RTT filter never took the queue for the path.
      expect(r.minRttMs, why).toBeLessThan(150);
    });
  }
});
