/**
 * The endpoint's reused storage keeps its promises: send()'s one-entry connection cache never
 * sends to (or hides the typed error of) a connection that closed, and the event and transmit
 * queues, emptied in place between drains, hand out every event once, in order, across drains
 * short and long (a burst longer than the reuse limit replaces its array instead).
 */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { CLIENT, pollEvents, pump, run, SERVER } from "./helpers.js";

const PROTOCOL_ID = 0x5e551013;

function connected(seed: number): { server: Endpoint; client: Endpoint; c: number; s: number; now: number } {
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: seed * 2 + 1 });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: seed * 2 + 2 });
  const c = client.connect(0, SERVER);
  const { now, server: events } = run(server, client, 0, 20);
  const s = events.find((e) => e.type === "connect")?.connection;
  expect(s, `seed ${seed}`).toBeDefined();
  return { server, client, c, s: s as number, now };
}

describe("endpoint storage reuse", () => {
  it("send() after the cached connection closed throws the typed errors, before and after its disconnect event", () => {
    const { server, client, c, s, now } = connected(1);
    client.send(c, new Uint8Array([1]), { channel: 0 }, now);
    server.send(s, new Uint8Array([2]), { channel: 0 }, now); // s is now the server's cached connection
    // The peer's DISCONNECT closes the server side (remove() runs, the event is queued).
    client.close(c, "normal", undefined, now);
    const sink = { server: [] as EndpointEvent[], client: [] as EndpointEvent[] };
    for (let t = now; t < now + 5; t++) {
      for (const ep of [client, server]) {
        const due = ep.pollTimeout();
        if (due !== undefined && due <= t) ep.handleTimeout(t);
      }
      pump(client, CLIENT, server, t);
      if (server.connectionCount === 0) break;
    }
    expect(server.connectionCount).toBe(0);
    expect(() => server.send(s, new Uint8Array([3]), { channel: 0 })).toThrow(expect.objectContaining({ code: "ERR_CONNECTION_CLOSED" }));
    sink.server.push(...pollEvents(server));
    expect(sink.server.some((e) => e.type === "disconnect" && e.connection === s)).toBe(true);
    expect(() => server.send(s, new Uint8Array([3]), { channel: 0 })).toThrow(expect.objectContaining({ code: "ERR_UNKNOWN_CONNECTION" }));
  });

  it("send() alternating between connections reaches each one, and an unknown id still throws", () => {
    const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: 7 });
    const clients = [0, 1, 2].map((i) => new Endpoint({ protocolId: PROTOCOL_ID, seed: 10 + i }));
    const addresses = clients.map((_, i) => `10.0.1.${i + 1}:5000`);
    const ids = clients.map((cl) => cl.connect(0, SERVER));
    const serverIds = new Map<string, number>();
    const received = clients.map(() => [] as number[]);
    for (let now = 0; now < 400 && received.some((r) => r.length < 6); now++) {
      for (const ep of [server, ...clients]) {
        const due = ep.pollTimeout();
        if (due !== undefined && due <= now) ep.handleTimeout(now);
      }
      clients.forEach((cl, i) => pump(cl, addresses[i]!, server, now));
      for (const e of pollEvents(server)) if (e.type === "connect") serverIds.set(e.address, e.connection);
      if (serverIds.size === 3 && now % 10 === 0) {
        // Round-robin over the peers, twice to the same one now and then (cache hit and miss).
        for (let k = 0; k < 3; k++) {
          const id = serverIds.get(addresses[k]!)!;
          server.send(id, new Uint8Array([k, now & 0xff]), { channel: 0 }, now);
          if (k === 1) server.send(id, new Uint8Array([k, now & 0xff]), { channel: 0 }, now);
        }
      }
      let n = 0;
      for (let t = server.pollTransmit(now); t !== undefined && n < 10_000; t = server.pollTransmit(now), n++) {
        const i = addresses.indexOf(t.to);
        clients[i]!.handleDatagram(now, SERVER, t.bytes);
      }
      clients.forEach((cl, i) => {
        for (const e of pollEvents(cl)) if (e.type === "message") received[i]!.push(e.data[0]!);
      });
    }
    received.forEach((r, i) => {
      expect(r.length, `client ${i}`).toBeGreaterThanOrEqual(6);
      expect(r.every((k) => k === i), `client ${i} got only its own messages`).toBe(true);
    });
    expect(received[1]!.length).toBeGreaterThan(received[0]!.length);
    expect(() => server.send(9999, new Uint8Array([1]), { channel: 0 })).toThrow(expect.objectContaining({ code: "ERR_UNKNOWN_CONNECTION" }));
    void ids;
  });

  it("events come out once and in order across short drains and bursts longer than the reuse limit", () => {
    const { server, client, c, s, now } = connected(2);
    let t = now;
    let expected = 0;
    for (const burst of [1, 3, 1, 200, 2, 70, 1, 65, 64, 1]) {
      for (let k = 0; k < burst; k++) client.send(c, new Uint8Array([(expected + k) & 0xff, (expected + k) >> 8]), { channel: 0 }, t);
      const got: number[] = [];
      for (let i = 0; i < 200 && got.length < burst; i++, t++) {
        const due = client.pollTimeout();
        if (due !== undefined && due <= t) client.handleTimeout(t);
        pump(client, CLIENT, server, t);
        for (const e of pollEvents(server)) if (e.type === "message" && e.connection === s) got.push(e.data[0]! | (e.data[1]! << 8));
        const due2 = server.pollTimeout();
        if (due2 !== undefined && due2 <= t) server.handleTimeout(t);
        pump(server, SERVER, client, t);
        pollEvents(client);
      }
      expect(got, `burst of ${burst}`).toEqual(Array.from({ length: burst }, (_, k) => expected + k));
      expected += burst;
    }
    expect(server.pollEvent()).toBeUndefined();
    expect(client.pollTransmit(t)).toBeUndefined();
  });
});
