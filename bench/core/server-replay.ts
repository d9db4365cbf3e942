/**
 * bench:core's replay process (forked by core.ts after the live run): a fresh server replays
 * the live run's recorded inputs alone, in a process that holds nothing else — no clients, no
 * simulated network — as on a machine that only serves. Turns run back to back, as on a busy
 * server. It is the same server on the same inputs, so it must transmit the same bytes: core.ts
 * checks the output hash against the live run's.
 *   node dist/bench/core/server-replay.js <recording> <options json> <reps>
 * Prints one JSON line: per rep, CPU microseconds of the timed turns, their count, the output
 * hash and the messages received; and the measured cost of one pair of cpuUsage() calls.
 */
import { decodeTurns } from "./recording.js";
import { ServerSide, calibrateTimerOverhead, type CpuClock, type ReplayReport } from "./server.js";
import type { ScenarioOptions } from "./scenario.js";

interface ProcessLike extends CpuClock {
  argv: string[];
}
const proc = (globalThis as unknown as { process: ProcessLike }).process;
const console = (globalThis as unknown as { console: { log(s: string): void } }).console;
const fs = (await import("node:" + "fs")) as { readFileSync(path: string): Uint8Array };
const [path, optionsJson, repsArg] = proc.argv.slice(2);
const recording = fs.readFileSync(path!);
const options = JSON.parse(optionsJson!) as ScenarioOptions;
const reps = Math.max(1, Math.min(9, Number(repsArg ?? 3)));

const timerOverheadMicros = calibrateTimerOverhead(proc);
const results: ReplayReport["results"] = [];
for (let rep = 0; rep < reps; rep++) {
  const server = new ServerSide(options, proc);
  for (const t of decodeTurns(recording)) server.turn(t.now, t.deliveries, t.appSends, t.tick, t.timed);
  results.push({ cpuMicros: server.cpuMicros, timedTurns: server.timedTurns, hash: server.outputHash, messagesIn: server.messagesIn });
}
console.log(JSON.stringify({ timerOverheadMicros, results }));
