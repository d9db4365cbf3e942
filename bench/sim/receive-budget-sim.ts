// Many connections each trying to hold its maximum of received data, and an honest one, on the
// simulator (seeded, virtual time): test/session/receive-budget.test.ts and, for the figures,
// bench/sim/receive-budget.ts. Attackers send large messages on a lossy path without
// congestion control: every large unreliable message misses a fragment (a partial until
// evicted), reliable-ordered ones wait behind lost ones (held for ordering).
import { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointConfig, EndpointEvent } from "../../src/session/types.js";
import { Network } from "../../src/sim/network.js";

function endpoint(seed: number, config: Partial<EndpointConfig> = {}): Endpoint {
  return new Endpoint({ protocolId: 0x6a4d4501, seed, engine: "ts", engineLimits: { batchDatagrams: 64, maxRecords: 4096, sendDatagrams: 64 }, ...config });
}

const SERVER = "10.0.0.1:7777";
const HONEST = "10.0.9.9:4000";
const KIB = 1024;

export interface Run {
  maxTotal: number;
  limit: number;
  perConnection: number;
  attackers: number;
  honestSent: number;
  honestReceived: number;
  honestClosed: boolean;
  /** How the attackers' connections ended, as their own endpoints reported it (count per reason). */
  attackerCloses: Record<string, number>;
  counters: Endpoint["counters"];
}

/**
 * `attackers` connections that each try to hold their maximum (30 % loss towards the server, no
 * congestion control, a 60 KiB message every 20 ms on `channel`: 2 unreliable, 6 reliable-
 * ordered), and an honest one sending 100 B reliable-ordered messages, for `ms` virtual ms.
 */
export function run(seed: number, attackers: number, server: Partial<EndpointConfig>, channel: number, ms = 1500): Run {
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
  const attackerCloses: Record<string, number> = {};
  const big = new Uint8Array(60 * KIB).fill(7);
  for (let t = 0; t < ms; t += 20) {
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
        if (ev.type === "disconnect") {
          a.up = false;
          const reason = typeof ev.reason === "string" ? ev.reason : "app";
          attackerCloses[reason] = (attackerCloses[reason] ?? 0) + 1;
        }
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
  for (const a of attack) {
    for (const ev of net.takeEvents(a.address)) {
      if (ev.type !== "disconnect") continue;
      const reason = typeof ev.reason === "string" ? ev.reason : "app";
      attackerCloses[reason] = (attackerCloses[reason] ?? 0) + 1;
    }
  }
  return { maxTotal, limit: serverEndpoint.receiveBudget.limit, perConnection: server.maxReceiveBufferBytes ?? 256 * KIB, attackers, honestSent, honestReceived, honestClosed, attackerCloses, counters: serverEndpoint.counters };
}

