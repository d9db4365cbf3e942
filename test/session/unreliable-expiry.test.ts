/**
 * Unreliable data on a link slower than the stream (found by a game-developer review): a server
 * sends a 30 Hz effects stream of 1000 B unreliable messages (240 kbit/s) to a client behind
 * 120 kbit/s. Without a bound each message waited in the send queue longer than the one before
 * (20 s late after 27 s in the review's run). With the channel's `maxQueueMs` (default 250 ms)
 * what cannot leave in time is dropped unsent and counted, the queue stays small, and what
 * arrives is fresh; `queuedBytes` shows the backlog to an application that wants to slow down.
 */
import { describe, expect, it } from "vitest";
import { ChannelConfigError } from "../../src/channels/errors.js";
import { Endpoint } from "../../src/session/endpoint.js";
import type { ChannelConfig, EndpointEvent } from "../../src/session/types.js";
import { Pair } from "../../src/sim/network.js";
import { PROTOCOL_ID } from "./helpers.js";

function slowEffects(seed: number, channel: ChannelConfig, seconds: number) {
  const channels = [{ mode: "reliable-ordered" as const }, channel];
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: seed * 2 + 1, channels });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: seed * 2 + 2, channels });
  const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, {
    seed,
    toServer: { latencyMs: 20 },
    toClient: { latencyMs: 20, bandwidthBps: 120_000, queuePackets: 8 },
  });
  const c = client.connect(pair.now, pair.serverAddress);
  let s = -1;
  for (let i = 0; i < 400 && s < 0; i++) {
    pair.drive({ maxTimeMs: 10, maxSteps: 10_000 });
    for (const ev of pair.serverEvents()) if (ev.type === "connect") s = ev.connection;
    pair.clientEvents();
  }
  expect(s).toBeGreaterThanOrEqual(0);
  void c;
  const start = pair.now;
  const ages: number[] = [];
  const payload = new Uint8Array(1000);
  let maxQueued = 0;
  for (let tick = 0; tick < seconds * 30; tick++) {
    pair.drive({ until: start + (tick * 1000) / 30, maxSteps: 100_000 });
    new DataView(payload.buffer).setFloat64(0, pair.now, true);
    server.send(s, payload, { channel: 1 }, pair.now);
    pair.network.flush();
    for (const ev of pair.clientEvents()) {
      if (ev.type === "message" && ev.channel === 1) ages.push(pair.now - new DataView(ev.data.buffer, ev.data.byteOffset).getFloat64(0, true));
    }
    pair.serverEvents();
    maxQueued = Math.max(maxQueued, server.stats(s).queuedBytes);
  }
  const last = ages.slice(-30);
  return { stats: server.stats(s), delivered: ages.length, lastAgeMs: Math.max(...last), maxQueued };
}

describe("unreliable messages that cannot leave in time", () => {
  for (const mode of ["unreliable", "unreliable-sequenced"] as const) {
    it(`are dropped unsent after maxQueueMs, so what arrives is fresh and the queue stays bounded (${mode})`, () => {
      const r = slowEffects(71, { mode }, 12);
      const why = JSON.stringify({ delivered: r.delivered, lastAgeMs: r.lastAgeMs, maxQueued: r.maxQueued, expired: r.stats.messagesExpired });
      // About half the stream fits the link; the rest expired, counted.
      expect(r.delivered, why).toBeGreaterThan(100);
      expect(r.stats.messagesExpired, why).toBeGreaterThan(100);
      // Queued 250 ms at most, plus the link's own queue (8 packets at 120 kbit/s: ~0.55 s) and
      // 20 ms of path.
      expect(r.lastAgeMs, why).toBeLessThan(1000);
      expect(r.maxQueued, why).toBeLessThan(20_000);
    });
  }

  it("with maxQueueMs: Infinity every message waits its turn, later and later, and queuedBytes shows the backlog", () => {
    const r = slowEffects(72, { mode: "unreliable", maxQueueMs: Infinity }, 12);
    const why = JSON.stringify({ delivered: r.delivered, lastAgeMs: r.lastAgeMs, maxQueued: r.maxQueued });
    expect(r.stats.messagesExpired).toBe(0);
    expect(r.lastAgeMs, why).toBeGreaterThan(3000);
    expect(r.maxQueued, why).toBeGreaterThan(100_000);
  });

  it("a message's wait starts when a write first sees it, not at an endpoint time gone stale (found by a review)", () => {
    // The API's send() passes no time; the endpoint's last time may be a second old on a quiet
    // connection. Stamped with it, every unreliable message expired at once, never sent.
    const channels = [{ mode: "reliable-ordered" as const }, { mode: "unreliable" as const }];
    const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: 11, channels });
    const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: 12, channels });
    let s = -1;
    const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, {
      seed: 73,
      link: { latencyMs: 10 },
      onEvent: (address, ev) => {
        if (address === pair.serverAddress && ev.type === "connect") s = ev.connection;
      },
    });
    client.connect(pair.now, pair.serverAddress);
    for (let i = 0; i < 400 && s < 0; i++) pair.drive({ maxTimeMs: 10, maxSteps: 10_000 });
    pair.drive({ maxTimeMs: 200, maxSteps: 100_000 });
    const later = pair.now + 400; // the endpoint has not been called since pair.now
    server.send(s, new Uint8Array(100), { channel: 1 }); // no time, as the API's send()
    server.handleTimeout(later);
    const sent: number[] = [];
    for (let tx = server.pollTransmit(later); tx !== undefined; tx = server.pollTransmit(later)) sent.push(tx.bytes.length);
    expect(server.stats(s).messagesExpired).toBe(0);
    expect(sent.some((n) => n > 100), JSON.stringify(sent)).toBe(true);
  });

  it("messages queued behind a large unreliable message being written still expire, and an explicit send time counts (found by a review)", () => {
    const channels = [{ mode: "reliable-ordered" as const }, { mode: "unreliable" as const }];
    const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: 13, channels });
    const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: 14, channels });
    let s = -1;
    const ages: number[] = [];
    const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, {
      seed: 74,
      toServer: { latencyMs: 10 },
      toClient: { latencyMs: 10, bandwidthBps: 400_000, queuePackets: 16 },
      onEvent: (address, ev, now) => {
        if (address === pair.serverAddress && ev.type === "connect") s = ev.connection;
        if (address === pair.clientAddress && ev.type === "message" && ev.data.length === 100) ages.push(now - new DataView(ev.data.buffer, ev.data.byteOffset).getFloat64(0, true));
      },
    });
    client.connect(pair.now, pair.serverAddress);
    for (let i = 0; i < 400 && s < 0; i++) pair.drive({ maxTimeMs: 10, maxSteps: 10_000 });
    // 60 KB at 400 kbit/s: ~1.2 s on the link. Behind it, a 30 Hz stream of 100 B.
    server.send(s, new Uint8Array(60_000), { channel: 1 }, pair.now);
    const start = pair.now;
    const small = new Uint8Array(100);
    for (let tick = 0; tick < 60; tick++) {
      pair.drive({ until: start + (tick * 1000) / 30, maxSteps: 100_000 });
      new DataView(small.buffer).setFloat64(0, pair.now, true);
      server.send(s, small, { channel: 1 }, pair.now);
      pair.network.flush();
    }
    pair.drive({ until: pair.now + 1000, maxSteps: 100_000 });
    const why = JSON.stringify({ ages: ages.map(Math.round), expired: server.stats(s).messagesExpired });
    expect(server.stats(s).messagesExpired, why).toBeGreaterThan(10);
    // Queued at most 250 ms, then the 16-packet link queue (~0.4 s at most) and 10 ms of path.
    expect(Math.max(...ages), why).toBeLessThan(700);

    // The sans-IO send with a time: the wait counts from it, not from the next write.
    const at = pair.now;
    server.send(s, small, { channel: 1 }, at);
    server.handleTimeout(at + 400);
    for (let tx = server.pollTransmit(at + 400); tx !== undefined; tx = server.pollTransmit(at + 400));
    expect(server.stats(s).messagesExpired, why).toBeGreaterThan(JSON.parse(why).expired);
  });

  it("refuses maxQueueMs on a reliable channel, and one that is not a positive number", () => {
    const make = (channel: ChannelConfig) => new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: 1, channels: [channel] });
    expect(() => make({ mode: "reliable-ordered", maxQueueMs: 100 })).toThrow(ChannelConfigError);
    expect(() => make({ mode: "unreliable", maxQueueMs: 0 })).toThrow(/maxQueueMs/);
    expect(() => make({ mode: "unreliable", maxQueueMs: Number.NaN })).toThrow(/maxQueueMs/);
    expect(() => make({ mode: "unreliable-sequenced", maxQueueMs: 50 })).not.toThrow();
  });
});
