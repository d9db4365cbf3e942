// The goals' three ratios, measured paired: raw UDP and ackwire alternated in ONE process
// (raw, ackwire, raw, ackwire, ...), so both arms of a ratio see the same host over the same
// seconds. The other groups run in separate processes minutes apart, and on this shared 2-core
// host that drift alone can flip a goal's verdict between runs of the same code. Same drivers, transports and flows as the raw and ackwire groups:
// - reliable-ordered 1000 B: ackwire MB/s over raw MB/s;
// - aggregated 100 B: ackwire reliable-ordered messages/s over raw datagrams/s;
// - ping: ackwire reliable-ordered p50 over raw p50.
// Each metric gets one uncounted round of each arm first (JIT warm-up), then `rounds` pairs;
// the ratio is of the medians. bench/adapters/bulk-ratio.js and ping-ratio.js are the same
// measurements with their own arguments, and CPU figures.
import { onFreshPair, runPing, runThroughput, type MessagePair, type PingResult, type ThroughputResult } from "./driver.js";
import { RAW_FLOW, RELIABLE_FLOW } from "./flows.js";
import { ackwirePair, CHANNEL } from "./transports/ackwire.js";
import { rawUdpPair } from "./transports/raw-udp.js";
import { median } from "../lib/stats.js";

/** One arm's run: the figure the ratio uses, plus what a probe may want besides. */
export interface ArmRun<R> {
  value: number;
  result: R;
  /** Process CPU (user + system, microseconds) over the run, where the runtime reports it. */
  cpuUs: number;
}

export interface PairedSeries {
  raw: number[];
  ackwire: number[];
  rawMedian: number;
  ackwireMedian: number;
  /** ackwire median / raw median. */
  ratio: number;
}

export interface PairedSettings {
  rounds: number;
  durationMs: number;
  warmupMs: number;
  pingCount: number;
}

type CpuUsage = () => { user: number; system: number };
const cpuUsage = (globalThis as unknown as { process?: { cpuUsage?: CpuUsage } }).process?.cpuUsage;
function cpuNowUs(): number {
  const u = cpuUsage?.();
  return u === undefined ? 0 : u.user + u.system;
}

/** One arm's run on a fresh pair (bounded like every e2e group's), with process CPU around it. */
function arm<R>(make: () => Promise<MessagePair>, run: (p: MessagePair) => Promise<R>, value: (r: R) => number, budgetMs: number, what: string): Promise<ArmRun<R>> {
  return onFreshPair(
    make,
    async (pair) => {
      const before = cpuNowUs();
      const result = await run(pair);
      return { value: value(result), result, cpuUs: cpuNowUs() - before };
    },
    budgetMs,
    what,
  );
}

/**
 * Alternates the two arms: one uncounted run of each, then `rounds` pairs (raw first in each).
 * Returns every counted run of each arm, in order.
 */
export async function alternate<R>(rounds: number, raw: () => Promise<ArmRun<R>>, ackwire: () => Promise<ArmRun<R>>): Promise<{ raw: ArmRun<R>[]; ackwire: ArmRun<R>[] }> {
  await raw();
  await ackwire();
  const out = { raw: [] as ArmRun<R>[], ackwire: [] as ArmRun<R>[] };
  for (let i = 0; i < rounds; i++) {
    out.raw.push(await raw());
    out.ackwire.push(await ackwire());
  }
  return out;
}

export function series(runs: { raw: ArmRun<unknown>[]; ackwire: ArmRun<unknown>[] }, digits: number): PairedSeries {
  const f = 10 ** digits;
  const raw = runs.raw.map((r) => Math.round(r.value * f) / f);
  const ackwire = runs.ackwire.map((r) => Math.round(r.value * f) / f);
  const rawMedian = median(raw);
  const ackwireMedian = median(ackwire);
  return { raw, ackwire, rawMedian, ackwireMedian, ratio: rawMedian > 0 ? Math.round((ackwireMedian / rawMedian) * 1000) / 1000 : 0 };
}

/** Bulk throughput at `size`: MB/s at 1000 B and above, else messages/s (raw: datagrams/s). */
export function pairedThroughput(size: number, s: Omit<PairedSettings, "pingCount">) {
  const metric = (r: ThroughputResult): number => (size >= 1000 ? r.mbPerSec : r.messagesPerSec);
  const timing = { durationMs: s.durationMs, warmupMs: s.warmupMs };
  const budget = s.warmupMs + s.durationMs + 3000;
  return alternate(
    s.rounds,
    () => arm(rawUdpPair, (p) => runThroughput(p, { size, ...RAW_FLOW, ...timing }), metric, budget, `raw ${size} B`),
    () => arm(() => ackwirePair(CHANNEL.reliableOrdered, true), (p) => runThroughput(p, { size, ...RELIABLE_FLOW, ...timing }), metric, budget, `ackwire ${size} B`),
  );
}

/** 100 B ping-pong p50 (ackwire on its reliable-ordered channel, as the ackwire group). */
export function pairedPing(s: Pick<PairedSettings, "rounds" | "pingCount">) {
  const opt = { size: 100, count: s.pingCount, warmup: 300, maxMs: 30_000 };
  const budget = opt.maxMs + 5000;
  const p50 = (r: PingResult): number => r.p50Us;
  return alternate(
    s.rounds,
    () => arm(rawUdpPair, (p) => runPing(p, { ...opt, lossTimeoutMs: 50 }), p50, budget, "raw ping"),
    () => arm(() => ackwirePair(CHANNEL.reliableOrdered, true), (p) => runPing(p, { ...opt, lossTimeoutMs: 2000 }), p50, budget, "ackwire ping"),
  );
}

export function pairedSettings(quick: boolean): PairedSettings {
  return quick ? { rounds: 1, durationMs: 500, warmupMs: 100, pingCount: 2000 } : { rounds: 3, durationMs: 1000, warmupMs: 150, pingCount: 10_000 };
}

/** The e2e "paired" group: the three goal ratios, each from alternated runs in this process. */
export async function measurePaired(quick: boolean) {
  const s = pairedSettings(quick);
  const verified = (runs: { raw: ArmRun<ThroughputResult>[]; ackwire: ArmRun<ThroughputResult>[] }): boolean =>
    [...runs.raw, ...runs.ackwire].every((r) => r.result.verified);
  const t1000 = await pairedThroughput(1000, s);
  const t100 = await pairedThroughput(100, s);
  const ping = await pairedPing(s);
  const pingClean = [...ping.raw, ...ping.ackwire].every((r) => r.result.corrupt === 0);
  return {
    settings: s,
    reliableOrdered1000Mbps: series(t1000, 1),
    aggregated100Mps: series(t100, 0),
    pingP50Us: series(ping, 1),
    verified: verified(t1000) && verified(t100) && pingClean,
  };
}
