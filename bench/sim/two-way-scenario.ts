/**
 * Both directions of one connection saturated at once, on the simulator (seeded, virtual
 * clock): a reliable-ordered upload from the client and one from the server, 1000 B messages
 * offered at 1.2x the link, over a bottleneck each way with a 250 KB tail-drop queue. Each
 * direction's acks ride the other direction's data, so they wait in its queue (docs/CONGESTION.md,
 * "Both directions saturated at once"). Used by bench/sim/two-way.ts and the congestion-sim tests.
 */
import { Endpoint } from "../../src/session/endpoint.js";
import { Pair } from "../../src/sim/network.js";
import type { EndpointEvent } from "../../src/session/types.js";

export interface TwoWayOptions {
  seed: number;
  bandwidthBps: number;
  oneWayMs: number;
  /** Simulated seconds; goodput is measured over the second half. */
  seconds: number;
}

export interface TwoWayResult {
  upMbps: number;
  downMbps: number;
  /** The link's rate in message bytes (1000 B of every 1019 B datagram). */
  ceilingMbps: number;
}

const PROTOCOL_ID = 0x2a2a7777;
const MESSAGE_BYTES = 1000;

export function runTwoWay(o: TwoWayOptions): TwoWayResult {
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: o.seed * 2 + 1 });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: o.seed * 2 + 2 });
  const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, {
    seed: o.seed,
    link: { bandwidthBps: o.bandwidthBps, latencyMs: o.oneWayMs, queueBytes: 250_000 },
  });
  const c = client.connect(pair.now, pair.serverAddress);
  let s = -1;
  for (let i = 0; i < 1000 && s < 0; i++) {
    pair.drive({ maxTimeMs: 10, maxSteps: 100_000 });
    for (const e of pair.serverEvents()) if (e.type === "connect") s = e.connection;
    pair.clientEvents();
  }
  if (s < 0) throw new Error(`seed ${o.seed}: no handshake`);
  const message = new Uint8Array(MESSAGE_BYTES);
  const perMs = (o.bandwidthBps / 8 / 1000 / MESSAGE_BYTES) * 1.2;
  const start = pair.now;
  const totalMs = Math.round(o.seconds * 1000);
  let debt = 0;
  let up = 0;
  let down = 0;
  for (let t = 0; t < totalMs; t++) {
    for (debt += perMs; debt >= 1; debt--) {
      client.send(c, message, { channel: 0 });
      server.send(s, message, { channel: 0 });
    }
    pair.network.flush();
    pair.drive({ until: start + t + 1, maxSteps: 1_000_000 });
    const counted = t >= totalMs / 2;
    for (const e of pair.serverEvents()) if (e.type === "message" && counted) up++;
    for (const e of pair.clientEvents()) if (e.type === "message" && counted) down++;
  }
  const mbps = (n: number): number => +((n * MESSAGE_BYTES * 8) / (totalMs / 2 / 1000) / 1e6).toFixed(2);
  return { upMbps: mbps(up), downMbps: mbps(down), ceilingMbps: +((o.bandwidthBps / 1e6) * (MESSAGE_BYTES / 1019)).toFixed(2) };
}
