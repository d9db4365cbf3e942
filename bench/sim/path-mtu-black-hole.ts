// A path MTU black hole below the base on the simulator (seeded, virtual time): the link (25 ms
// each way, 5 ms jitter, 1 % loss) drops every datagram over 1100 bytes and never says so. The client sends `count` reliable-ordered
// messages of `size` bytes, one every `everyMs`, to a server; per seed, how long until the
// client found the black hole below the base (ms after the first send, its "pathMtu" event),
// how many messages the server had within `windowMs` of the first send, when the last one
// arrived, and the size in use at the end. The baseline runs the same with discovery off
// (`maxMtu: mtu`), which has no fallback: what the path did to every connection before it.
// test/session/path-mtu-below-base.test.ts asserts the behaviour; this prints the figures.
//
//   node dist/bench/sim/path-mtu-black-hole.js [--seeds=10] [--out=bench/results/path-mtu-sim.json]
import { writeFileSync } from "node:fs";
import { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointConfig, EndpointEvent } from "../../src/session/types.js";
import { Pair } from "../../src/sim/network.js";

const arg = (name: string, fallback: string): string => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const SEEDS = Number(arg("seeds", "10"));
const OUT = arg("out", "");
const LIMIT = 1100;
const COUNT = 300;
const SIZE = 3000;
const EVERY_MS = 66;
const WINDOW_MS = 20_000;
/** 25 ms each way with 5 ms of jitter and 1 % random loss: an ordinary internet path. */
const LINK = { mtu: LIMIT, latencyMs: 25, jitterMs: 5, lossRate: 0.01 };

interface Run {
  seed: number;
  detectMs: number | null;
  deliveredInWindow: number;
  lastDeliveredMs: number | null;
  inOrder: boolean;
  pathMtu: number;
  /** The connection timed out (nothing it sent got through for timeoutMs). */
  closed: boolean;
}

function run(seed: number, config: Partial<EndpointConfig>): Run {
  const server = new Endpoint({ protocolId: 0x6d747501, server: true, seed: seed * 2 + 1, engine: "ts", ...config });
  const client = new Endpoint({ protocolId: 0x6d747501, seed: seed * 2 + 2, engine: "ts", ...config });
  const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, { seed, link: LINK });
  const c = client.connect(pair.now, pair.serverAddress, {});
  // Connected and past the first round trips (the server's "connect" counts as connected here).
  pair.drive({ maxTimeMs: 500 });
  pair.clientEvents();
  pair.serverEvents();
  const start = pair.now;
  let detectMs: number | null = null;
  const got: number[] = [];
  let lastDeliveredMs: number | null = null;
  let closed = false;
  const collect = (): void => {
    for (const e of pair.serverEvents()) {
      if (e.type !== "message") continue;
      got.push(new DataView(e.data.buffer, e.data.byteOffset).getUint32(0, true));
      lastDeliveredMs = pair.now - start;
    }
    for (const e of pair.clientEvents()) {
      if (e.type === "pathMtu" && e.belowBase && detectMs === null) detectMs = pair.now - start;
      if (e.type === "disconnect") closed = true;
    }
  };
  let deliveredInWindow = 0;
  for (let i = 0; i < COUNT; i++) {
    const b = new Uint8Array(SIZE);
    new DataView(b.buffer).setUint32(0, i, true);
    if (!closed) client.send(c, b, { channel: 0 });
    pair.drive({ maxTimeMs: EVERY_MS });
    collect();
  }
  while (pair.now - start < WINDOW_MS) {
    pair.drive({ maxTimeMs: 50 });
    collect();
  }
  deliveredInWindow = got.length;
  return { seed, detectMs, deliveredInWindow, lastDeliveredMs, inOrder: got.every((n, i) => n === i), pathMtu: closed ? 0 : client.stats(c).pathMtu, closed };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor((s.length - 1) / 2)]!;
};

const runs: Run[] = [];
const baseline: Run[] = [];
for (let seed = 1; seed <= SEEDS; seed++) {
  runs.push(run(seed, {}));
  baseline.push(run(seed, { maxMtu: 1200 }));
}
for (const r of runs) console.log(JSON.stringify(r));
const detect = runs.map((r) => r.detectMs ?? Infinity);
const result = {
  date: new Date().toISOString(),
  command: `node dist/bench/sim/path-mtu-black-hole.js --seeds=${SEEDS}`,
  setup: { link: LINK, messages: COUNT, messageBytes: SIZE, everyMs: EVERY_MS, windowMs: WINDOW_MS, seeds: SEEDS },
  detectMsMedian: median(detect),
  detectMsMax: Math.max(...detect),
  deliveredInWindowMin: Math.min(...runs.map((r) => r.deliveredInWindow)),
  allInOrder: runs.every((r) => r.inOrder && r.deliveredInWindow === COUNT),
  lastDeliveredMsMax: Math.max(...runs.map((r) => r.lastDeliveredMs ?? Infinity)),
  pathMtuMin: Math.min(...runs.map((r) => r.pathMtu)),
  pathMtuMax: Math.max(...runs.map((r) => r.pathMtu)),
  baselineDeliveredInWindowMax: Math.max(...baseline.map((r) => r.deliveredInWindow)),
  baselineClosed: baseline.filter((r) => r.closed).length,
  runs,
};
console.log(JSON.stringify({ ...result, runs: undefined }));
if (OUT !== "") writeFileSync(OUT, JSON.stringify(result, null, 2) + "\n");
