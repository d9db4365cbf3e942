/**
 * The endpoint's per-datagram shortcuts keep their promises: a Transmit's bytes are exactly its
 * datagram whatever the lengths before it (views of send slot 0 are reused per length), a
 * connection that stays in the ready line still has its timers in the heap once the line drains
 * (its deadline is refreshed when it leaves the line), and the one-entry address cache of
 * handleDatagram follows a connection that is replaced at the same address.
 */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import { CLIENT, pollEvents, pump, run, SERVER } from "./helpers.js";

const PROTOCOL_ID = 0x5e551012;

function message(seed: number, length: number): Uint8Array {
  const m = new Uint8Array(length);
  for (let i = 0; i < length; i++) m[i] = (seed * 31 + i * 7) & 0xff;
  return m;
}

function connected(seed: number): { server: Endpoint; client: Endpoint; c: number; s: number; now: number } {
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: seed * 2 + 1 });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: seed * 2 + 2 });
  const c = client.connect(0, SERVER);
  const r = run(server, client, 0, 20);
  const s = r.server.find((e) => e.type === "connect")?.connection;
  expect(s).toBeDefined();
  expect(r.client.some((e) => e.type === "connect" && e.connection === c)).toBe(true);
  return { server, client, c, s: s as number, now: r.now };
}

describe("endpoint fast paths", () => {
  it("each transmit's bytes are exactly its own datagram, whatever the lengths before it", () => {
    const { server, client, c, now } = connected(1);
    const sizes = [10, 900, 10, 3000, 10, 1, 900, 250];
    sizes.forEach((size, i) => client.send(c, message(i, size), { channel: 0 }, now));
    const seen: number[] = [];
    let sent = client.counters.bytesSent;
    for (let t = client.pollTransmit(now); t !== undefined && seen.length < 100; t = client.pollTransmit(now)) {
      // The view covers this datagram only: its length is what the counters just added.
      expect(t.bytes.length).toBe(client.counters.bytesSent - sent);
      sent = client.counters.bytesSent;
      seen.push(t.bytes.length);
      server.handleDatagram(now, CLIENT, t.bytes);
    }
    expect(new Set(seen).size).toBeGreaterThan(1);
    const got = pollEvents(server).filter((e) => e.type === "message");
    expect(got.map((e) => (e.type === "message" ? e.data.length : -1))).toEqual(sizes);
    got.forEach((e, i) => expect(e.type === "message" && e.data).toEqual(message(i, sizes[i])));
  });

  it("a burst lost entirely is resent at the retransmission timeout, not at the keepalive", () => {
    // Server to client: the server runs no clock-sync timer, whose firing would refresh the
    // connection's heap entry anyway.
    const { server, client, s, now } = connected(2);
    // Fewer than the window allows: the connection leaves the ready line because it has
    // nothing more to send (not because the window is full), after staying in it for several
    // datagrams, all lost.
    for (let i = 0; i < 6; i++) server.send(s, message(i, 1000), { channel: 0 }, now);
    expect(pump(server, SERVER, client, now, true)).toBe(6);
    const due = server.pollTimeout() as number;
    expect(due).toBeGreaterThan(now);
    // Initial RTO (1 s) plus the ack delay, well before the 2.5 s keepalive.
    expect(due).toBeLessThan(now + 1100);
    const r = run(server, client, due, 200);
    const got = r.client.filter((e) => e.type === "message");
    expect(got.length).toBe(6);
    got.forEach((e, i) => expect(e.type === "message" && e.data).toEqual(message(i, 1000)));
  });

  it("a peer that reconnects from the same address reaches its new connection", () => {
    const { server, client, c, s, now } = connected(3);
    client.send(c, message(1, 20), { channel: 0 }, now);
    const first = run(server, client, now, 5);
    expect(first.server.filter((e) => e.type === "message").map((e) => e.connection)).toEqual([s]);
    // The peer restarts: a new endpoint, the same address (the cache held the old connection).
    const restarted = new Endpoint({ protocolId: PROTOCOL_ID, seed: 99 });
    const c2 = restarted.connect(first.now, SERVER);
    const hs = run(server, restarted, first.now, 20);
    const s2 = hs.server.find((e) => e.type === "connect")?.connection;
    expect(s2).toBeDefined();
    expect(s2).not.toBe(s);
    restarted.send(c2, message(2, 20), { channel: 0 }, hs.now);
    const second = run(server, restarted, hs.now, 5);
    const got = second.server.filter((e) => e.type === "message");
    expect(got.map((e) => e.connection)).toEqual([s2]);
    expect(got[0].type === "message" && got[0].data).toEqual(message(2, 20));
  });
});
