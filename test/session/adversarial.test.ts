/** Hostile and heavy cases: spoofed handshakes, fragment floods, sequence wrap, big messages. */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import { TsEngine } from "../../src/engine/ts-engine.js";
import { DeliveryKind, PacketType } from "../../src/engine/abi.js";
import { encodeRequest, encodeResponse } from "../../src/wire/control.js";
import { checkPayload, connectPair, makePair, payload, PROTOCOL_ID, transmitsOf } from "./helpers.js";

/** A valid CONNECT_REQUEST datagram, sealed with the right protocol id. */
function connectRequest(salt: number): Uint8Array {
  const e = new TsEngine({ protocolId: PROTOCOL_ID, maxSlots: 1, channels: [DeliveryKind.Unreliable] });
  const at = e.layout.txArenaOffset;
  const n = e.sealControl(at, encodeRequest(e.bytes, at, 0, salt));
  return e.bytes.slice(at, at + n);
}

describe("handshake under attack", () => {
  it("10,000 spoofed connect requests: no connection state, bytes out <= bytes in", () => {
    const seed = 301;
    const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed, engine: "ts" });
    let bytesIn = 0;
    let bytesOut = 0;
    let now = 0;
    for (let i = 0; i < 10_000; i++) {
      const from = `198.51.${(i >> 8) & 0xff}.${i & 0xff}:${1024 + (i % 50_000)}`;
      const req = connectRequest(i * 2654435761);
      bytesIn += req.length;
      server.handleDatagram(now, from, req);
      if (i % 64 === 63) {
        for (const t of transmitsOf(server, now)) bytesOut += t.bytes.length;
        now += 1;
      }
    }
    for (const t of transmitsOf(server, now)) bytesOut += t.bytes.length;
    expect(server.connectionCount, `seed ${seed}`).toBe(0);
    expect(server.connections()).toHaveLength(0);
    expect(server.counters.challengesSent).toBe(10_000);
    expect(bytesOut, `seed ${seed}`).toBeLessThanOrEqual(bytesIn);
    expect(bytesOut).toBe(10_000 * 25);
    // Repeats from one address are rate limited.
    const from = "203.0.113.5:4000";
    for (let i = 0; i < 100; i++) server.handleDatagram(now, from, connectRequest(i));
    server.handleTimeout(now);
    expect(server.counters.handshakeRateLimited).toBeGreaterThan(80);
  });

  it("a forged CONNECT_RESPONSE (bad cookie) allocates nothing; its only reply is a fresh CHALLENGE, smaller than it", () => {
    const seed = 302;
    const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed, engine: "ts" });
    const e = new TsEngine({ protocolId: PROTOCOL_ID, maxSlots: 1, channels: [DeliveryKind.Unreliable] });
    const at = e.layout.txArenaOffset;
    let bytesIn = 0;
    for (let i = 0; i < 50; i++) {
      const cookie = Uint8Array.from({ length: 16 }, (_, k) => (k * 7 + i) & 0xff);
      const n = e.sealControl(at, encodeResponse(e.bytes, at, i, cookie, 0, server.config.channelHash, new Uint8Array(0)));
      bytesIn += n;
      server.handleDatagram(0, `192.0.2.${i}:999`, e.bytes.slice(at, at + n));
    }
    const replies: { to: string; bytes: Uint8Array }[] = [];
    for (const t of transmitsOf(server, 0)) replies.push({ to: t.to, bytes: t.bytes.slice() });
    expect(replies.map((t) => t.to), `seed ${seed}`).toEqual(Array.from({ length: 50 }, (_, i) => `192.0.2.${i}:999`));
    expect(replies.every((t) => t.bytes[0] === PacketType.Challenge)).toBe(true);
    expect(replies.reduce((sum, t) => sum + t.bytes.length, 0)).toBeLessThan(bytesIn);
    // Each reply smaller than the RESPONSE it answers (all of them 41 bytes here).
    expect(bytesIn).toBe(50 * 41);
    for (const t of replies) expect(t.bytes.length).toBe(25);
    expect(server.counters.badCookies).toBe(50);
    expect(server.counters.challengesSent).toBe(50);
    expect(server.connectionCount).toBe(0);
    expect(server.connections()).toHaveLength(0);
    // Copies from one address are held to the handshake rate.
    for (let i = 0; i < 100; i++) {
      const n = e.sealControl(at, encodeResponse(e.bytes, at, 7, new Uint8Array(16), 0, server.config.channelHash, new Uint8Array(0)));
      server.handleDatagram(1, "203.0.113.9:999", e.bytes.slice(at, at + n));
    }
    expect([...transmitsOf(server, 1)].length).toBeLessThan(20);
    expect(server.counters.handshakeRateLimited).toBeGreaterThan(80);
  });
});

describe("memory bounds and heavy runs", () => {
  it("a peer sending fragment starts forever cannot raise memory past the bound", () => {
    const seed = 303;
    const bound = 256 * 1024;
    const pair = makePair(seed, { server: { maxReceiveBufferBytes: bound }, client: { maxReceiveBufferBytes: bound } });
    const [c] = connectPair(pair);
    // Drop most client -> server packets so many large ordered messages sit half-assembled.
    pair.network.link(pair.clientAddress, pair.serverAddress, { lossRate: 0.5, latencyMs: 5 });
    let maxBuffered = 0;
    const serverConn = pair.server.connections()[0];
    for (let i = 0; i < 200; i++) {
      try {
        pair.client.send(c, payload(i, 60_000), { channel: 2 }); // unreliable, fragmented
      } catch {
        break;
      }
      pair.drive({ maxTimeMs: 20 });
      if (pair.server.connections().includes(serverConn)) {
        const conn = (pair.server as unknown as { byId: Map<number, { channels: { receiveBufferedBytes(): number } }> }).byId.get(serverConn);
        maxBuffered = Math.max(maxBuffered, conn?.channels.receiveBufferedBytes() ?? 0);
      }
    }
    expect(maxBuffered, `seed ${seed}`).toBeLessThanOrEqual(bound);
    expect(maxBuffered, `seed ${seed}`).toBeGreaterThan(0);
  });

  it("a 1 MiB reliable message under 10% loss arrives intact", () => {
    const seed = 304;
    const pair = makePair(seed, { pair: { link: { lossRate: 0.1, latencyMs: 10 } } });
    const [c] = connectPair(pair);
    const big = payload(7, 1024 * 1024);
    pair.client.send(c, big, { channel: 0 });
    let got: Uint8Array | undefined;
    for (let i = 0; i < 600 && got === undefined; i++) {
      pair.drive({ maxTimeMs: 100 });
      for (const ev of pair.serverEvents()) if (ev.type === "message") got = ev.data;
    }
    expect(got?.length, `seed ${seed}`).toBe(big.length);
    expect(checkPayload(got as Uint8Array), `seed ${seed}`).toBe(7);
  });

  it("70,000+ packets in one run (sequence wrap) with loss, no stall", () => {
    const seed = 305;
    // Congestion control off: this test is about sequence wrap and loss repair at volume, and
    // an uncapped sim link; the controllers have their own tests.
    const pair = makePair(seed, { client: { congestion: "none" }, pair: { link: { lossRate: 0.05, latencyMs: 2 } } });
    const [c] = connectPair(pair);
    let next = 0;
    let received = 0;
    let expected = 0;
    for (let round = 0; round < 40_000 && pair.client.stats(c).packets.dispatched < 72_000; round++) {
      // ~1100-byte messages: one per datagram, so packets ~= messages (plus resends).
      for (let k = 0; k < 6; k++) pair.client.send(c, payload(next++, 1100), { channel: 0 });
      pair.drive({ maxTimeMs: 1 });
      for (const ev of pair.serverEvents()) {
        if (ev.type !== "message") continue;
        expect(checkPayload(ev.data), `seed ${seed}`).toBe(expected);
        expected++;
        received++;
      }
    }
    pair.drive({ maxTimeMs: 5000 });
    for (const ev of pair.serverEvents()) if (ev.type === "message" && checkPayload(ev.data) === expected) expected++, received++;
    expect(pair.client.stats(c).packets.dispatched, `seed ${seed}`).toBeGreaterThan(70_000);
    expect(received, `seed ${seed}`).toBe(next);
  }, 120_000);
});

describe("channel isolation and latest-state", () => {
  it("head-of-line isolation: a stalled ordered channel does not delay another channel", () => {
    const seed = 306;
    const pair = makePair(seed, { pair: { link: { latencyMs: 10 } } });
    const [c] = connectPair(pair);
    // Drop everything for a moment: the ordered message 0 is lost, later ones are held.
    pair.network.link(pair.clientAddress, pair.serverAddress, { lossRate: 1, latencyMs: 10 });
    pair.client.send(c, payload(0, 100), { channel: 0 });
    pair.drive({ maxTimeMs: 2 });
    pair.network.link(pair.clientAddress, pair.serverAddress, { latencyMs: 10 });
    for (let i = 1; i < 5; i++) pair.client.send(c, payload(i, 100), { channel: 0 });
    pair.client.send(c, payload(99, 100), { channel: 3 }); // reliable-unordered, other channel
    pair.drive({ maxTimeMs: 15 });
    const events = pair.serverEvents().filter((e) => e.type === "message");
    // The other channel's message is there while the ordered channel still waits for its gap.
    expect(events.some((e) => e.type === "message" && e.channel === 3), `seed ${seed}`).toBe(true);
    expect(events.some((e) => e.type === "message" && e.channel === 0), `seed ${seed}`).toBe(false);
    pair.drive({ maxTimeMs: 3000 });
    const later = pair.serverEvents().filter((e) => e.type === "message" && e.channel === 0);
    expect(later.map((e) => (e.type === "message" ? checkPayload(e.data) : -1))).toEqual([0, 1, 2, 3, 4]);
  });

  it("latest-state under 20% loss converges, with fewer bytes than resending every update", () => {
    const seed = 307;
    const pair = makePair(seed, { pair: { link: { lossRate: 0.2, latencyMs: 20 } } });
    const [c] = connectPair(pair);
    const keys = 20;
    const latest = new Map<number, number>();
    const seen = new Map<number, number>();
    const before = pair.client.stats(c).bytesSent;
    let updates = 0;
    for (let tick = 0; tick < 300; tick++) {
      for (let k = 0; k < keys; k++) {
        if ((tick + k) % 3 !== 0) continue;
        const value = tick * 1000 + k;
        pair.client.send(c, payload(value, 64), { channel: 5, key: k });
        latest.set(k, value);
        updates++;
      }
      pair.drive({ maxTimeMs: 16 });
      for (const ev of pair.serverEvents()) if (ev.type === "message" && ev.key !== undefined) seen.set(ev.key, checkPayload(ev.data));
    }
    pair.drive({ maxTimeMs: 5000 });
    for (const ev of pair.serverEvents()) if (ev.type === "message" && ev.key !== undefined) seen.set(ev.key, checkPayload(ev.data));
    expect(seen, `seed ${seed}`).toEqual(latest);
    const bytes = pair.client.stats(c).bytesSent - before;
    // Resending every lost update until delivered costs updates * frame / (1 - loss) at least.
    const frame = 6 + 4 + 2 + 64;
    const resendEverything = (updates * frame) / (1 - 0.2);
    expect(bytes, `seed ${seed}`).toBeLessThan(resendEverything);
  });
});
