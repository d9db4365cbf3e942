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

/**
 * A connected client and server over the bottleneck; their connection ids. `downBps`: the
 * server -> client link's rate when it differs from `bandwidthBps` (the client -> server one).
 */
function connected(o: { seed: number; bandwidthBps: number; oneWayMs: number; downBps?: number }) {
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: o.seed * 2 + 1 });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: o.seed * 2 + 2 });
  const link = { bandwidthBps: o.bandwidthBps, latencyMs: o.oneWayMs, queueBytes: 250_000 };
  const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, {
    seed: o.seed,
    link,
    ...(o.downBps === undefined ? {} : { toClient: { ...link, bandwidthBps: o.downBps } }),
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
function offered(o: { bandwidthBps: number }): () => number {
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

export interface AsymmetricOptions {
  seed: number;
  /** client -> server (the upload measured) and server -> client rates, bit/s. */
  upBps: number;
  downBps: number;
  oneWayMs: number;
  /** Simulated seconds; figures are measured over the second half. */
  seconds: number;
}

export interface AsymmetricResult {
  /** Goodput each way over the second half, Mbit/s of messages. */
  upMbps: number;
  downMbps: number;
  /** The upload link's rate in message bytes. */
  upCeilingMbps: number;
  /** The client's (the upload's) bandwidth estimate: its highest over the second half and over
   *  the whole run, Mbit/s (datagram bytes: the links here count no header overhead). */
  peakEstimateMbps: number;
  peakEstimateAllMbps: number;
  /** Queueing delay at the client -> server bottleneck over the second half, ms. */
  upQueueP50Ms: number;
  upQueueP95Ms: number;
}

/**
 * A fast upload beside a slow reverse path that is busy too: the client uploads at 1.2x
 * `upBps`, and the server uploads at 1.2x `downBps` over the slow way back (a home uplink's
 * mirror: a game server's stream to a client on a thin downlink, or a peer-to-peer transfer
 * between unequal links). The upload's acks and receive-time reports ride the server's data,
 * which leaves the server only as fast as the slow link takes it: the reports are sparse
 * (a few per upload min RTT), and acks arrive bunched behind the server's queue. Timing the
 * upload's probe by those acks overestimated the path (docs/CONGESTION.md, ProbeBW under
 * sparse reports): this scenario is the review's check of that.
 */
export function runAsymmetric(o: AsymmetricOptions): AsymmetricResult {
  const ends = connected({ seed: o.seed, bandwidthBps: o.upBps, oneWayMs: o.oneWayMs, downBps: o.downBps });
  const { pair, server, client, c, s } = ends;
  const message = new Uint8Array(MESSAGE_BYTES);
  const dueUp = offered({ bandwidthBps: o.upBps });
  const dueDown = offered({ bandwidthBps: o.downBps });
  const start = pair.now;
  const totalMs = Math.round(o.seconds * 1000);
  let up = 0;
  let down = 0;
  let peak = 0;
  let peakAll = 0;
  for (let t = 0; t < totalMs; t++) {
    for (let n = dueUp(); n > 0; n--) client.send(c, message, { channel: 0 });
    for (let n = dueDown(); n > 0; n--) server.send(s, message, { channel: 0 });
    pair.network.flush();
    pair.drive({ until: start + t + 1, maxSteps: 1_000_000 });
    const counted = t >= totalMs / 2;
    if (t === Math.floor(totalMs / 2)) pair.toServer.queueDelay.reset();
    for (const e of pair.serverEvents()) if (e.type === "message" && counted) up++;
    for (const e of pair.clientEvents()) if (e.type === "message" && counted) down++;
    if (t % 10 === 0) {
      const estimate = client.stats(c).bandwidthEstimateBps / 1e6;
      peakAll = Math.max(peakAll, estimate);
      if (counted) peak = Math.max(peak, estimate);
    }
  }
  const mbps = (n: number): number => +((n * MESSAGE_BYTES * 8) / (totalMs / 2 / 1000) / 1e6).toFixed(2);
  const q = pair.toServer.queueDelay;
  return {
    upMbps: mbps(up),
    downMbps: mbps(down),
    upCeilingMbps: +((o.upBps / 1e6) * (MESSAGE_BYTES / 1019)).toFixed(2),
    peakEstimateMbps: +peak.toFixed(2),
    peakEstimateAllMbps: +peakAll.toFixed(2),
    upQueueP50Ms: +q.percentile(50).toFixed(2),
    upQueueP95Ms: +q.percentile(95).toFixed(2),
  };
}
