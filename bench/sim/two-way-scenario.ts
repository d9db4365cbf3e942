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

/** A connected client and server over the bottleneck; their connection ids. */
function connected(o: { seed: number; bandwidthBps: number; oneWayMs: number }) {
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: o.seed * 2 + 1 });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: o.seed * 2 + 2 });
  const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, {
    seed: o.seed,
    link: { bandwidthBps: o.bandwidthBps, latencyMs: o.oneWayMs, queueBytes: 250_000 },
  });
  const c = client.connect(pair.now, pair.serverAddress);
  let s = -1;
  let clientUp = false;
  for (let i = 0; i < 1000 && (s < 0 || !clientUp); i++) {
    pair.drive({ maxTimeMs: 10, maxSteps: 100_000 });
    for (const e of pair.serverEvents()) if (e.type === "connect") s = e.connection;
    for (const e of pair.clientEvents()) if (e.type === "connect") clientUp = true;
  }
  if (s < 0 || !clientUp) throw new Error(`seed ${o.seed}: no handshake`);
  return { pair, server, client, c, s };
}

/**
 * Run `o.seconds` in 1 ms ticks: `tick(t)` sends, then the network runs to the next tick.
 * Counts messages each way over the second half and returns Mbit/s of messages.
 */
function measure(o: TwoWayOptions, tick: (ends: ReturnType<typeof connected>, t: number) => void): TwoWayResult {
  const ends = connected(o);
  const { pair } = ends;
  const start = pair.now;
  const totalMs = Math.round(o.seconds * 1000);
  let up = 0;
  let down = 0;
  for (let t = 0; t < totalMs; t++) {
    tick(ends, t);
    pair.network.flush();
    pair.drive({ until: start + t + 1, maxSteps: 1_000_000 });
    const counted = t >= totalMs / 2;
    for (const e of pair.serverEvents()) if (e.type === "message" && counted) up++;
    for (const e of pair.clientEvents()) if (e.type === "message" && counted) down++;
  }
  const mbps = (n: number): number => +((n * MESSAGE_BYTES * 8) / (totalMs / 2 / 1000) / 1e6).toFixed(2);
  return { upMbps: mbps(up), downMbps: mbps(down), ceilingMbps: +((o.bandwidthBps / 1e6) * (MESSAGE_BYTES / 1019)).toFixed(2) };
}

/** 1000 B messages offered at 1.2x the link per ms: how many this tick (a running debt). */
function offered(o: TwoWayOptions): () => number {
  const perMs = (o.bandwidthBps / 8 / 1000 / MESSAGE_BYTES) * 1.2;
  let debt = 0;
  return () => {
    debt += perMs;
    const n = Math.floor(debt);
    debt -= n;
    return n;
  };
}

export function runTwoWay(o: TwoWayOptions): TwoWayResult {
  const message = new Uint8Array(MESSAGE_BYTES);
  const due = offered(o);
  return measure(o, ({ server, client, c, s }) => {
    for (let n = due(); n > 0; n--) {
      client.send(c, message, { channel: 0 });
      server.send(s, message, { channel: 0 });
    }
  });
}

/**
 * A bulk download (server -> client, 1000 B messages at 1.2x the link) beside 100 B client
 * inputs at `inputHz`: the download's acks ride the inputs and its pure acks. Goodput of the
 * download over the second half.
 */
export function runDownloadWithInputs(o: TwoWayOptions & { inputHz: number }): { downMbps: number; ceilingMbps: number } {
  const message = new Uint8Array(MESSAGE_BYTES);
  const input = new Uint8Array(100);
  const due = offered(o);
  let nextInput = 0;
  const r = measure(o, ({ server, client, c, s }, t) => {
    for (let n = due(); n > 0; n--) server.send(s, message, { channel: 0 });
    if (t >= nextInput) {
      client.send(c, input, { channel: 0 });
      nextInput += 1000 / o.inputHz;
    }
  });
  return { downMbps: r.downMbps, ceilingMbps: r.ceilingMbps };
}
