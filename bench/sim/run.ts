/**
 * `npm run bench:sim` (full) or `npm run bench:sim -- --quick` (under 30 s): issue 4's
 * congestion and timing scenarios through real Endpoints over the simulator, on a virtual
 * clock, seeded. Writes bench/results/sim.json and prints a table with the goals.
 *
 * Options: --quick, --seed N (default 1), --trace (print the bulk run's controller trace),
 *          --out PATH (default bench/results/sim.json).
 */
import { g, importDynamic, nowMs, scriptArgs, type FsModule } from "../lib/host.js";
import { repoRoot } from "../lib/paths.js";
import { round } from "./harness.js";
import { runBulk, runClock, runFairness, runLight } from "./scenarios.js";
import { runSlowLink } from "./slow-link-scenario.js";

const args = scriptArgs();
const console = g.console;
const quick = args.includes("--quick");
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const seed = Number(flag("--seed") ?? 1);
if (!Number.isInteger(seed) || seed < 0) {
  console.error(`--seed ${flag("--seed")}: use a non-negative integer`);
  g.process?.exit(2);
  throw new Error("bad --seed");
}
const out = flag("--out") ?? repoRoot() + "bench/results/sim.json";

interface Row {
  scenario: string;
  figure: string;
  value: number;
  goal: string;
  met: boolean;
  realMs: number;
}
const rows: Row[] = [];
function timed<T>(fn: () => T): [T, number] {
  const start = nowMs();
  const r = fn();
  return [r, nowMs() - start];
}

const [bulk, bulkMs] = timed(() =>
  runBulk({ seed, bandwidthBps: 2e6, rttMs: 60, queuePackets: 50, warmupMs: 2000, durationMs: quick ? 12_000 : 30_000, traceEveryMs: 500 }),
);
rows.push({ scenario: "bulk2mbit", figure: "utilization", value: bulk.utilization, goal: ">= 0.85", met: bulk.utilization >= 0.85, realMs: bulkMs });
rows.push({ scenario: "bulk2mbit", figure: "p95QueueDelayMs", value: bulk.p95QueueDelayMs, goal: "< 30", met: bulk.p95QueueDelayMs < 30, realMs: 0 });

const [lan, lanMs] = timed(() => runBulk({ seed, bandwidthBps: 100e6, rttMs: 1, queuePackets: 50, warmupMs: 0, durationMs: 1000, traceEveryMs: 100 }));
rows.push({ scenario: "lan100mbit", figure: "utilizationAt1s", value: lan.utilization, goal: ">= 0.80", met: lan.utilization >= 0.8, realMs: lanMs });

const [fair, fairMs] = timed(() =>
  runFairness({ seed, bandwidthBps: 2e6, rttMs: 60, queuePackets: 50, secondStartMs: 2000, warmupMs: quick ? 6000 : 10_000, durationMs: quick ? 20_000 : 40_000 }),
);
rows.push({ scenario: "fairness", figure: "jain", value: fair.jain, goal: ">= 0.9", met: fair.jain >= 0.9, realMs: fairMs });

// Paths with random (non-congestive) loss and jitter: loss in both directions, before the
// bottleneck (a lost datagram takes no bandwidth). 20 Mbit/s x 80 ms = 163 datagrams of BDP;
// the 400-datagram queue (196 ms) is generous; the sender keeps 2048 messages outstanding so
// reliable-ordered head-of-line stalls (~1 RTT per loss) do not make the application the limit.
const lossy20 = (lossRate: number) =>
  timed(() =>
    runBulk({ seed, bandwidthBps: 20e6, rttMs: 80, queuePackets: 400, lossRate, senderWindow: 2048, warmupMs: 2000, durationMs: quick ? 8000 : 20_000 }),
  );
const [lossy5, lossy5Ms] = lossy20(0.05);
rows.push({ scenario: "lossy20m@5%", figure: "goodput", value: lossy5.goodputRatio, goal: ">= 0.70", met: lossy5.goodputRatio >= 0.7, realMs: lossy5Ms });
const [lossy10, lossy10Ms] = lossy20(0.1);
rows.push({ scenario: "lossy20m@10%", figure: "goodput", value: lossy10.goodputRatio, goal: ">= 0.60", met: lossy10.goodputRatio >= 0.6, realMs: lossy10Ms });
const lossy2 = (jitterMs: number) =>
  timed(() =>
    runBulk({ seed, bandwidthBps: 2e6, rttMs: 60, queuePackets: 50, lossRate: jitterMs > 0 ? 0 : 0.02, jitterMs, warmupMs: 2000, durationMs: quick ? 12_000 : 30_000 }),
  );
const [loss2m, loss2mMs] = lossy2(0);
rows.push({ scenario: "lossy2m@2%", figure: "utilization", value: loss2m.utilization, goal: ">= 0.85", met: loss2m.utilization >= 0.85, realMs: loss2mMs });
rows.push({ scenario: "lossy2m@2%", figure: "p95QueueDelayMs", value: loss2m.p95QueueDelayMs, goal: "< 30", met: loss2m.p95QueueDelayMs < 30, realMs: 0 });
const [jit2m, jit2mMs] = lossy2(2);
rows.push({ scenario: "jitter2m", figure: "utilization", value: jit2m.utilization, goal: ">= 0.85", met: jit2m.utilization >= 0.85, realMs: jit2mMs });
rows.push({ scenario: "jitter2m", figure: "p95QueueDelayMs", value: jit2m.p95QueueDelayMs, goal: "< 30", met: jit2m.p95QueueDelayMs < 30, realMs: 0 });
const [both2m, both2mMs] = timed(() =>
  runBulk({ seed, bandwidthBps: 2e6, rttMs: 60, queuePackets: 50, lossRate: 0.02, jitterMs: 2, warmupMs: 2000, durationMs: quick ? 12_000 : 30_000 }),
);
rows.push({ scenario: "loss+jitter2m", figure: "p95QueueDelayMs", value: both2m.p95QueueDelayMs, goal: "< 30", met: both2m.p95QueueDelayMs < 30, realMs: both2mMs });

const [light, lightMs] = timed(() =>
  runLight({ seed, oneWayMs: 30, bandwidthBps: 10e6, rateHz: 30, messageBytes: 200, durationMs: quick ? 10_000 : 60_000 }),
);
rows.push({ scenario: "light30hz", figure: "p99ExtraDelayMs", value: light.p99ExtraDelayMs, goal: "<= 2", met: light.p99ExtraDelayMs <= 2, realMs: lightMs });

// A latest-state stream at ~1.4x a 64 / 128 kbit/s link (slow-link-scenario.ts), measured from
// 10 s into the connection.
const slowLink = (bandwidthBps: number) => timed(() => runSlowLink({ seed, bandwidthBps, seconds: quick ? 20 : 30 }));
const [slow64, slow64Ms] = slowLink(64_000);
const [slow128, slow128Ms] = slowLink(128_000);
for (const [name, r, ms] of [["slow64kbit", slow64, slow64Ms], ["slow128kbit", slow128, slow128Ms]] as const) {
  rows.push({ scenario: name, figure: "p95QueueDelayMs", value: r.p95QueueDelayMs, goal: "< 200", met: r.p95QueueDelayMs < 200, realMs: ms });
  rows.push({ scenario: name, figure: "p95StalenessMs", value: r.p95StalenessMs, goal: "< 300", met: r.p95StalenessMs < 300, realMs: 0 });
}

const clockCase = (s: number, clockSyncMs?: number) =>
  runClock({ seed: s, latencyMs: 40, jitterMs: 20, serverClockOffsetMs: 123_456.789, afterMs: 5000, clockSyncMs });
const [clock, clockMs] = timed(() => clockCase(seed));
rows.push({ scenario: "clock", figure: "errorMs", value: clock.errorMs, goal: "<= 2, bound holds", met: clock.errorMs <= 2 && clock.boundViolations === 0, realMs: clockMs });
// The same case with clock requests at 10/s (what the session would need), and both over 8 seeds.
const clock10Hz = clockCase(seed, 100);
rows.push({ scenario: "clock@10/s", figure: "errorMs", value: clock10Hz.errorMs, goal: "<= 2, bound holds", met: clock10Hz.errorMs <= 2 && clock10Hz.boundViolations === 0, realMs: 0 });
const sweepSeeds = [1, 2, 3, 4, 5, 6, 7, 8];
const sweep = (clockSyncMs?: number) => sweepSeeds.map((s) => clockCase(s, clockSyncMs));
const sweepDefault = sweep();
const sweep10Hz = sweep(100);
const summarize = (rs: ReturnType<typeof sweep>) => ({
  errorsMs: rs.map((r) => round(r.errorMs)),
  within2ms: rs.filter((r) => r.errorMs <= 2).length,
  boundViolations: rs.reduce((a, r) => a + r.boundViolations, 0),
});

const result = {
  bulk2mbit: { utilization: round(bulk.utilization), p95QueueDelayMs: round(bulk.p95QueueDelayMs) },
  lan100mbit: { utilizationAt1s: round(lan.utilization) },
  fairness: { jain: round(fair.jain) },
  light30hz: { p99ExtraDelayMs: round(light.p99ExtraDelayMs) },
  lossy20mbit5pct: { goodput: round(lossy5.goodputRatio), utilization: round(lossy5.utilization) },
  lossy20mbit10pct: { goodput: round(lossy10.goodputRatio), utilization: round(lossy10.utilization) },
  lossy2mbit2pct: { utilization: round(loss2m.utilization), p95QueueDelayMs: round(loss2m.p95QueueDelayMs) },
  jitter2mbit: { utilization: round(jit2m.utilization), p95QueueDelayMs: round(jit2m.p95QueueDelayMs) },
  lossJitter2mbit: { utilization: round(both2m.utilization), p95QueueDelayMs: round(both2m.p95QueueDelayMs) },
  slowLink64kbit: { p95QueueDelayMs: round(slow64.p95QueueDelayMs), p95StalenessMs: round(slow64.p95StalenessMs) },
  slowLink128kbit: { p95QueueDelayMs: round(slow128.p95QueueDelayMs), p95StalenessMs: round(slow128.p95StalenessMs) },
  clock: { errorMs: round(clock.errorMs), errorMsWith10HzSync: round(clock10Hz.errorMs) },
  details: {
    command: `npm run bench:sim${quick ? " -- --quick" : ""}${seed !== 1 ? ` --seed ${seed}` : ""}`,
    seed,
    quick,
    bulk2mbit: { ...omitTrace(bulk), setup: "2 Mbit/s, 60 ms RTT, 50-packet queue, 28 B/datagram overhead; window from 2 s after the handshake" },
    lan100mbit: { ...omitTrace(lan), setup: "100 Mbit/s, 1 ms RTT, 50-packet queue; window = first simulated second after the handshake" },
    fairness: { ...fair, setup: "2 connections, one shared 2 Mbit/s server->clients link, 60 ms RTT; 2nd starts 2 s later" },
    lossy20mbit5pct: { ...omitTrace(lossy5), setup: "20 Mbit/s, 80 ms RTT, 400-packet queue, 5% random loss each way (before the bottleneck), sender keeps 2048 messages outstanding; window 2 s to end" },
    lossy20mbit10pct: { ...omitTrace(lossy10), setup: "as lossy20mbit5pct with 10% loss" },
    lossy2mbit2pct: { ...omitTrace(loss2m), setup: "2 Mbit/s, 60 ms RTT, 50-packet queue, 2% random loss each way" },
    jitter2mbit: { ...omitTrace(jit2m), setup: "2 Mbit/s, 60 ms RTT, 50-packet queue, uniform [0, 2) ms jitter each way, order kept" },
    lossJitter2mbit: { ...omitTrace(both2m), setup: "2% loss and 2 ms jitter each way on the 2 Mbit/s path" },
    light30hz: { ...light, setup: "30 Hz x 200 B both ways, 30 ms one-way, 10 Mbit/s (uncongested)" },
    slowLink64kbit: { ...slow64, setup: "latest-state, 8 keys x 60 B at 20 Hz (~1.4x the link) + 30 Hz x 20 B inputs back; 64 kbit/s, 25 ms (+ [0, 2) ms jitter) each way, 64-datagram queue; from 10 s" },
    slowLink128kbit: { ...slow128, setup: "as slowLink64kbit with 16 keys at 128 kbit/s" },
    clock: {
      ...clock,
      setup: "40 ms + uniform [0, 20) ms each way (50 +/- 10 ms), server clock offset +123456.789 ms, session default sync (1 request/s)",
      with10HzSync: clock10Hz,
      seeds1to8: { defaultSync: summarize(sweepDefault), sync10Hz: summarize(sweep10Hz) },
    },
  },
};
const fs = await importDynamic<FsModule>("node:fs");
fs.mkdirSync(out.slice(0, out.lastIndexOf("/")) || ".", { recursive: true });
fs.writeFileSync(out, JSON.stringify(result, null, 2) + "\n");

console.log(`bench:sim ${quick ? "(quick) " : ""}seed ${seed}`);
console.log("scenario     figure            value      goal               met   real ms");
for (const r of rows) {
  console.log(
    `${r.scenario.padEnd(12)} ${r.figure.padEnd(17)} ${String(round(r.value)).padStart(9)}  ${r.goal.padEnd(18)} ${r.met ? "yes" : "NO "}  ${r.realMs ? Math.round(r.realMs) : ""}`,
  );
}
console.log(`bulk2mbit: goodput ${round(bulk.goodputRatio)} of the link, p50 queue ${round(bulk.p50QueueDelayMs)} ms, ${bulk.tailDropped} tail drops, ${bulk.resends} resends`);
for (const [name, r] of [["lossy20m@5%", lossy5], ["lossy20m@10%", lossy10], ["lossy2m@2%", loss2m], ["jitter2m", jit2m], ["loss+jitter2m", both2m]] as const) {
  console.log(`${name}: utilization ${round(r.utilization)}, goodput ${round(r.goodputRatio)}, p50/p95 queue ${round(r.p50QueueDelayMs)}/${round(r.p95QueueDelayMs)} ms, ${r.randomLost} random losses, estimate ${round(r.bandwidthEstimateBps / 1e6)} Mbit/s`);
}
console.log(`fairness: shares ${fair.shares.map((s) => round(s)).join(" / ")}, utilization ${round(fair.utilization)}, p95 queue ${round(fair.p95QueueDelayMs)} ms`);
console.log(`light30hz: ${light.messages} messages, p50 ${round(light.p50ExtraDelayMs)} ms, max ${round(light.maxExtraDelayMs)} ms (serialization ${round(light.serializationMs)} ms included)`);
console.log(`clock: bound ${round(clock.boundMs)} ms, ${clock.boundChecks} checks, ${clock.boundViolations} violations`);
console.log(`clock seeds 1-8 at 1/s:  ${JSON.stringify(summarize(sweepDefault))}`);
console.log(`clock seeds 1-8 at 10/s: ${JSON.stringify(summarize(sweep10Hz))}`);
if (args.includes("--trace")) {
  console.log("bulk2mbit trace (t ms, bw estimate bit/s, rtt ms, packets in flight, queued at bottleneck, utilization):");
  for (const p of bulk.trace) console.log(`${p.t}\t${p.bandwidthEstimateBps}\t${round(p.rttMs, 1)}\t${p.inFlightPackets}\t${p.queuedPackets}\t${round(p.utilization)}`);
}
console.log(`wrote ${out}`);

function omitTrace<T extends { trace: unknown }>(r: T): Omit<T, "trace"> {
  const { trace, ...rest } = r;
  void trace;
  return rest;
}
