// One runtime's scenario process. Started by run.ts as
//   node|bun|deno dist/bench/e2e/scenarios.js <group> [--quick]
// with <group> one of: raw, tcp, peer:<npm name>, ackwire, loss [--node=<path of node>]. Both ends of every connection live in
// this one process (as the DESIGN's runtime numbers were measured). Prints exactly one
// line `E2E_RESULT {json}` on stdout, then exits.

import {
  errorText,
  onFreshPair,
  RESULT_PREFIX,
  runPing,
  runThroughput,
  scenarioSettings,
  type ImplKind,
  type MessagePair,
  type PingResult,
  type ThroughputResult,
  withTimeout,
} from "./driver.js";
import { g, runtimeName, runtimeVersion, scriptArgs, sleep } from "../lib/host.js";
import { rawUdpApiName, rawUdpPair } from "./transports/raw-udp.js";
import { tcpPair } from "./transports/tcp.js";
import { PEERS } from "./peers/index.js";
import { measureAckwire, measureLoss } from "./ackwire-scenarios.js";
import { RAW_FLOW, RELIABLE_FLOW } from "./flows.js";
import { measurePaired } from "./paired.js";


export interface GroupResult {
  impl: ImplKind;
  api: string;
  /** Messages per second at 100 B (for raw UDP one message is one datagram). */
  pps100: number;
  mbps100: number;
  msgs1000: number;
  mbps1000: number;
  pingP50Us: number;
  pingP99Us: number;
  pingCdfUs: number[];
  verified: boolean;
  /** Messages in flight at 1000 B and at 100 B, and the ack interval at 1000 B. */
  window: number;
  window100: number;
  ackEvery: number;
  details: { t100?: ThroughputResult; t1000?: ThroughputResult; ping?: PingResult };
  errors?: string[];
}


export async function measureGroup(
  make: () => Promise<MessagePair>,
  impl: ImplKind,
  api: string,
  reliable: boolean,
  quick: boolean,
  maxInFlightBytes = Infinity,
  maxInFlightMessages = Infinity,
): Promise<GroupResult> {
  const s = scenarioSettings(quick);
  const base = reliable ? RELIABLE_FLOW : RAW_FLOW;
  const flowFor = (size: number): { window: number; ackEvery: number } => {
    const window = Math.max(8, Math.min(base.window, maxInFlightMessages, Math.floor(maxInFlightBytes / size)));
    return { window, ackEvery: Math.min(base.ackEvery, Math.max(1, window >> 2)) };
  };
  const budget = s.warmupMs + s.durationMs + 3000;
  const errors: string[] = [];
  const attempt = async <T>(what: string, f: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await f();
    } catch (e) {
      errors.push(`${what}: ${errorText(e)}`);
      return undefined;
    }
  };
  const t100 = await attempt("100 B throughput", () =>
    onFreshPair(make, (p) => runThroughput(p, { size: 100, ...flowFor(100), durationMs: s.durationMs, warmupMs: s.warmupMs }), budget, "100 B throughput", 1000),
  );
  const t1000 = await attempt("1000 B throughput", () =>
    onFreshPair(make, (p) => runThroughput(p, { size: 1000, ...flowFor(1000), durationMs: s.durationMs, warmupMs: s.warmupMs }), budget, "1000 B throughput", 1000),
  );
  const ping = await attempt("100 B ping-pong", () =>
    onFreshPair(
      make,
      (p) => runPing(p, { size: 100, count: s.pingCount, warmup: 200, maxMs: s.pingMaxMs, lossTimeoutMs: reliable ? 2000 : 50 }),
      s.pingMaxMs + 5000,
      "100 B ping-pong",
      1000,
    ),
  );
  const num = (v: number | undefined): number => (v === undefined || !Number.isFinite(v) ? 0 : v);
  return {
    impl,
    api,
    pps100: num(t100?.messagesPerSec),
    mbps100: num(t100?.mbPerSec),
    msgs1000: num(t1000?.messagesPerSec),
    mbps1000: num(t1000?.mbPerSec),
    pingP50Us: num(ping?.p50Us),
    pingP99Us: num(ping?.p99Us),
    pingCdfUs: ping?.cdfUs ?? [],
    verified: (t100?.verified ?? false) && (t1000?.verified ?? false) && (ping !== undefined && ping.corrupt === 0),
    window: flowFor(1000).window,
    window100: flowFor(100).window,
    ackEvery: flowFor(1000).ackEvery,
    details: { t100, t1000, ping },
    ...(errors.length > 0 ? { errors } : {}),
  };
}

async function runGroup(group: string, quick: boolean, nodePath: string): Promise<unknown> {
  if (group === "raw") return measureGroup(rawUdpPair, "kernel", rawUdpApiName(), false, quick);
  if (group === "tcp") return measureGroup(tcpPair, "kernel", "node:net, noDelay, u32 length prefix", true, quick);
  if (group.startsWith("peer:")) {
    const name = group.slice(5);
    const peer = PEERS.find((p) => p.name === name);
    if (peer === undefined) throw new Error(`unknown peer ${name}`);
    // Loading is tried once up front so that "does not load here" is reported as such.
    const probe = await peer.pair();
    await withTimeout(probe.close(), 1000, "close").catch(() => {});
    const r = await measureGroup(() => peer.pair(), peer.impl, peer.mode, true, quick, peer.maxInFlightBytes, peer.maxInFlightMessages);
    return { ...r, mode: peer.mode };
  }
  // ackwire over its public API (ackwire-scenarios.ts): loopback throughput and ping, and
  // reliable-ordered delivery through the impairment proxy (run in a Node child process).
  if (group === "ackwire") return measureAckwire(quick);
  // The goals' three ratios, raw and ackwire alternated in this one process (paired.ts).
  if (group === "paired") return measurePaired(quick);
  if (group === "loss") return measureLoss(quick, nodePath);
  throw new Error(`unknown group ${group}`);
}

function exit(code: number): never {
  if (g.Deno !== undefined) g.Deno.exit(code);
  if (g.process !== undefined) g.process.exit(code);
  throw new Error("no way to exit");
}

async function main(): Promise<void> {
  const args = scriptArgs();
  const quick = args.includes("--quick");
  const group = args.find((a) => !a.startsWith("--")) ?? "raw";
  // The loss group starts the proxy with Node whatever runtime this is (run.ts passes its own).
  const nodePath = args.find((a) => a.startsWith("--node="))?.slice("--node=".length) ?? (g.Deno === undefined && g.Bun === undefined ? (g.process as unknown as { execPath: string }).execPath : "node");
  let out: unknown;
  try {
    out = await runGroup(group, quick, nodePath);
  } catch (e) {
    out = { error: errorText(e) };
  }
  const line = RESULT_PREFIX + JSON.stringify({ runtime: runtimeName(), version: runtimeVersion(), group, result: out }) + "\n";
  if (g.process !== undefined && g.Deno === undefined) {
    g.process.stdout.write(line);
    await sleep(50); // let stdout drain to the pipe before exiting
  } else {
    g.console.log(line.trimEnd());
  }
  exit(0);
}

void main();
