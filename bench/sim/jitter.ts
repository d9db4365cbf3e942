// Jitter is not loss: loss detection on paths whose per-packet jitter reorders datagrams, on the
// simulator (seeded, virtual clock), against the same paths without the jitter, in one run.
//
//   node dist/bench/sim/jitter.js [--seeds N] [--quick] [--other ROOT] [--out PATH]
//
// Scenarios (both directions impaired alike; "A +- B ms" is an extra one-way delay uniform in
// [A - B, A + B) drawn per datagram and free to reorder, the simulator's `reorder: true`):
//   bulk    a 1000 B reliable upload for 10 s through a 20 Mbit/s bottleneck, 20 ms one way,
//           without jitter (same mean delay), at 20 +- 5 ms and at 40 +- 20 ms: goodput, and the
//           fraction of sent packets declared lost (stats().packets.dropped / dispatched);
//   stream  a 30 Hz reliable-ordered 100 B stream both ways, 25 ms one way, 30 s, at 5 % loss,
//           at 5 % loss with 1 % of datagrams held back 40 ms, and at 20 +- 5 ms: p99 latency.
// With --other ROOT (another checkout with dist/ built, e.g. origin/main) the same seeds run on
// that build too, in this process: an A/B of the loss detection. With --out PATH the figures
// are also written there as one JSON object (bench/results/jitter.json is the committed run).
import { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointEvent } from "../../src/session/types.js";
import type { LinkConfig } from "../../src/sim/link.js";
import { Pair } from "../../src/sim/network.js";
import { g, importDynamic, scriptArgs, type FsModule } from "../lib/host.js";

type EndpointClass = typeof Endpoint;
type PairClass = typeof Pair;
const args = scriptArgs();
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const quick = args.includes("--quick");
const seeds = Number(flag("--seeds") ?? (quick ? 2 : 4));
const otherRoot = flag("--other");
const outPath = flag("--out");
const PROTOCOL_ID = 0x5e551011;

function connect(E: EndpointClass, P: PairClass, seed: number, up: LinkConfig, down: LinkConfig) {
  const server = new E({ protocolId: PROTOCOL_ID, server: true, seed: seed * 2 + 1, engine: "ts" });
  const client = new E({ protocolId: PROTOCOL_ID, seed: seed * 2 + 2, engine: "ts" });
  const pair = new P<Endpoint, Endpoint, EndpointEvent>(server, client, { seed, toServer: up, toClient: down });
  const c = client.connect(pair.now, pair.serverAddress);
  pair.network.flush();
  let s = -1;
  let ok = false;
  for (let i = 0; i < 1000 && (s < 0 || !ok); i++) {
    pair.drive({ maxTimeMs: 10, maxSteps: 10_000 });
    for (const ev of pair.serverEvents()) if (ev.type === "connect") s = ev.connection;
    for (const ev of pair.clientEvents()) if (ev.type === "connect") ok = true;
  }
  if (s < 0 || !ok) throw new Error(`seed ${seed}: no connection`);
  return { pair, client, server, c, s };
}

/** "mean +- half" of extra one-way delay, as a link config on top of `base`. */
function jittered(base: LinkConfig, meanMs: number, halfMs: number): LinkConfig {
  if (meanMs === 0) return base;
  if (halfMs === 0) return { ...base, latencyMs: (base.latencyMs ?? 0) + meanMs };
  return { ...base, latencyMs: (base.latencyMs ?? 0) + meanMs - halfMs, jitterMs: 2 * halfMs, reorder: true };
}

interface BulkResult { mbps: number; lostFraction: number; spurious: number }

function bulk(E: EndpointClass, P: PairClass, seed: number, link: LinkConfig): BulkResult {
  const { pair, client, c } = connect(E, P, seed, link, link);
  const chunk = new Uint8Array(1000);
  const seconds = quick ? 5 : 10;
  const before = client.stats(c).packets;
  let bytes = 0;
  const start = pair.now;
  for (let tick = 0; tick < seconds * 100; tick++) {
    for (let k = 0; k < 1000 && client.stats(c).queuedBytes < 256_000; k++) client.send(c, chunk, { channel: 6 });
    pair.drive({ until: start + tick * 10 + 10, maxSteps: 200_000 });
    for (const ev of pair.serverEvents()) if (ev.type === "message") bytes += ev.data.length;
    pair.clientEvents();
  }
  const after = client.stats(c).packets;
  const dispatched = after.dispatched - before.dispatched;
  // (Builds before src/recovery/ kept the count on the connection itself.)
  const conn = (client as unknown as { byId: Map<number, { recovery?: { spuriousLosses: number }; spuriousLosses?: number }> }).byId.get(c);
  const spurious = conn?.recovery?.spuriousLosses ?? conn?.spuriousLosses ?? NaN;
  return { mbps: (bytes * 8) / seconds / 1e6, lostFraction: (after.dropped - before.dropped) / dispatched, spurious };
}

function stream(E: EndpointClass, P: PairClass, seed: number, link: LinkConfig): number {
  const { pair, client, server, c, s } = connect(E, P, seed, link, link);
  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  const collect = (): void => {
    for (const ev of pair.serverEvents()) {
      if (ev.type === "message" && ev.channel === 0) latencies.push(pair.now - sentAt.get(new DataView(ev.data.buffer, ev.data.byteOffset).getUint32(0, true))!);
    }
    pair.clientEvents();
  };
  const runUntil = (t: number): void => {
    for (let k = 0; k < 100_000; k++) {
      const next = pair.network.nextEventTime();
      if (next === undefined || next > t) break;
      pair.step();
      collect();
    }
    pair.drive({ until: t, maxSteps: 0 });
  };
  const start = pair.now;
  const payload = new Uint8Array(100);
  const n = quick ? 450 : 900;
  for (let i = 0; i < n; i++) {
    runUntil(start + (i * 1000) / 30);
    sentAt.set(i, pair.now);
    new DataView(payload.buffer).setUint32(0, i, true);
    client.send(c, payload, { channel: 0 });
    server.send(s, payload, { channel: 0 });
    pair.network.flush();
  }
  runUntil(pair.now + 3000);
  if (latencies.length !== n) throw new Error(`seed ${seed}: ${latencies.length} of ${n} delivered`);
  latencies.sort((a, b) => a - b);
  return latencies[Math.floor(0.99 * latencies.length)]!;
}

const BULK_BASE: LinkConfig = { latencyMs: 20, bandwidthBps: 20_000_000, queuePackets: 200 };
const BULK: [string, LinkConfig][] = [
  ["no jitter, +20 ms", jittered(BULK_BASE, 20, 0)],
  ["20 +- 5 ms", jittered(BULK_BASE, 20, 5)],
  ["no jitter, +40 ms", jittered(BULK_BASE, 40, 0)],
  ["40 +- 20 ms", jittered(BULK_BASE, 40, 20)],
];
/** Each jittered path's goodput is also given as a ratio to the path before it (same mean, no jitter). */
const BASELINE_OF: Record<string, string> = { "20 +- 5 ms": "no jitter, +20 ms", "40 +- 20 ms": "no jitter, +40 ms" };
const STREAM_BASE: LinkConfig = { latencyMs: 25 };
const STREAM: [string, LinkConfig][] = [
  ["5 % loss", { ...STREAM_BASE, lossRate: 0.05 }],
  ["5 % loss, 1 % held back 40 ms", { ...STREAM_BASE, lossRate: 0.05, reorderRate: 0.01, reorderDelayMs: 40 }],
  ["20 +- 5 ms", jittered(STREAM_BASE, 20, 5)],
  ["5 % loss, 20 +- 5 ms", { ...jittered(STREAM_BASE, 20, 5), lossRate: 0.05 }],
];

const builds: { name: string; E: EndpointClass; P: PairClass }[] = [{ name: "this", E: Endpoint, P: Pair }];
if (otherRoot !== undefined) {
  const e = await importDynamic<{ Endpoint: EndpointClass }>(`file://${otherRoot}/dist/src/session/endpoint.js`);
  const p = await importDynamic<{ Pair: PairClass }>(`file://${otherRoot}/dist/src/sim/network.js`);
  builds.push({ name: "other", E: e.Endpoint, P: p.Pair });
}
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const out: Record<string, { bulk: Record<string, unknown>; stream: Record<string, unknown> }> = {};
for (const b of builds) {
  const r: { bulk: Record<string, unknown>; stream: Record<string, unknown> } = { bulk: {}, stream: {} };
  for (const [label, link] of BULK) {
    const runs: BulkResult[] = [];
    for (let seed = 1; seed <= seeds; seed++) runs.push(bulk(b.E, b.P, seed, link));
    r.bulk[label] = {
      mbps: round(mean(runs.map((x) => x.mbps)), 2),
      lostPct: round(100 * mean(runs.map((x) => x.lostFraction)), 2),
      maxLostPct: round(100 * Math.max(...runs.map((x) => x.lostFraction)), 2),
      spurious: round(mean(runs.map((x) => x.spurious)), 0),
    };
    const baseline = BASELINE_OF[label];
    if (baseline !== undefined) {
      const row = r.bulk[label] as { mbps: number; goodputRatio?: number };
      row.goodputRatio = round(row.mbps / (r.bulk[baseline] as { mbps: number }).mbps, 3);
    }
  }
  for (const [label, link] of STREAM) {
    const p99s: number[] = [];
    for (let seed = 301; seed < 301 + seeds; seed++) p99s.push(stream(b.E, b.P, seed, link));
    r.stream[label] = { p99MeanMs: round(mean(p99s)), p99MaxMs: round(Math.max(...p99s)) };
  }
  out[b.name] = r;
  g.console.log(JSON.stringify({ build: b.name, seeds, ...r }));
}
if (outPath !== undefined) {
  const fs = await importDynamic<FsModule>("node:fs");
  fs.writeFileSync(outPath, JSON.stringify({ command: `node dist/bench/sim/jitter.js ${args.join(" ")}`, seeds, quick, ...out }, null, 2) + "\n");
}
