/**
 * Memory across connections (SESSION "Limits"): what all of a server's connections hold received
 * stays under maxTotalReceiveBufferBytes. Attacking connections each try to hold their own
 * maximum (maxReceiveBufferBytes): large unreliable messages on a lossy path, every one missing
 * a fragment, so each stays a partial until evicted; reliable-ordered messages behind a lost
 * one, held for ordering. An honest connection keeps sending through it all. Seeded simulator.
 */
import { describe, expect, it } from "vitest";
import type { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointConfig, EndpointEvent } from "../../src/session/types.js";
import { Network } from "../../src/sim/network.js";
import { endpoint } from "../game/helpers.js";

const SERVER = "10.0.0.1:7777";
const HONEST = "10.0.9.9:4000";
const KIB = 1024;

interface Run {
  maxTotal: number;
  limit: number;
  perConnection: number;
  attackers: number;
  honestSent: number;
  honestReceived: number;
  honestClosed: boolean;
  counters: Endpoint["counters"];
}

function run(seed: number, attackers: number, server: Partial<EndpointConfig>, channel: number): Run {
  const net = new Network<EndpointEvent>({ seed, defaultLink: { latencyMs: 10 } });
  const serverEndpoint = net.addNode(SERVER, endpoint(seed, { server: true, maxConnections: attackers + 4, maxReceiveBufferBytes: 256 * KIB, engineLimits: { batchDatagrams: 256, maxRecords: 16_384, sendDatagrams: 256 }, ...server }));
  const attack = Array.from({ length: attackers }, (_, i) => {
    const address = `10.66.0.${i + 1}:5000`;
    // The attacker ignores congestion; its datagrams to the server lose 30 %, the server's
    // acks all arrive (so it never stops for lack of acks).
    const ep = net.addNode(address, endpoint(seed + 100 + i, { congestion: "none", engineLimits: { batchDatagrams: 64, maxRecords: 8192, sendDatagrams: 512 } }));
    net.link(address, SERVER, { latencyMs: 10, lossRate: 0.3 });
    return { address, ep, conn: ep.connect(net.now, SERVER), up: false };
  });
  const honestEp = net.addNode(HONEST, endpoint(seed + 99));
  const honestConn = honestEp.connect(net.now, SERVER);
  let honestUp = false;
  let honestClosed = false;
  let honestSent = 0;
  let honestReceived = 0;
  let maxTotal = 0;
  let honestOnServer = -1;
  const big = new Uint8Array(60 * KIB).fill(7);
  for (let t = 0; t < 1500; t += 20) {
    for (const a of attack) {
      if (!a.up) continue;
      // About 3 MB/s each: far more than a connection may hold.
      a.ep.send(a.conn, big, { channel });
    }
    if (honestUp) {
      honestEp.send(honestConn, new Uint8Array(100).fill(honestSent & 0xff), { channel: 0 });
      honestSent++;
    }
    net.drive({ maxTimeMs: 20, maxSteps: 200_000 });
    for (const a of attack) {
      for (const ev of net.takeEvents(a.address)) {
        if (ev.type === "connect") a.up = true;
        if (ev.type === "disconnect") a.up = false;
      }
    }
    for (const ev of net.takeEvents(HONEST)) {
      if (ev.type === "connect") honestUp = true;
      if (ev.type === "disconnect") honestClosed = true;
    }
    for (const ev of net.takeEvents(SERVER)) {
      if (ev.type === "message" && ev.channel === 0 && ev.data.length === 100) honestReceived++;
      if (ev.type === "connect" && ev.address === HONEST) honestOnServer = ev.connection;
      if (ev.type === "disconnect" && ev.connection === honestOnServer) honestClosed = true;
    }
    maxTotal = Math.max(maxTotal, serverEndpoint.receiveBudget.total);
  }
  net.drive({ maxTimeMs: 500, maxSteps: 200_000 });
  for (const ev of net.takeEvents(SERVER)) if (ev.type === "message" && ev.channel === 0 && ev.data.length === 100) honestReceived++;
  return { maxTotal, limit: serverEndpoint.receiveBudget.limit, perConnection: 256 * KIB, attackers, honestSent, honestReceived, honestClosed, counters: serverEndpoint.counters };
}

describe("what all connections hold received", () => {
  it("unreliable partials of many connections stay under the endpoint's bound, oldest evicted first; the honest connection keeps working", () => {
    const r = run(3, 16, { maxTotalReceiveBufferBytes: 1024 * KIB }, 2);
    const why = JSON.stringify({ ...r, counters: undefined });
    // Each could hold 256 KiB (4 MiB in all); together they are held to 1 MiB.
    expect(r.maxTotal, why).toBeLessThanOrEqual(r.limit);
    expect(r.maxTotal, why).toBeGreaterThan(r.limit / 2);
    expect(r.honestClosed, why).toBe(false);
    expect(r.honestReceived, why).toBe(r.honestSent);
    expect(r.honestSent, why).toBeGreaterThan(50);
    // Unreliable data is evicted, not a reason to end anyone.
    expect(r.counters.receiveBudgetCloses, why).toBe(0);
    // Without the shared bound, the same attack holds far more.
    const open = run(3, 16, {}, 2);
    expect(open.maxTotal).toBeGreaterThan(2 * r.limit);
  });

  it("reliable data held for ordering past the bound ends the connections that hold the most, not the honest one", () => {
    const r = run(4, 16, { maxTotalReceiveBufferBytes: 1024 * KIB }, 6);
    const why = JSON.stringify({ ...r, counters: undefined });
    expect(r.counters.receiveBudgetCloses, why).toBeGreaterThan(0);
    expect(r.honestClosed, why).toBe(false);
    expect(r.honestReceived, why).toBe(r.honestSent);
    // Between receive batches it may pass the bound by at most one batch of datagrams.
    expect(r.maxTotal, why).toBeLessThanOrEqual(r.limit + 256 * 1500);
    // Without the shared bound the same attack holds more than that.
    const open = run(4, 16, {}, 6);
    expect(open.maxTotal, JSON.stringify({ ...open, counters: undefined })).toBeGreaterThan(r.limit + 256 * 1500);
  });
});
