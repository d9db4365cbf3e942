// What all of a server's connections hold received, with and without maxTotalReceiveBufferBytes,
// on the simulator (bench/sim/receive-budget-sim.ts; virtual time). For unreliable and
// reliable-ordered pressure, prints one JSON line per run: the most the server held at once
// (sampled every 20 ms), its bound, what the attackers could hold in all, the connections it
// ended, and whether the honest connection got every message.
//   node dist/bench/sim/receive-budget.js [attackers=64] [perConnectionKiB=1024] [budgetKiB=8192] [ms=3000]
import { g, scriptArgs } from "../lib/host.js";
import { run } from "./receive-budget-sim.js";

const [a, per, budget, msArg] = scriptArgs().filter((x) => !x.startsWith("--"));
const attackers = Number(a ?? 64);
const perConnection = Number(per ?? 1024) * 1024;
const limit = Number(budget ?? 8192) * 1024;
const ms = Number(msArg ?? 3000);
for (const [pressure, channel] of [["unreliable", 2], ["reliable-ordered", 6]] as const) {
  for (const bounded of [false, true]) {
    const started = Date.now();
    const r = run(5, attackers, { maxReceiveBufferBytes: perConnection, ...(bounded ? { maxTotalReceiveBufferBytes: limit } : {}) }, channel, ms);
    g.console.log(
      JSON.stringify({
        pressure,
        attackers,
        couldHoldBytes: attackers * perConnection,
        limitBytes: r.limit,
        maxHeldBytes: r.maxTotal,
        receiveBudgetCloses: r.counters.receiveBudgetCloses,
        honest: `${r.honestReceived}/${r.honestSent}`,
        honestClosed: r.honestClosed,
        wallMs: Date.now() - started,
      }),
    );
  }
}
