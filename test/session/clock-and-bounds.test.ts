import { describe, expect, it } from "vitest";
import { connectPair, makePair, payload } from "./helpers.js";

describe("clock sync and receive bound", () => {
  it("the client estimates the server clock (same virtual clock: true offset 0) within its error bound", () => {
    const seed = 401;
    const pair = makePair(seed, { pair: { link: { latencyMs: 30, jitterMs: 10 } } });
    const [c] = connectPair(pair);
    pair.drive({ maxTimeMs: 8000 });
    const s = pair.client.stats(c);
    expect(s.clockOffsetMs, `seed ${seed}`).toBeDefined();
    expect(Math.abs(s.clockOffsetMs as number), `seed ${seed}`).toBeLessThanOrEqual((s.clockErrorMs as number) + 1e-9);
    expect(s.clockErrorMs as number, `seed ${seed}`).toBeLessThan(40);
    const st = pair.client.serverTime(c, pair.now) as number;
    expect(Math.abs(st - pair.now)).toBeLessThanOrEqual((s.clockErrorMs as number) + 1e-9);
  });

  it("held ordered data past maxReceiveBufferBytes closes the connection with receive-buffer-exceeded", () => {
    const seed = 402;
    // Path MTU discovery off (maxMtu = mtu): no fallback below the base, so the path's black
    // hole stays one.
    const pair = makePair(seed, { client: { maxMtu: 1200 }, server: { maxReceiveBufferBytes: 16_384 }, pair: { link: { latencyMs: 5 } } });
    const [c] = connectPair(pair);
    // The client -> server path drops datagrams over 1000 bytes: message 0 (1150 B, one frame)
    // can never arrive, so every later ordered message is held by the server.
    pair.network.link(pair.clientAddress, pair.serverAddress, { latencyMs: 5, mtu: 1000 });
    pair.client.send(c, payload(0, 1150), { channel: 0 });
    for (let i = 1; i < 150 && pair.client.connections().includes(c); i++) {
      pair.client.send(c, payload(i, 300), { channel: 0 });
      pair.drive({ maxTimeMs: 3 });
    }
    pair.drive({ maxTimeMs: 500 });
    const d = pair.serverEvents().filter((e) => e.type === "disconnect");
    expect(d, `seed ${seed}`).toHaveLength(1);
    expect(d[0].type === "disconnect" && d[0].reason, `seed ${seed}`).toBe("receive-buffer-exceeded");
    // The client is told why (DISCONNECT with reason 3).
    const cd = pair.clientEvents().filter((e) => e.type === "disconnect");
    expect(cd[0]?.type === "disconnect" && cd[0].reason, `seed ${seed}`).toBe("receive-buffer-exceeded");
  });
});

describe("bandwidth events", () => {
  it("a bulk transfer over a 4 Mbit/s bottleneck reports a bandwidth estimate near it", () => {
    const seed = 403;
    const cap = 4_000_000;
    const pair = makePair(seed, { pair: { link: { latencyMs: 20, bandwidthBps: cap, queuePackets: 64 } } });
    const [c] = connectPair(pair);
    for (let i = 0; i < 400; i++) pair.client.send(c, payload(i, 1100), { channel: 3 });
    pair.drive({ maxTimeMs: 3000 });
    const events = pair.clientEvents().filter((e) => e.type === "bandwidth");
    expect(events.length, `seed ${seed}`).toBeGreaterThan(0);
    const last = events.at(-1);
    const bps = last?.type === "bandwidth" ? last.bitsPerSecond : 0;
    expect(bps, `seed ${seed}`).toBeGreaterThan(cap / 4);
    expect(bps, `seed ${seed}`).toBeLessThan(cap * 4);
  });
});
