/**
 * Paired comparison of two builds' servers on the same recorded bench:core inputs, for changes
 * to the hot path: on this shared 2-core host, the server-alone figure of the same code moves by
 * half between runs, far more than most single changes do.
 * Here both builds replay one recording, alternately (A B, B A, A B, ...), each replay in a
 * fresh process with nothing else in it, so both see the same host over the same minutes.
 *
 *   node --expose-gc dist/bench/core/core.js --quick --keep-recording /tmp/core.rec   (once)
 *   node dist/bench/core/ab.js /tmp/core.rec <other-root> [rounds]
 *
 * `<other-root>` is a checkout (or a copy of one) with its own built dist/, e.g. the commit
 * before a change: its dist/bench/core/server-replay.js replays the same file. Rounds default
 * to 6, at most 20. Prints one JSON line: each build's CPU-s per simulated second per round,
 * their medians and the ratio this/other (below 1: this build is cheaper), and whether each
 * build's replays transmitted exactly what the recorded live server did. A build whose output
 * differs (it changed behaviour) answered different questions on the same inputs: its figure is
 * reported, and `sameWork` is false.
 */
import { median } from "../lib/stats.js";
import type { RecordingSidecar } from "./recording.js";
import { cpuSecondsPerSimSecond, type ReplayReport } from "./server.js";

interface ProcessLike {
  argv: string[];
  execPath: string;
  exitCode?: number;
}
const proc = (globalThis as unknown as { process: ProcessLike }).process;
const console = (globalThis as unknown as { console: { log(s: string): void; error(s: string): void } }).console;
const fs = (await import("node:" + "fs")) as { readFileSync(path: string, enc: string): string; existsSync(path: string): boolean };
const path = (await import("node:" + "path")) as { resolve(...p: string[]): string };
const url = (await import("node:" + "url")) as { fileURLToPath(u: string): string; };
const moduleUrl = (import.meta as unknown as { url: string }).url;
const childProcess = (await import("node:" + "child_process")) as {
  execFileSync(file: string, args: string[], o: object): string;
};

const [recordingArg, otherArg, roundsArg] = proc.argv.slice(2).filter((a) => !a.startsWith("--"));
if (recordingArg === undefined || otherArg === undefined) {
  console.error("usage: node dist/bench/core/ab.js <recording from core.js --keep-recording> <other-root> [rounds]");
  proc.exitCode = 2;
} else {
  const sidecar = JSON.parse(fs.readFileSync(recordingArg + ".json", "utf8")) as RecordingSidecar;
  const rounds = Math.max(1, Math.min(20, Math.floor(Number(roundsArg ?? 6)) || 6));
  // dist/bench/core/ab.js -> this build's replay script sits beside it.
  const builds = {
    this: url.fileURLToPath(moduleUrl.replace(/ab\.js$/, "server-replay.js")),
    other: path.resolve(otherArg, "dist/bench/core/server-replay.js"),
  };
  if (!fs.existsSync(builds.other)) throw new Error(`ab: ${builds.other} not found (build the other checkout first)`);
  const replayOnce = (script: string): { cps: number; sameWork: boolean } => {
    const out = childProcess.execFileSync(proc.execPath, [script, recordingArg, JSON.stringify(sidecar.options), "1"], {
      encoding: "utf8",
      maxBuffer: 1 << 20,
    });
    const report = JSON.parse(out) as ReplayReport;
    const r = report.results[0]!;
    const cps = cpuSecondsPerSimSecond(r.cpuMicros, r.timedTurns, report.timerOverheadMicros, sidecar.simSeconds);
    return { cps, sameWork: r.hash === sidecar.outputHash && r.messagesIn === sidecar.messagesIn };
  };
  const figures: Record<"this" | "other", number[]> = { this: [], other: [] };
  const sameWork = { this: true, other: true };
  for (let round = 0; round < rounds; round++) {
    // Alternate which goes first, so neither always runs on the host's first (or second) turn.
    const order: ("this" | "other")[] = round % 2 === 0 ? ["this", "other"] : ["other", "this"];
    for (const build of order) {
      const { cps, sameWork: same } = replayOnce(builds[build]);
      figures[build].push(Number(cps.toFixed(5)));
      sameWork[build] &&= same;
    }
  }
  const thisMedian = median(figures.this);
  const otherMedian = median(figures.other);
  console.log(
    JSON.stringify({
      recording: recordingArg,
      simSeconds: sidecar.simSeconds,
      rounds,
      cpuSecondsPerSimSecond: figures,
      median: { this: Number(thisMedian.toFixed(5)), other: Number(otherMedian.toFixed(5)) },
      ratioThisOverOther: Number((thisMedian / otherMedian).toFixed(3)),
      sameWork,
    }),
  );
}
