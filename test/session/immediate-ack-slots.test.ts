// Immediate acks (sealed when a connection has many unacknowledged packets after one receive
// batch) wait in slots of the engine's send arena until pollTransmit takes them. A driver that
// takes one, then feeds more datagrams before draining, must not get a new ack written over a
// slot a queued ack still uses: each client must receive exactly its own ack, intact.
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import { drain, eventsOf, transmitsOf } from "./helpers.js";

const channels = [{ mode: "reliable-ordered" as const }];
const SERVER = "10.0.0.9:2";
const CLIENTS = ["10.0.0.1:1", "10.0.0.2:1"];

function totalDrops(e: Endpoint): number {
  return e.counters.drops.reduce((a, b) => a + b, 0);
}

describe("immediate ack slots", () => {
  it("an ack sealed after one was taken does not overwrite another client's queued ack", () => {
    const server = new Endpoint({ protocolId: 1, server: true, maxConnections: 8, channels, seed: 2, congestion: "none" });
    const clients = CLIENTS.map((_, i) => new Endpoint({ protocolId: 1, maxConnections: 0, channels, seed: 10 + i, congestion: "none" }));
    let now = 0;
    const ids = clients.map((c) => c.connect(now, SERVER));
    const connected = new Set<number>();
    for (let round = 0; round < 50 && connected.size < 2; round++) {
      now += 1;
      clients.forEach((c, i) => {
        c.handleTimeout(now);
        for (const e of eventsOf(c)) if (e.type === "connect") connected.add(i);
        for (const t of transmitsOf(c, now)) server.handleDatagram(now, CLIENTS[i]!, t.bytes);
      });
      server.handleTimeout(now);
      drain(eventsOf(server));
      for (const t of transmitsOf(server, now)) clients[CLIENTS.indexOf(t.to)]!.handleDatagram(now, SERVER, t.bytes);
    }
    expect(connected.size).toBe(2);

    // Each client writes 48 data datagrams (one 1000 B message each), captured.
    const captured = clients.map((c, i) => {
      for (let k = 0; k < 48; k++) c.send(ids[i]!, new Uint8Array(1000).fill(k), { channel: 0 });
      const out: Uint8Array[] = [];
      for (const t of transmitsOf(c, now)) out.push(t.bytes.slice());
      return out;
    });
    expect(captured.map((c) => c.length >= 32)).toEqual([true, true]);

    now += 0.01;
    // 16 from each client in one batch: both connections owe an immediate ack (two slots).
    for (let k = 0; k < 16; k++) server.handleDatagram(now, CLIENTS[0]!, captured[0]![k]!);
    for (let k = 0; k < 16; k++) server.handleDatagram(now, CLIENTS[1]!, captured[1]![k]!);
    const first = server.pollTransmit(now);
    expect(first?.to).toBe(CLIENTS[0]);
    const out: { to: string; bytes: Uint8Array }[] = [{ to: first!.to, bytes: first!.bytes.slice() }];
    // 16 more from client 0 before the driver drains: a third immediate ack.
    for (let k = 16; k < 32; k++) server.handleDatagram(now, CLIENTS[0]!, captured[0]![k]!);
    for (const t of transmitsOf(server, now)) out.push({ to: t.to, bytes: t.bytes.slice() });

    const dropsBefore = clients.map(totalDrops);
    for (const t of out) clients[CLIENTS.indexOf(t.to)]!.handleDatagram(now, SERVER, t.bytes);
    for (const c of clients) drain(eventsOf(c));
    // Every datagram the server sent is valid for the client it was addressed to.
    expect(clients.map((c, i) => totalDrops(c) - dropsBefore[i]!)).toEqual([0, 0]);
    // Client 1's ack reached it: its first 16 packets are acknowledged, none still in flight.
    expect(clients[1]!.stats(ids[1]!).packets.delivered).toBeGreaterThanOrEqual(16);
  });
});
