/**
 * Keepalive, Unresponsive and Idle are not stored timers: they are computed from the times of
 * the last send and receive (docs/SESSION.md "Timers"). These tests drive a server by hand with
 * fractional clocks and check the exact instants: pollTimeout() values, the keepalives sent, the
 * "unresponsive" event's silentMs and the "timeout" disconnect.
 */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import { drain, eventsOf, transmitsOf } from "./helpers.js";
import type { EndpointEvent } from "../../src/session/types.js";

const PROTOCOL_ID = 0x71e3e400;
const SERVER = "10.0.0.1:1000";
const CLIENT = "10.0.0.2:2000";
const TIMEOUT_MS = 1000;
const UNRESPONSIVE_MS = 500;
const KEEPALIVE_MS = 250;

function endpoints(): { server: Endpoint; client: Endpoint } {
  const common = { protocolId: PROTOCOL_ID, engine: "ts" as const, timeoutMs: TIMEOUT_MS, unresponsiveMs: UNRESPONSIVE_MS, keepaliveMs: KEEPALIVE_MS };
  return { server: new Endpoint({ ...common, server: true, seed: 11 }), client: new Endpoint({ ...common, seed: 12 }) };
}

/** Move datagrams both ways at `now` until both sides are quiet (bounded). Returns the events. */
function exchange(server: Endpoint, client: Endpoint, now: number): { server: EndpointEvent[]; client: EndpointEvent[] } {
  const events = { server: [] as EndpointEvent[], client: [] as EndpointEvent[] };
  for (let round = 0; round < 50; round++) {
    let moved = 0;
    for (const tx of transmitsOf(client, now)) {
      server.handleDatagram(now, CLIENT, tx.bytes.slice());
      moved++;
    }
    for (const tx of transmitsOf(server, now)) {
      client.handleDatagram(now, SERVER, tx.bytes.slice());
      moved++;
    }
    for (const ev of eventsOf(server)) events.server.push(ev);
    for (const ev of eventsOf(client)) events.client.push(ev);
    if (moved === 0) break;
  }
  return events;
}

/** Connect, then let the connection settle (acks, first clock exchange). Returns the server's connection and the time. */
function connected(server: Endpoint, client: Endpoint): { conn: number; now: number } {
  let now = 0.375;
  client.connect(now, SERVER);
  let conn = -1;
  for (let step = 0; step < 200 && conn < 0; step++) {
    const ev = exchange(server, client, now);
    for (const e of ev.server) if (e.type === "connect") conn = e.connection;
    now += 1.125;
  }
  expect(conn).toBeGreaterThan(0);
  // Let delayed acks and the first clock requests settle with the client still talking.
  for (let step = 0; step < 40; step++) {
    for (const ep of [server, client]) {
      const due = ep.pollTimeout();
      if (due !== undefined && due <= now) ep.handleTimeout(now);
    }
    exchange(server, client, now);
    now += 1.125;
  }
  return { conn, now };
}

describe("computed timers (keepalive, unresponsive, idle)", () => {
  it("a silent peer: keepalives every keepaliveMs after the last send, unresponsive and timeout at the exact instants", () => {
    const { server, client } = endpoints();
    const { conn, now: start } = connected(server, client);
    // From here the client is silent: nothing it sends reaches the server, and the server's
    // datagrams are dropped too. The server's last receive is at or before `start`.
    let now = start;
    // Drain anything the server still has due (dropped).
    drain(transmitsOf(server, now));
    const events: { at: number; ev: EndpointEvent }[] = [];
    const keepalives: number[] = [];
    let deadlines = 0;
    for (let step = 0; step < 1000; step++) {
      const due = server.pollTimeout();
      if (due === undefined) break;
      expect(due).toBeGreaterThanOrEqual(now);
      now = due;
      deadlines++;
      server.handleTimeout(now);
      for (const ev of eventsOf(server)) events.push({ at: now, ev });
      for (const tx of transmitsOf(server, now)) keepalives.push(now);
      if (events.some((e) => e.ev.type === "disconnect")) break;
    }
    expect(deadlines).toBeLessThan(1000);
    const unresponsive = events.find((e) => e.ev.type === "unresponsive");
    const disconnect = events.find((e) => e.ev.type === "disconnect");
    expect(unresponsive).toBeDefined();
    expect(disconnect).toBeDefined();
    if (unresponsive === undefined || unresponsive.ev.type !== "unresponsive" || disconnect === undefined || disconnect.ev.type !== "disconnect") return;
    expect(unresponsive.ev.connection).toBe(conn);
    expect(unresponsive.ev.silentMs).toBe(UNRESPONSIVE_MS);
    const lastReceived = unresponsive.at - UNRESPONSIVE_MS;
    expect(lastReceived).toBeLessThanOrEqual(start);
    expect(disconnect.ev.reason).toBe("timeout");
    expect(disconnect.at).toBe(lastReceived + TIMEOUT_MS);
    // Keepalives: each one keepaliveMs after the previous datagram, none after the timeout.
    expect(keepalives.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < keepalives.length; i++) expect(keepalives[i] - keepalives[i - 1]).toBe(KEEPALIVE_MS);
    expect(keepalives[keepalives.length - 1]).toBeLessThan(disconnect.at);
  });

  it("traffic moves the computed deadlines: pollTimeout is never later than lastSent + keepaliveMs while connected", () => {
    const { server, client } = endpoints();
    const { conn, now: start } = connected(server, client);
    let now = start;
    let serverLastSent = -Infinity;
    for (let step = 0; step < 400; step++) {
      now += 3.3;
      if (step % 10 === 0) server.send(conn, new Uint8Array([step & 255]), { channel: 0 }, now);
      for (const ep of [server, client]) {
        const due = ep.pollTimeout();
        if (due !== undefined && due <= now) ep.handleTimeout(now);
      }
      for (const tx of transmitsOf(client, now)) server.handleDatagram(now, CLIENT, tx.bytes.slice());
      for (const tx of transmitsOf(server, now)) {
        serverLastSent = now;
        client.handleDatagram(now, SERVER, tx.bytes.slice());
      }
      for (const ev of eventsOf(server)) expect(ev.type).not.toBe("disconnect");
      for (const ev of eventsOf(client)) expect(ev.type).not.toBe("disconnect");
      const due = server.pollTimeout();
      expect(due).toBeDefined();
      if (serverLastSent > -Infinity) expect(due as number).toBeLessThanOrEqual(serverLastSent + KEEPALIVE_MS);
    }
  });
});
