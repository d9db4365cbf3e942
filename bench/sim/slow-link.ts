/**
 * A latest-state stream over a slow link (slow-link-scenario.ts), per rate and seed:
 *   node dist/bench/sim/slow-link.js [--rates 64000,128000] [--seeds 1,2,3] [--seconds 30]
 * Prints one JSON line per run: queueing delay p50/p95 each way, staleness p50/p95, the
 * largest datagram used, tail drops and the link's utilization over the measurement.
 */
import { g, scriptArgs } from "../lib/host.js";
import { round } from "./harness.js";
import { runSlowLink } from "./slow-link-scenario.js";

const args = scriptArgs();
const flag = (name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const seconds = Math.min(120, Math.max(6, Number(flag("--seconds", "30"))));
for (const bandwidthBps of flag("--rates", "64000,128000").split(",").map(Number)) {
  for (const seed of flag("--seeds", "1,2,3").split(",").map(Number)) {
    const r = runSlowLink({ seed, bandwidthBps, seconds });
    const rounded = Object.fromEntries(Object.entries(r).map(([k, v]) => [k, round(v)]));
    g.console.log(JSON.stringify({ kbps: bandwidthBps / 1000, seed, ...rounded }));
  }
}
