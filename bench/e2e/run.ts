// End-to-end benchmark runner (started with node):
//   node dist/bench/e2e/run.js [--quick] [--runtimes node,bun,deno]
// Spawns one scenario process per (runtime, group), one at a time (2 cores: measurements
// never overlap), collects each process's JSON line and writes
//   bench/results/e2e.json, throughput.svg, peers.svg, latency-cdf.svg

import { RESULT_PREFIX } from "./driver.js";
import { PEERS } from "./peers/index.js";
import { g, importDynamic, nowMs, scriptArgs, type ChildProcessModule, type FsModule, type RuntimeName } from "../lib/host.js";
import { benchDir, repoRoot } from "../lib/paths.js";
import { writeCharts } from "./charts.js";

const RUNTIMES: readonly RuntimeName[] = ["node", "bun", "deno"];

/** Every group each runtime runs. HOOK(ackwire): append "ackwire" and "loss" here. */
const GROUPS: readonly string[] = ["raw", "tcp", ...PEERS.map((p) => `peer:${p.name}`)];

type Json = Record<string, unknown>;

export interface RuntimeResults {
  version?: string;
  raw: Json;
  tcp: Json;
  peers: Record<string, Json>;
  /** HOOK(ackwire): filled by the "ackwire" group (reliable-ordered and unreliable channels). */
  ackwire: Json | null;
  /** HOOK(ackwire): filled by the "loss" group (goodput, delivery latency p50/p99 under loss). */
  loss: Json | null;
}

function commandFor(rt: RuntimeName, script: string, args: string[]): [string, string[]] {
  const bin = repoRoot() + "node_modules/.bin/";
  switch (rt) {
    case "bun":
      return [bin + "bun", [script, ...args]];
    case "deno":
      // --unstable-net: Deno.listenDatagram; --allow-ffi: lets it try native addons.
      return [bin + "deno", ["run", "--unstable-net", "--allow-net", "--allow-read", "--allow-env", "--allow-sys", "--allow-ffi", script, ...args]];
    default:
      return [(g.process as unknown as { execPath: string }).execPath, [script, ...args]];
  }
}

interface ProcessOutcome {
  json: Json | null;
  stderrTail: string;
  code: number | null;
  signal: string | null;
  timedOut: boolean;
}

async function runScenario(cp: ChildProcessModule, rt: RuntimeName, group: string, quick: boolean, timeoutMs: number): Promise<ProcessOutcome> {
  const script = repoRoot() + "dist/bench/e2e/scenarios.js";
  const [cmd, args] = commandFor(rt, script, [group, ...(quick ? ["--quick"] : [])]);
  const decoder = new g.TextDecoder();
  let stdout = "";
  let stderr = "";
  return new Promise((resolve) => {
    let timedOut = false;
    let child;
    try {
      child = cp.spawn(cmd, args, { cwd: repoRoot(), stdio: ["ignore", "pipe", "pipe"] });
    } catch (e) {
      resolve({ json: null, stderrTail: String(e), code: null, signal: null, timedOut: false });
      return;
    }
    const timer = g.setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.stdout?.on("data", (b) => (stdout += decoder.decode(b, { stream: true })));
    child.stderr?.on("data", (b) => (stderr += decoder.decode(b, { stream: true })));
    child.on("error", (e) => (stderr += `\nspawn error: ${e.message}`));
    child.on("close", (code, signal) => {
      g.clearTimeout(timer);
      const line = stdout.split("\n").find((l) => l.startsWith(RESULT_PREFIX));
      let json: Json | null = null;
      if (line !== undefined) {
        try {
          json = JSON.parse(line.slice(RESULT_PREFIX.length)) as Json;
        } catch {
          json = null;
        }
      }
      resolve({ json, stderrTail: cleanTail(stderr), code, signal, timedOut });
    });
  });
}

/** The last meaningful stderr lines, without ANSI colours or runtime warnings noise. */
function cleanTail(s: string): string {
  const lines = s
    .replace(/\u001b\[[0-9;]*m/g, "")
    .split("\n")
    .map((l) => l.replace(/https?:\/\/\S+/g, "").trim()) // crash-report links say nothing here
    .filter((l) => l.length > 0 && !l.startsWith("(Use `node --trace-warnings"));
  // A crash banner (Bun's "panic(...)") says more than the lines after it.
  const key = lines.filter((l) => /panic|error/i.test(l)).slice(0, 2);
  return (key.length > 0 ? key : lines.slice(-3)).join(" | ").slice(0, 600);
}

function failureText(o: ProcessOutcome): string {
  const how = o.timedOut ? "timed out (killed)" : o.signal !== null ? `killed by ${o.signal}` : `exit code ${o.code}`;
  return `process ${how}, no result${o.stderrTail ? `: ${o.stderrTail}` : ""}`;
}

async function main(): Promise<void> {
  const args = scriptArgs();
  const quick = args.includes("--quick");
  const rtArg = args.find((a) => a.startsWith("--runtimes="))?.slice("--runtimes=".length);
  const runtimes = rtArg ? (rtArg.split(",") as RuntimeName[]).filter((r) => RUNTIMES.includes(r)) : RUNTIMES;
  const cp = await importDynamic<ChildProcessModule>("node:child_process");
  const fs = await importDynamic<FsModule>("node:fs");
  const timeoutMs = quick ? 30_000 : 90_000;
  const started = nowMs();

  const results: Partial<Record<RuntimeName, RuntimeResults>> = {};
  for (const rt of runtimes) {
    const r: RuntimeResults = { raw: {}, tcp: {}, peers: {}, ackwire: null, loss: null };
    results[rt] = r;
    for (const group of GROUPS) {
      const t0 = nowMs();
      const o = await runScenario(cp, rt, group, quick, timeoutMs);
      const inner = (o.json?.result as Json | undefined) ?? { error: failureText(o) };
      if (o.json?.version !== undefined) r.version = String(o.json.version);
      if (group === "raw") r.raw = inner;
      else if (group === "tcp") r.tcp = inner;
      else if (group.startsWith("peer:")) r.peers[group.slice(5)] = inner;
      const summary = "error" in inner ? `ERROR ${String(inner.error).slice(0, 160)}` : `${inner.pps100} msg/s @100B, ${inner.mbps1000} MB/s @1000B, ping p50 ${inner.pingP50Us} us p99 ${inner.pingP99Us} us${inner.verified ? "" : " (NOT VERIFIED)"}`;
      g.console.log(`${rt.padEnd(5)} ${group.padEnd(18)} ${summary}  [${((nowMs() - t0) / 1000).toFixed(1)} s]`);
    }
  }

  const outDir = benchDir() + "results/";
  fs.mkdirSync(outDir, { recursive: true });
  const doc = {
    meta: {
      command: `node dist/bench/e2e/run.js${quick ? " --quick" : ""}${rtArg ? ` --runtimes=${rtArg}` : ""}`,
      date: new Date().toISOString(),
      quick,
      processModel: "one process per runtime and scenario group, holding both ends on 127.0.0.1",
      units: {
        pps100: "messages/s at 100 B payload (raw: datagrams/s)",
        mbps1000: "payload MB/s (1e6 bytes) at 1000 B messages",
        pingP50Us: "100 B round trip, microseconds",
      },
      seconds: Math.round((nowMs() - started) / 100) / 10,
    },
    ...results,
  };
  fs.writeFileSync(outDir + "e2e.json", JSON.stringify(doc, null, 2) + "\n");
  writeCharts(fs, outDir, results);
  g.console.log(`wrote ${outDir}e2e.json, throughput.svg, peers.svg, latency-cdf.svg in ${doc.meta.seconds} s`);
}

void main();
