// Forward error correction (XOR parity, src/fec) on the issue-27 stream: 30 Hz x 200 B
// reliable-ordered both ways, 25 ms one way (50 ms RTT), 5 % loss each way, 30 s per seed, on
// the simulator. For each channel setting it prints, over the seeds, the mean of each run's p50,
// p95, p99 and the mean/max of its p99 delivery latency (client -> server), the fraction of
// messages later than 38 ms, and the wire bytes both ways (UDP payload + 28 B IPv4/UDP per
// datagram) against the plain channel on the same seeds. Then the same with Gilbert-Elliott
// loss of the same 5 % average (mean burst 2 datagrams: pGoodToBad 0.0263, pBadToGood 0.5).
// `--out FILE` writes both tables as JSON (bench/results/fec.json).
//   node dist/bench/sim/fec.js [firstSeed] [lastSeed] [--out FILE]
import { Endpoint } from "../../src/session/endpoint.js";
import { DEFAULT_CHANNELS, type ChannelConfig, type EndpointEvent } from "../../src/session/types.js";
import { Pair } from "../../src/sim/network.js";
import type { LinkConfig } from "../../src/sim/link.js";
import { writeFileSync } from "node:fs";
import { g, scriptArgs } from "../lib/host.js";

const argv = scriptArgs();
const args = argv.filter((a) => !a.startsWith("--"));
const first = Number(args[0] ?? 301);
const last = Number(args[1] ?? 310);
const outAt = argv.indexOf("--out");
const outFile = outAt >= 0 ? argv[outAt + 1] : undefined;
const PROTOCOL_ID = 0x5e551011;
const UDP_IP_BYTES = 28;
const MESSAGE_BYTES = 200;
const MESSAGES = 900;
const GOAL_MS = 38;

export interface Setting {
  key: string;
  label: string;
  channel: ChannelConfig;
}
const SETTINGS: Setting[] = [
  { key: "plain", label: "plain", channel: { mode: "reliable-ordered" } },
  { key: "piggyback1", label: "piggyback: 1", channel: { mode: "reliable-ordered", piggyback: 1 } },
  { key: "adaptive", label: "fec: true", channel: { mode: "reliable-ordered", fec: true } },
  ...[1, 2, 3, 4, 6, 8].map((k) => ({ key: `fec${k}`, label: `fec: ${k}`, channel: { mode: "reliable-ordered", fec: k } as ChannelConfig })),
];

const LINKS: Record<string, LinkConfig> = {
  random: { latencyMs: 25, lossRate: 0.05 },
  burst: { latencyMs: 25, burst: { pGoodToBad: 0.05 / 0.95 / 2, pBadToGood: 0.5 } },
};

interface Run {
  latencies: number[];
  wireBytes: number;
  rebuilt: number;
  resends: number;
  paritySent: number;
}

function run(seed: number, setting: Setting, link: LinkConfig): Run {
  const channels: ChannelConfig[] = [...DEFAULT_CHANNELS, setting.channel];
  const channel = DEFAULT_CHANNELS.length;
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: seed * 2 + 1, engine: "ts", channels });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: seed * 2 + 2, engine: "ts", channels });
  const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, { seed, link });
  const c = client.connect(pair.now, pair.serverAddress);
  pair.network.flush();
  let s = -1;
  let up = false;
  for (let i = 0; i < 1000 && (s < 0 || !up); i++) {
    pair.drive({ maxTimeMs: 10, maxSteps: 10_000 });
    for (const ev of pair.serverEvents()) if (ev.type === "connect") s = ev.connection;
    for (const ev of pair.clientEvents()) if (ev.type === "connect") up = true;
  }
  if (s < 0 || !up) throw new Error(`seed ${seed}: no connection`);
  const wire = (): number => {
    const a = pair.toServer.stats;
    const b = pair.toClient.stats;
    return a.sentBytes + b.sentBytes + (a.sent + b.sent) * UDP_IP_BYTES;
  };
  const before = wire();
  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  const collect = (): void => {
    for (const ev of pair.serverEvents()) {
      if (ev.type === "message" && ev.channel === channel) latencies.push(pair.now - sentAt.get(new DataView(ev.data.buffer, ev.data.byteOffset).getUint32(0, true))!);
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
  const payload = new Uint8Array(MESSAGE_BYTES);
  for (let i = 0; i < MESSAGES; i++) {
    runUntil(start + (i * 1000) / 30);
    sentAt.set(i, pair.now);
    new DataView(payload.buffer).setUint32(0, i, true);
    client.send(c, payload, { channel });
    server.send(s, payload, { channel });
    pair.network.flush();
  }
  runUntil(pair.now + 3000);
  if (latencies.length !== MESSAGES) throw new Error(`seed ${seed}, ${setting.label}: ${latencies.length} of ${MESSAGES} delivered`);
  const cs = client.stats(c);
  const ss = server.stats(s);
  return {
    latencies,
    wireBytes: wire() - before,
    rebuilt: (ss.fec?.rebuilt ?? 0) + (cs.fec?.rebuilt ?? 0),
    resends: cs.resends + ss.resends,
    paritySent: (cs.fec?.paritySent ?? 0) + (ss.fec?.paritySent ?? 0),
  };
}

const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;
const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
function table(link: LinkConfig): Record<string, Record<string, number | string>> {
  const rows: Record<string, Record<string, number | string>> = {};
  const baseBytes = new Map<number, number>();
  for (const setting of SETTINGS) {
    const p50: number[] = [];
    const p95: number[] = [];
    const p99: number[] = [];
    let late = 0;
    let total = 0;
    let extra = 0;
    let rebuilt = 0;
    let resends = 0;
    let paritySent = 0;
    for (let seed = first; seed <= last; seed++) {
      const r = run(seed, setting, link);
      if (setting.label === "plain") baseBytes.set(seed, r.wireBytes);
      extra += r.wireBytes / baseBytes.get(seed)! - 1;
      const sorted = r.latencies.sort((a, b) => a - b);
      p50.push(quantile(sorted, 0.5));
      p95.push(quantile(sorted, 0.95));
      p99.push(quantile(sorted, 0.99));
      late += sorted.filter((l) => l > GOAL_MS).length;
      total += sorted.length;
      rebuilt += r.rebuilt;
      resends += r.resends;
      paritySent += r.paritySent;
    }
    const n = last - first + 1;
    const mean = (xs: number[]): number => xs.reduce((x, y) => x + y, 0) / xs.length;
    rows[setting.key] = {
      setting: setting.label,
      p50Ms: round(mean(p50)),
      p95Ms: round(mean(p95)),
      p99MeanMs: round(mean(p99)),
      p99MaxMs: round(Math.max(...p99)),
      lateOver38Ms: round((100 * late) / total, 2),
      extraWireBytesPct: round((100 * extra) / n),
      rebuiltPerRun: round(rebuilt / n),
      resendsPerRun: round(resends / n),
      parityPerRun: round(paritySent / n),
    };
  }
  return rows;
}

const out: Record<string, unknown> = {
  command: `node dist/bench/sim/fec.js ${first} ${last}${outFile !== undefined ? ` --out ${outFile}` : ""}`,
  date: new Date().toISOString(),
  seeds: [first, last],
  scenario: `30 Hz x ${MESSAGE_BYTES} B reliable-ordered both ways, 25 ms one way, 5 % loss each way, ${MESSAGES} messages per seed`,
};
for (const [name, link] of Object.entries(LINKS)) {
  g.console.log(`${name} loss (${name === "burst" ? "Gilbert-Elliott, mean burst 2" : "independent"}), seeds ${first}-${last}:`);
  const rows = table(link);
  for (const r of Object.values(rows)) g.console.log(JSON.stringify(r));
  out[name] = rows;
}
if (outFile !== undefined) writeFileSync(outFile, JSON.stringify(out, null, 2) + "\n");
