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

/** Every group each runtime runs: baselines, peers, then ackwire, the paired goal ratios, and ackwire under loss. */
const GROUPS: readonly string[] = ["raw", "tcp", ...PEERS.map((p) => `peer:${p.name}`), "ackwire", "paired", "loss"];

type Json = Record<string, unknown>;

export interface RuntimeResults {
  version?: string;
  raw: Json;
  tcp: Json;
  peers: Record<string, Json>;
  /** The "ackwire" group (reliable-ordered and unreliable channels, ping). */
  ackwire: Json | null;
  /** The "loss" group: per loss percent, the 30 Hz stream's p50/p99 and bulk goodput. */
  loss: Json | null;
  /** The "paired" group (paired.ts): raw and ackwire alternated in one process, per goal metric. */
  paired: Json | null;
  /** ackwire against this runtime's raw ceiling: the "raw" and "ackwire" groups' figures (separate processes, minutes apart). */
  ratios?: Json;
  /** The same ratios from the paired group: what the goals are judged on. */
  pairedRatios?: Json;
  goals?: Json;
}

function commandFor(rt: RuntimeName, script: string, args: string[]): [string, string[]] {
  const bin = repoRoot() + "node_modules/.bin/";
  switch (rt) {
    case "bun":
      return [bin + "bun", [script, ...args]];
    case "deno":
      // --unstable-net: Deno.listenDatagram; --allow-ffi: lets it try native addons;
      // --allow-run: the loss group starts its proxy process.
      return [bin + "deno", ["run", "--unstable-net", "--allow-net", "--allow-read", "--allow-env", "--allow-sys", "--allow-ffi", "--allow-run", script, ...args]];
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
  // The loss group starts its impairment proxy with this same Node, whatever runtime it is on.
  const nodeArg = `--node=${(g.process as unknown as { execPath: string }).execPath}`;
  const [cmd, args] = commandFor(rt, script, [group, ...(quick ? ["--quick"] : []), ...(group === "loss" ? [nodeArg] : [])]);
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

function lossSummary(levels: Record<string, Json> | undefined): string {
  if (levels === undefined) return "no levels";
  return Object.entries(levels)
    .map(([pct, l]) => `${pct}%: stream p50 ${l.p50Ms} p99 ${l.p99Ms} ms (default channel p99 ${l.defaultChannelP99Ms}), bulk ${l.goodputMBps} MB/s${l.errors ? " (errors)" : ""}`)
    .join("; ");
}

/** One line for the paired group: each metric's raw and ackwire medians and their ratio. */
function pairedSummary(inner: Json): string {
  const one = (key: string, unit: string): string => {
    const v = inner[key] as Json | undefined;
    return v === undefined ? `${key} ?` : `${key} ${String(v.rawMedian)} / ${String(v.ackwireMedian)} ${unit} (${String(v.ratio)})`;
  };
  return `raw / ackwire: ${one("reliableOrdered1000Mbps", "MB/s")}, ${one("aggregated100Mps", "msg/s")}, ${one("pingP50Us", "us")}${inner.verified ? "" : " (NOT VERIFIED)"}`;
}

const ratio = (a: unknown, b: unknown): number | null =>
  typeof a === "number" && typeof b === "number" && a > 0 && b > 0 ? Math.round((a / b) * 1000) / 1000 : null;

/** Stream p99 bound at 5% loss: 2 x one-way delay + one RTT (the proxy's 25 ms each way). */
const LOSS_P99_BOUND_MS = 2 * 25 + 50;

/** Ratios against this runtime's raw ceiling and the issue's goals, from one run's results. */
function evaluate(rt: RuntimeName, r: RuntimeResults): { ratios: Json; pairedRatios: Json | undefined; goals: Json } {
  const a = r.ackwire ?? {};
  const ratios = {
    reliableOrdered1000VsRaw: ratio(a.reliableOrderedMbps1000, r.raw.mbps1000),
    aggregated100VsRawPps: ratio(a.aggregatedMps100, r.raw.pps100),
    pingP50VsRaw: ratio(a.pingP50Us, r.raw.pingP50Us),
    unreliable100VsRawPps: ratio(a.unreliableMps100, r.raw.pps100),
  };
  // The goals are judged on the paired group when it produced verified figures: both arms of
  // each ratio alternated in one process. The separate groups' ratios carry the host's drift
  // between processes minutes apart (both are in e2e.json).
  const p = r.paired !== null && !("error" in r.paired) && r.paired.verified === true ? r.paired : undefined;
  const pairedRatio = (key: string): number | null => {
    const v = (p?.[key] as Json | undefined)?.ratio;
    return typeof v === "number" && v > 0 ? v : null;
  };
  const pairedRatios =
    p === undefined
      ? undefined
      : {
          reliableOrdered1000VsRaw: pairedRatio("reliableOrdered1000Mbps"),
          aggregated100VsRawPps: pairedRatio("aggregated100Mps"),
          pingP50VsRaw: pairedRatio("pingP50Us"),
        };
  const judged = pairedRatios ?? ratios;
  const basis = pairedRatios !== undefined ? "paired" : "separate groups (the paired group failed or was not verified)";
  const goal = (value: number | null, target: string, met: boolean, on: string = basis): Json => ({ value, target, met: value !== null && met, basis: on });
  const goals: Json = {
    reliableOrdered1000VsRaw: goal(judged.reliableOrdered1000VsRaw, ">= 0.8", (judged.reliableOrdered1000VsRaw ?? 0) >= 0.8),
    aggregated100VsRawPps: goal(judged.aggregated100VsRawPps, ">= 4", (judged.aggregated100VsRawPps ?? 0) >= 4),
    pingP50VsRaw: goal(judged.pingP50VsRaw, "<= 1.25", (judged.pingP50VsRaw ?? Infinity) <= 1.25),
  };
  const at5 = (r.loss as Record<string, Json> | null)?.["5"];
  const p99 = typeof at5?.p99Ms === "number" && at5.p99Ms > 0 ? at5.p99Ms : null;
  goals.loss5StreamP99Ms = goal(p99, `<= ${LOSS_P99_BOUND_MS} ms (2 x 25 ms one-way + 50 ms RTT)`, (p99 ?? Infinity) <= LOSS_P99_BOUND_MS, "loss group");
  if (rt === "node") {
    // Same scenario, same driver: ackwire's aggregated 100 B vs the peer's 100 B reliable
    // messages/s, reliable-ordered 1000 B MB/s, and ping p50 (lower is better).
    const vsPeers: Json = {};
    let all = true;
    for (const [name, p] of Object.entries(r.peers)) {
      if ("error" in p) continue;
      const ahead = {
        msgs100: [a.aggregatedMps100, p.pps100],
        mbps1000: [a.reliableOrderedMbps1000, p.mbps1000],
        pingP50Us: [a.pingP50Us, p.pingP50Us],
        met: Number(a.aggregatedMps100) > Number(p.pps100) && Number(a.reliableOrderedMbps1000) > Number(p.mbps1000) && Number(a.pingP50Us) < Number(p.pingP50Us),
      };
      all &&= ahead.met;
      vsPeers[name] = ahead;
    }
    goals.aheadOfEveryPeer = { met: all && Object.keys(vsPeers).length > 0, vsPeers };
  }
  return { ratios, pairedRatios, goals };
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
    const r: RuntimeResults = { raw: {}, tcp: {}, peers: {}, ackwire: null, paired: null, loss: null };
    results[rt] = r;
    for (const group of GROUPS) {
      const t0 = nowMs();
      const o = await runScenario(cp, rt, group, quick, group === "loss" ? 3 * timeoutMs : timeoutMs);
      const inner = (o.json?.result as Json | undefined) ?? { error: failureText(o) };
      if (o.json?.version !== undefined) r.version = String(o.json.version);
      if (group === "raw") r.raw = inner;
      else if (group === "tcp") r.tcp = inner;
      else if (group.startsWith("peer:")) r.peers[group.slice(5)] = inner;
      else if (group === "ackwire") r.ackwire = inner;
      else if (group === "paired") r.paired = inner;
      else if (group === "loss") r.loss = "error" in inner ? inner : ((inner.levels as Json) ?? inner);
      const summary =
        "error" in inner
          ? `ERROR ${String(inner.error).slice(0, 160)}`
          : group === "loss"
            ? lossSummary(inner.levels as Record<string, Json>)
            : group === "paired"
              ? pairedSummary(inner)
              : group === "ackwire"
              ? `unreliable ${inner.unreliableMps100} msg/s @100B, reliable-ordered ${inner.reliableOrderedMbps1000} MB/s @1000B, aggregated ${inner.aggregatedMps100} msg/s @100B, ping p50 ${inner.pingP50Us} us p99 ${inner.pingP99Us} us${inner.verified ? "" : " (NOT VERIFIED)"}`
              : `${inner.pps100} msg/s @100B, ${inner.mbps1000} MB/s @1000B, ping p50 ${inner.pingP50Us} us p99 ${inner.pingP99Us} us${inner.verified ? "" : " (NOT VERIFIED)"}`;
      g.console.log(`${rt.padEnd(5)} ${group.padEnd(18)} ${summary}  [${((nowMs() - t0) / 1000).toFixed(1)} s]`);
    }
    const { ratios, pairedRatios, goals } = evaluate(rt, r);
    r.ratios = ratios;
    if (pairedRatios !== undefined) r.pairedRatios = pairedRatios;
    r.goals = goals;
    g.console.log(`${rt.padEnd(5)} ratios (separate groups) ${JSON.stringify(ratios)}`);
    g.console.log(`${rt.padEnd(5)} ratios (paired, the goals) ${JSON.stringify(pairedRatios ?? "unavailable")}`);
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
        ackwire: "unreliableMps100 / aggregatedMps100: messages/s at 100 B; reliableOrderedMbps1000: MB/s at 1000 B (one message per datagram); pingP50Us/pingP99Us: reliable-ordered 100 B round trip",
        loss: "per loss percent (both directions, 50 ms RTT): p50Ms/p99Ms = 30 Hz stream delivery latency (send() to delivery) on a reliable-ordered channel with piggyback: 1, defaultChannelP50Ms/P99Ms = the same stream on a default reliable-ordered channel, goodputMBps = bulk 1000 B reliable-ordered",
        ratios: "ackwire / raw UDP of the same runtime in the same run, from the raw and ackwire groups (separate processes, minutes apart)",
        paired: "the goals' three metrics with raw UDP and ackwire alternated in one process (one uncounted round each, then `rounds` pairs; medians); pairedRatios = ackwire median / raw median, and the goals are judged on these",
      },
      seconds: Math.round((nowMs() - started) / 100) / 10,
    },
    ...results,
  };
  fs.writeFileSync(outDir + "e2e.json", JSON.stringify(doc, null, 2) + "\n");
  writeCharts(fs, outDir, results);
  g.console.log(`wrote ${outDir}e2e.json, throughput.svg, peers.svg, latency-cdf.svg, loss-latency-cdf.svg in ${doc.meta.seconds} s`);
}

void main();
