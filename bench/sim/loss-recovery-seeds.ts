// Loss recovery over many seeds: the stream of test/session/loss-latency.test.ts (30 Hz
// reliable-ordered both ways, 100 B, 25 ms one way, 5 % loss each way, 30 s) on the simulator,
// for the default reliable-ordered channel and for one with `piggyback: 1`. Prints per channel
// the mean, median and max over the seeds of each run's p99 delivery latency, and the datagrams
// both ways. With another build's root it runs that build too, on the same seeds:
//   node dist/bench/sim/loss-recovery-seeds.js [firstSeed] [lastSeed] [other-build-root]
import { Endpoint } from "../../src/session/endpoint.js";
import { DEFAULT_CHANNELS, type ChannelConfig, type EndpointEvent } from "../../src/session/types.js";
import { Pair } from "../../src/sim/network.js";
import { g, importDynamic, scriptArgs } from "../lib/host.js";

type EndpointClass = typeof Endpoint;
type PairClass = typeof Pair;
const args = scriptArgs().filter((a) => !a.startsWith("--"));
const first = Number(args[0] ?? 301);
const last = Number(args[1] ?? 320);
const otherRoot = args[2];
const PROTOCOL_ID = 0x5e551011;
const CHANNELS: ChannelConfig[] = [...DEFAULT_CHANNELS, { mode: "reliable-ordered", piggyback: 1 }];

/** One 30 s run: p99 latency (ms) of the client's messages at the server, and datagrams both ways. */
function run(E: EndpointClass, P: PairClass, seed: number, channel: number): { p99: number; datagrams: number } {
  const server = new E({ protocolId: PROTOCOL_ID, server: true, seed: seed * 2 + 1, engine: "ts", channels: CHANNELS });
  const client = new E({ protocolId: PROTOCOL_ID, seed: seed * 2 + 2, engine: "ts", channels: CHANNELS });
  const pair = new P<Endpoint, Endpoint, EndpointEvent>(server, client, { seed, link: { latencyMs: 25, lossRate: 0.05 } });
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
  const before = pair.toServer.stats.sent + pair.toClient.stats.sent;
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
  const payload = new Uint8Array(100);
  for (let i = 0; i < 900; i++) {
    runUntil(start + (i * 1000) / 30);
    sentAt.set(i, pair.now);
    new DataView(payload.buffer).setUint32(0, i, true);
    client.send(c, payload, { channel });
    server.send(s, payload, { channel });
    pair.network.flush();
  }
  runUntil(pair.now + 3000);
  if (latencies.length !== 900) throw new Error(`seed ${seed}: ${latencies.length} of 900 delivered`);
  latencies.sort((a, b) => a - b);
  return { p99: latencies[Math.floor(0.99 * latencies.length)]!, datagrams: pair.toServer.stats.sent + pair.toClient.stats.sent - before };
}

const builds: { name: string; E: EndpointClass; P: PairClass }[] = [{ name: "this", E: Endpoint, P: Pair }];
if (otherRoot !== undefined) {
  const e = await importDynamic<{ Endpoint: EndpointClass }>(`file://${otherRoot}/dist/src/session/endpoint.js`);
  const p = await importDynamic<{ Pair: PairClass }>(`file://${otherRoot}/dist/src/sim/network.js`);
  builds.push({ name: "other", E: e.Endpoint, P: p.Pair });
}
const out: Record<string, Record<string, { p99MeanMs: number; p99MedianMs: number; p99MaxMs: number; datagrams: number }>> = {};
for (const b of builds) {
  out[b.name] = {};
  for (const [channel, label] of [[0, "default"], [DEFAULT_CHANNELS.length, "piggyback1"]] as const) {
    const p99s: number[] = [];
    let datagrams = 0;
    for (let seed = first; seed <= last; seed++) {
      const r = run(b.E, b.P, seed, channel);
      p99s.push(r.p99);
      datagrams += r.datagrams;
    }
    p99s.sort((x, y) => x - y);
    const round = (x: number): number => Math.round(x * 10) / 10;
    out[b.name]![label] = {
      p99MeanMs: round(p99s.reduce((x, y) => x + y, 0) / p99s.length),
      p99MedianMs: round(p99s[Math.floor(p99s.length / 2)]!),
      p99MaxMs: round(p99s[p99s.length - 1]!),
      datagrams,
    };
  }
}
g.console.log(JSON.stringify({ seeds: [first, last], ...out }));
