/**
 * Random scenarios over the simulator (scenario-model.ts): channel mixes, bad links both ways,
 * sends from 0 B to 300 KiB, 30 Hz streams, idle gaps, MTU changes, NAT rebindings, closes with
 * and without linger, reconnects; on both engines. Every run checks every delivery promise
 * (exactly once, in order where ordered, intact, sequenced never older, LatestState converges,
 * receipts once each and truthful, linger delivers, counters add up) and that no endpoint's
 * deadline stays at `now` (a driver would spin). A fixed seed, so CI runs the same cases;
 * ACKWIRE_SCENARIO_SEED=<n> ACKWIRE_SCENARIO_RUNS=<n> explores others.
 */
import fc from "fast-check";
import { describe, it } from "vitest";
import { runScenario, scenarioArb } from "./scenario-model.js";

const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ?? {};
const SEED = Number(env.ACKWIRE_SCENARIO_SEED ?? 20261129);
const RUNS = Number(env.ACKWIRE_SCENARIO_RUNS ?? 40);

describe("random scenarios", () => {
  for (const engine of ["ts", "wasm"] as const) {
    it(`hold every delivery promise and never spin (${engine} engine, fast-check seed ${SEED})`, () => {
      fc.assert(
        fc.property(scenarioArb({ engine }), (sc) => {
          const { problems, summary } = runScenario(sc);
          if (problems.length > 0) throw new Error(`${problems.join("\n")}\n${summary}`);
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    }, 240_000);
  }
});
