// ackwire's bulk throughput against the raw UDP ceiling measured in the same process, rounds
// alternated (raw, ackwire, raw, ackwire...) so both see the same machine load: bench/e2e's
// "paired" group (paired.ts) for one size, with its own duration and rounds, plus CPU figures.
// Size 1000 is the "reliable-ordered 1000 B" goal (MB/s), size 100 the "aggregated
// reliable-ordered 100 B" goal (messages/s against raw packets/s).
//   node|bun|deno dist/bench/adapters/bulk-ratio.js [size] [ms] [rounds]
// Prints one JSON line: per-round figures, medians, the ratio of medians, and each arm's
// process CPU per delivered message where the runtime reports it.
import type { ThroughputResult } from "../e2e/driver.js";
import { pairedThroughput, series, type ArmRun } from "../e2e/paired.js";
import { g, runtimeName, scriptArgs } from "../lib/host.js";
import { median } from "../lib/stats.js";

const [sizeArg, msArg, roundsArg] = scriptArgs().filter((a) => !a.startsWith("--"));
const size = Number(sizeArg ?? 1000);
const durationMs = Number(msArg ?? 600);
const rounds = Number(roundsArg ?? 3);
const warmupMs = 150;

const runs = await pairedThroughput(size, { rounds, durationMs, warmupMs });
for (const a of runs.ackwire) if (!a.result.verified) g.console.error("ackwire round not verified", JSON.stringify(a.result));
// CPU of the whole measured run (warm-up included) per message delivered after warm-up. Both
// ends and the kernel's loopback work run on this one thread, so on a loaded machine this is
// steadier than the rates, and raw CPU / ackwire CPU approximates the ratio on an idle one.
const cpuPerMsg = (r: ArmRun<ThroughputResult>): number => +(r.cpuUs / (r.result.delivered * ((durationMs + warmupMs) / durationMs))).toFixed(3);
const cpuPerMsgUs = runs.ackwire.filter((r) => r.cpuUs > 0).map(cpuPerMsg);
const rawCpuPerMsgUs = runs.raw.filter((r) => r.cpuUs > 0).map(cpuPerMsg);
const s = series(runs, 1);
g.console.log(
  JSON.stringify({
    runtime: runtimeName(),
    size,
    unit: size >= 1000 ? "MB/s" : "msg/s",
    raw: s.raw,
    ackwire: s.ackwire,
    rawMedian: s.rawMedian,
    ackwireMedian: s.ackwireMedian,
    ratio: s.ratio,
    ...(cpuPerMsgUs.length > 0 ? { cpuPerMsgUs, rawCpuPerMsgUs, cpuRatio: +(median(rawCpuPerMsgUs) / median(cpuPerMsgUs)).toFixed(3) } : {}),
  }),
);
g.process?.exit(0);
g.Deno?.exit(0);
