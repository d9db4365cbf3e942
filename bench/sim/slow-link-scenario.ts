/**
 * A game's state stream over a slow link, on the simulator (seeded, virtual clock): the server
 * publishes `keys` values of 60 B on a latest-state channel 20 times a second (about 1.4x what
 * the link carries), and the client sends a 30 Hz stream of 20 B inputs back on a
 * reliable-ordered channel. Both ways: `bandwidthBps`, 25 ms one way (+ [0, 2) ms of jitter, order kept), a 64-datagram tail-drop
 * queue and 28 B of IP/UDP headers per datagram at the bottleneck. A latest-state channel
 * replaces a queued value, so the sender's queue empties with every packet: to its congestion
 * controller this is a light flow, while the link is full (docs/CONGESTION.md, "Slow links").
 *
 * Measured from `warmupMs` on: the server -> client queueing delay (the wait before
 * serialization at the bottleneck, in ms) and the staleness of the client's view, sampled per
 * key every 10 ms: now minus the publish time of the newest value the client holds for it.
 * Used by bench/sim/run.ts (bench:sim) and test/congestion-sim/slow-link.test.ts.
 */
import { Endpoint } from "../../src/session/endpoint.js";
import { Pair } from "../../src/sim/network.js";
import type { EndpointEvent } from "../../src/session/types.js";

export interface SlowLinkOptions {
  seed: number;
  bandwidthBps: number;
  /** Keys published each tick (default: one per 8 kbit/s of the link, ~1.4x its rate). */
  keys?: number;
  /** Simulated seconds after the handshake (default 30). */
  seconds?: number;
  /** Measurement starts this long after the handshake (default 10000: Startup's queue is gone by 8 s at 64 kbit/s). */
  warmupMs?: number;
  /** Largest datagram the path MTU search may reach (default: the session's, 1452). */
  maxMtu?: number;
}

export interface SlowLinkResult {
  /** Server -> client queueing delay, ms. */
  p50QueueDelayMs: number;
  p95QueueDelayMs: number;
  /** Client -> server (the inputs and acks), ms. */
  p95UpQueueDelayMs: number;
  /** The client's latest-state values, ms behind the server's. */
  p50StalenessMs: number;
  p95StalenessMs: number;
  /** Largest datagram size the server used. */
  maxPathMtu: number;
  tailDropped: number;
  /** Bytes the bottleneck carried server -> client over the measurement, as a share of its rate. */
  utilization: number;
  inputsDelivered: number;
}

const PROTOCOL_ID = 0x0a9e5107;
const VALUE_BYTES = 60;
const TICK_MS = 10;
const PUBLISH_EVERY_TICKS = 5; // 20 Hz
const INPUT_EVERY_TICKS = 3; // ~33 Hz

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function runSlowLink(o: SlowLinkOptions): SlowLinkResult {
  const keys = o.keys ?? Math.max(1, Math.round(o.bandwidthBps / 8000));
  const seconds = o.seconds ?? 30;
  const warmupMs = o.warmupMs ?? 10_000;
  const channels = [{ mode: "reliable-ordered" as const }, { mode: "latest-state" as const }];
  const mtu = o.maxMtu === undefined ? {} : { maxMtu: o.maxMtu };
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: o.seed * 2 + 1, channels, ...mtu });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: o.seed * 2 + 2, channels, ...mtu });
  const link = { latencyMs: 25, jitterMs: 2, bandwidthBps: o.bandwidthBps, queuePackets: 64, overheadBytes: 28 };
  let s = -1;
  let c = -1;
  let inputsDelivered = 0;
  /** Per key: the publish time of the newest value the client holds. */
  const held = new Float64Array(keys).fill(NaN);
  const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, {
    seed: o.seed,
    toServer: link,
    toClient: link,
    onEvent: (address, ev) => {
      if (ev.type === "connect") {
        if (address === pair.serverAddress) s = ev.connection;
        else c = ev.connection;
      } else if (ev.type === "message") {
        if (address === pair.clientAddress && ev.channel === 1 && ev.key !== undefined && ev.key < keys) {
          held[ev.key] = new DataView(ev.data.buffer, ev.data.byteOffset, ev.data.byteLength).getFloat64(0, true);
        } else if (address === pair.serverAddress && ev.channel === 0) inputsDelivered++;
      }
    },
  });
  client.connect(pair.now, pair.serverAddress);
  for (let i = 0; i < 400 && (s < 0 || c < 0); i++) pair.drive({ maxTimeMs: 10, maxSteps: 10_000 });
  if (s < 0 || c < 0) throw new Error("slow-link scenario: the handshake did not complete");
  const start = pair.now;
  const value = new Uint8Array(VALUE_BYTES);
  const valueView = new DataView(value.buffer);
  const input = new Uint8Array(20);
  const staleness: number[] = [];
  let maxPathMtu = 0;
  let bytesAtWarmup = 0;
  const ticks = (seconds * 1000) / TICK_MS;
  for (let t = 0; t < ticks; t++) {
    pair.drive({ until: start + t * TICK_MS, maxSteps: 200_000 });
    const now = pair.now;
    const measuring = t * TICK_MS >= warmupMs;
    if (t * TICK_MS === warmupMs) {
      pair.toClient.queueDelay.reset();
      pair.toServer.queueDelay.reset();
      bytesAtWarmup = pair.toClient.stats.deliveredBytes + 28 * pair.toClient.stats.delivered;
      inputsDelivered = 0;
    }
    if (t % PUBLISH_EVERY_TICKS === 0) {
      valueView.setFloat64(0, now, true);
      for (let k = 0; k < keys; k++) server.send(s, value, { channel: 1, key: k }, now);
    }
    if (t % INPUT_EVERY_TICKS === 0) client.send(c, input, { channel: 0 }, now);
    pair.network.flush();
    if (measuring) for (let k = 0; k < keys; k++) staleness.push(Number.isNaN(held[k]!) ? Infinity : now - held[k]!);
    maxPathMtu = Math.max(maxPathMtu, server.stats(s).pathMtu);
  }
  const carried = pair.toClient.stats.deliveredBytes + 28 * pair.toClient.stats.delivered - bytesAtWarmup;
  return {
    p50QueueDelayMs: pair.toClient.queueDelay.percentile(50),
    p95QueueDelayMs: pair.toClient.queueDelay.percentile(95),
    p95UpQueueDelayMs: pair.toServer.queueDelay.percentile(95),
    p50StalenessMs: percentile(staleness, 50),
    p95StalenessMs: percentile(staleness, 95),
    maxPathMtu,
    tailDropped: pair.toClient.stats.tailDropped,
    utilization: (carried * 8) / (o.bandwidthBps * ((seconds * 1000 - warmupMs) / 1000)),
    inputsDelivered,
  };
}
