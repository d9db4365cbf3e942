// ackwire's 100 B ping-pong p50 against the raw UDP ping p50 of the runtime's own socket API,
// measured in the same process with rounds alternated (raw, ackwire, raw, ackwire...) so both
// see the same machine load: bench/e2e's "paired" ping (paired.ts) with its own count and
// rounds, plus CPU figures. Reliable-ordered channel 0 for ackwire; one uncounted round of each
// first (JIT warm-up).
//   node|bun dist/bench/adapters/ping-ratio.js [count] [rounds]
//   deno run -A --unstable-net dist/bench/adapters/ping-ratio.js [count] [rounds]
// Prints one JSON line: per-round p50s, their medians and the ratio of the medians, and the
// median process CPU per round trip (both ends run on this one thread, so on a loaded machine
// that is steadier than the p50s).
import type { PingResult } from "../e2e/driver.js";
import { pairedPing, series, type ArmRun } from "../e2e/paired.js";
import { g, runtimeName, scriptArgs } from "../lib/host.js";
import { median } from "../lib/stats.js";

const [countArg, roundsArg] = scriptArgs().filter((a) => !a.startsWith("--"));
const count = Number(countArg ?? 5000);
const rounds = Number(roundsArg ?? 3);

const runs = await pairedPing({ rounds, pingCount: count });
/** Process CPU per round trip, the 300 warm-up pings included. */
const cpuPerRoundTrip = (r: ArmRun<PingResult>): number => +(r.cpuUs / (r.result.samples + 300)).toFixed(2);
const s = series(runs, 1);
g.console.log(
  JSON.stringify({
    runtime: runtimeName(),
    count,
    raw: s.raw,
    ack: s.ackwire,
    rawP50Us: s.rawMedian,
    ackP50Us: s.ackwireMedian,
    ratio: s.ratio,
    cpuUsPerRoundTrip: { raw: median(runs.raw.map(cpuPerRoundTrip)), ack: median(runs.ackwire.map(cpuPerRoundTrip)) },
  }),
);
g.process?.exit(0);
g.Deno?.exit(0);
