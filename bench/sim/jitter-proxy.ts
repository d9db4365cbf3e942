// Jitter is not loss, through the real UDP impairment proxy (runtimes/node/proxy.ts) on
// loopback: a 1000 B reliable upload for a few seconds with no bandwidth cap, 20 ms one way,
// without jitter and with "20 +- 5 ms" / "40 +- 20 ms" of reordering jitter (an extra one-way
// delay uniform in [A - B, A + B) per datagram, --jitter-reorders), both ways, no loss; and
// 5 % loss without jitter. Prints goodput and the fraction of sent packets declared lost.
// The proxy runs in this process (its timers share the event loop with both endpoints: the
// figures compare paths and builds with each other, not with other benchmarks).
//
//   node dist/bench/sim/jitter-proxy.js [--seconds S] [--other ROOT]
// With --other ROOT (a checkout with dist/ built) that build's listen/connect run too, on the
// same proxy paths and seeds, alternated per path.
import * as thisBuild from "../../runtimes/node/index.js";
import { startProxy } from "../../runtimes/node/proxy.js";
import type { LinkConfig } from "../../src/sim/link.js";
import { g, importDynamic, scriptArgs } from "../lib/host.js";

type Build = Pick<typeof thisBuild, "listen" | "connect">;
const args = scriptArgs();
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const seconds = Number(flag("--seconds") ?? 4);
const otherRoot = flag("--other");
const PROTOCOL_ID = 0x71773e;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => g.setTimeout(resolve, ms));

function jittered(meanMs: number, halfMs: number, extra: LinkConfig = {}): LinkConfig {
  const base = 20;
  if (halfMs === 0) return { latencyMs: base + meanMs, ...extra };
  return { latencyMs: base + meanMs - halfMs, jitterMs: 2 * halfMs, reorder: true, ...extra };
}

async function upload(build: Build, link: LinkConfig, seed: number): Promise<{ mbps: number; lostPct: number; spurious: number }> {
  const server = await build.listen({ protocolId: PROTOCOL_ID, host: "127.0.0.1", port: 0 });
  const proxy = await startProxy({ listen: "127.0.0.1:0", upstream: `127.0.0.1:${server.address.port}`, link, seed });
  let bytes = 0;
  let counting = false;
  server.on("connection", (c) => c.on("message", (m) => void (counting && (bytes += m.data.length))));
  try {
    const conn = await build.connect(`127.0.0.1:${proxy.address.port}`, { protocolId: PROTOCOL_ID });
    const chunk = new Uint8Array(1000);
    const fill = (): void => {
      for (let k = 0; k < 2000 && conn.stats().queuedBytes < 256_000; k++) conn.send(chunk, { channel: 6 });
    };
    // One second of warm-up (the controller's startup), then the measured part.
    const warmEnd = g.performance.now() + 1000;
    while (g.performance.now() < warmEnd) {
      fill();
      await sleep(1);
    }
    const before = conn.stats().packets;
    counting = true;
    const start = g.performance.now();
    const end = start + seconds * 1000;
    for (let i = 0; i < seconds * 5000 && g.performance.now() < end; i++) {
      fill();
      await sleep(1);
    }
    const elapsed = (g.performance.now() - start) / 1000;
    counting = false;
    const after = conn.stats().packets;
    const dispatched = after.dispatched - before.dispatched;
    const result = { mbps: (bytes * 8) / elapsed / 1e6, lostPct: (100 * (after.dropped - before.dropped)) / dispatched, spurious: NaN };
    await conn.close("normal", undefined, { linger: false });
    return result;
  } finally {
    await proxy.close();
    await server.close();
  }
}

const builds: { name: string; b: Build }[] = [{ name: "this", b: thisBuild }];
if (otherRoot !== undefined) builds.push({ name: "other", b: await importDynamic<Build>(`file://${otherRoot}/dist/runtimes/node/index.js`) });
const PATHS: [string, LinkConfig][] = [
  ["no jitter, +20 ms", jittered(20, 0)],
  ["20 +- 5 ms", jittered(20, 5)],
  ["no jitter, +40 ms", jittered(40, 0)],
  ["40 +- 20 ms", jittered(40, 20)],
  ["5 % loss, no jitter", jittered(0, 0, { lossRate: 0.05 })],
  ["5 % loss, 20 +- 5 ms, 2 % duplicates", jittered(20, 5, { lossRate: 0.05, duplicateRate: 0.02 })],
];
const round = (x: number): number => Math.round(x * 100) / 100;
const out: Record<string, Record<string, { mbps: number; lostPct: number }>> = {};
for (const [label, link] of PATHS) {
  for (const { name, b } of builds) {
    const r = await upload(b, link, 7);
    (out[name] ??= {})[label] = { mbps: round(r.mbps), lostPct: round(r.lostPct) };
  }
}
g.console.log(JSON.stringify({ seconds, ...out }));
