// Host calls per datagram on the bulk path: wraps setTimeout, clearTimeout, setImmediate and
// queueMicrotask (before ackwire is loaded) and counts them during a bulk-probe-like run, next
// to the server driver's wake-ups and datagrams. Both ends run in this process, so the figures
// are for sender + receiver together, per datagram received by the server.
//   node|bun|deno dist/bench/adapters/bulk-counts.js [size] [ms]
import { g, scriptArgs } from "../lib/host.js";

const counts = { setTimeout: 0, clearTimeout: 0, setImmediate: 0, queueMicrotask: 0 };
const host = globalThis as unknown as Record<string, (...a: unknown[]) => unknown>;
for (const name of Object.keys(counts) as (keyof typeof counts)[]) {
  const original = host[name];
  if (typeof original !== "function") continue;
  host[name] = (...a: unknown[]) => {
    counts[name]++;
    return original.apply(globalThis, a);
  };
}

const { runThroughput } = await import("../e2e/driver.js");
const { ackwireEnds, pairOn } = await import("../e2e/transports/ackwire.js");
const [sizeArg, msArg] = scriptArgs().filter((a) => !a.startsWith("--"));
const size = Number(sizeArg ?? 1000);
const durationMs = Number(msArg ?? 600);
const ends = await ackwireEnds();
const pair = pairOn(ends, 0, true, () => ends.close());
const start = { ...counts };
const server0 = ends.server.counters();
const result = await runThroughput(pair, { size, window: 1024, ackEvery: 64, durationMs, warmupMs: 150 });
const server = ends.server.counters();
const datagrams = server.datagramsIn - server0.datagramsIn;
const per = (k: keyof typeof counts): number => +((counts[k] - start[k]) / datagrams).toFixed(3);
g.console.log(
  JSON.stringify({
    mbps: result.mbPerSec,
    msgPerDatagram: +(result.delivered / datagrams).toFixed(2),
    serverDatagramsPerWakeup: +(datagrams / (server.wakeups - server0.wakeups)).toFixed(2),
    serverOutPerIn: +((server.datagramsOut - server0.datagramsOut) / datagrams).toFixed(3),
    perServerDatagram: { setTimeout: per("setTimeout"), clearTimeout: per("clearTimeout"), setImmediate: per("setImmediate"), queueMicrotask: per("queueMicrotask") },
  }),
);
await pair.close();
g.process?.exit(0);
g.Deno?.exit(0);
