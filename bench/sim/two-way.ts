/**
 * Both directions of one connection saturated at once on the simulator (two-way-scenario.ts):
 * prints the goodput each way over the second half of the run, per seed.
 *   node dist/bench/sim/two-way.js [--rate 20e6] [--owd 1.3] [--seconds 10] [--seeds 1,2,3]
 * With --down (bit/s), the server -> client link has that rate instead (runAsymmetric: the
 * client's upload beside the server's upload over the slow way back), and the upload's peak
 * bandwidth estimate and queue p50/p95 are printed too:
 *   node dist/bench/sim/two-way.js --rate 20e6 --down 1e6 --owd 10
 */
import { g, scriptArgs } from "../lib/host.js";
import { runAsymmetric, runTwoWay } from "./two-way-scenario.js";

const args = scriptArgs();
const flag = (name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const bandwidthBps = Number(flag("--rate", "20e6"));
const downBps = Number(flag("--down", "0"));
const oneWayMs = Number(flag("--owd", "1.3"));
const seconds = Math.min(120, Math.max(2, Number(flag("--seconds", "10"))));
for (const seed of flag("--seeds", "1,2,3").split(",").map(Number)) {
  const result = downBps > 0 ? runAsymmetric({ seed, upBps: bandwidthBps, downBps, oneWayMs, seconds }) : runTwoWay({ seed, bandwidthBps, oneWayMs, seconds });
  g.console.log(JSON.stringify({ seed, linkMbps: bandwidthBps / 1e6, ...(downBps > 0 ? { downLinkMbps: downBps / 1e6 } : {}), oneWayMs, ...result }));
}
