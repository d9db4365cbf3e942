// Loopback throughput with the congestion controller on and off, plus a trace of what the
// controller and its pacer did (the bench:sim figures, on real loopback).
//
//   node dist/bench/sim/loopback.js [--runs=3] [--duration=1500] [--warmup=300]
//        [--sizes=1000,100] [--cc=default,none,raw] [--trace]
//
// Each run measures, one after another in this process: raw UDP (the e2e `raw` baseline:
// node:dgram, 64 in flight), ackwire with `congestion: "default"` and ackwire with
// `congestion: "none"` (1024 messages in flight, app ack every 64, the e2e `ackwire` settings),
// reliable-ordered channel 0, both ends on 127.0.0.1. The order rotates per run, so no
// variant always runs first on a warming process. Ratios are against the raw figure of the same
// run (the machine is shared; absolute numbers move by 2x between minutes).
//
// --trace (default controller only): wraps DefaultController's prototype (the same module
// instance the endpoint uses) to record, per 100 ms: pacing rate, window, bandwidth estimate,
// state, in-flight; how often the pacer said "not yet" and by how much; the gaps between
// consecutive sends; and the driver's wake-ups (Driver.prototype.service).
import { runThroughput, type MessagePair, type ThroughputResult } from "../e2e/driver.js";
import { rawUdpPair } from "../e2e/transports/raw-udp.js";
import { g, nowMs, scriptArgs, sleep } from "../lib/host.js";
import { ackwireEnds, pairOn } from "../e2e/transports/ackwire.js";
import { DefaultController } from "../../src/congestion/default.js";
import { NoController } from "../../src/congestion/fixed.js";
import { Driver } from "../../src/api/driver.js";

const console = g.console;
const args = scriptArgs();
const opt = (name: string, fallback: string): string => {
  const a = args.find((x) => x.startsWith(`--${name}=`));
  return a === undefined ? fallback : a.slice(name.length + 3);
};
const RUNS = Math.max(1, Math.min(20, Number(opt("runs", "3"))));
const DURATION_MS = Math.max(200, Math.min(10_000, Number(opt("duration", "1500"))));
const WARMUP_MS = Math.max(0, Math.min(5000, Number(opt("warmup", "300"))));
const SIZES = opt("sizes", "1000,100").split(",").map(Number);
const VARIANTS = opt("cc", "raw,default,none").split(",");
const TRACE = args.includes("--trace");

// ---- trace -----------------------------------------------------------------------------------

interface TraceState {
  sends: number;
  gapsUs: number[]; // gaps between consecutive sends, µs (capped count)
  blocked: number; // nextSendTime(now) > now answers
  windowBlocked: number; // canSend() false answers
  lastBlock: "pacer" | "window" | "none";
  longGapCause: Record<string, number>; // gaps >= 1 ms by what last said no before them
  blockedWaitUs: number[]; // how long the pacer asked to wait
  wakeups: number;
  samples: { tMs: number; state: string; pacingMBps: number; bwMBps: number; cwndKB: number; minRttUs: number }[];
}
let trace: TraceState | undefined;
let traced: DefaultController | undefined;
let lastSendAt = NaN;
const MAX_KEPT = 200_000;

type AnyController = DefaultController | NoController;
let tracedAny: AnyController | undefined;

function hookSends(proto: Record<string, (...a: unknown[]) => unknown>): void {
  const orig = proto["onSent"]!;
  proto["onSent"] = function (this: AnyController, ...a: unknown[]) {
    if (trace !== undefined && this instanceof NoController && (tracedAny === this || (a[1] as number) > 600)) {
      const now = a[0] as number;
      tracedAny = this;
      if (!Number.isNaN(lastSendAt) && trace.gapsUs.length < MAX_KEPT) trace.gapsUs.push((now - lastSendAt) * 1000);
      lastSendAt = now;
      trace.sends++;
    }
    return orig.apply(this, a);
  };
}

if (TRACE) {
  hookSends(NoController.prototype as unknown as Record<string, (...a: unknown[]) => unknown>);
  const proto = DefaultController.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const origSent = proto["onSent"]!;
  const origNext = proto["nextSendTime"]!;
  proto["onSent"] = function (this: DefaultController, ...a: unknown[]) {
    if (trace !== undefined && (traced === undefined || traced === this) && this.mtu > 0) {
      const now = a[0] as number;
      if ((a[1] as number) > 600 || traced === this) {
        traced = this; // the bulk sender: the first controller that sends a big packet
        if (!Number.isNaN(lastSendAt) && trace.gapsUs.length < MAX_KEPT) trace.gapsUs.push((now - lastSendAt) * 1000);
        if (now - lastSendAt >= 1) trace.longGapCause[trace.lastBlock] = (trace.longGapCause[trace.lastBlock] ?? 0) + 1;
        trace.lastBlock = "none";
        lastSendAt = now;
        trace.sends++;
      }
    }
    return origSent.apply(this, a);
  };
  proto["nextSendTime"] = function (this: DefaultController, ...a: unknown[]) {
    const at = origNext.apply(this, a) as number;
    const now = a[0] as number;
    if (trace !== undefined && traced === this && at > now) {
      trace.blocked++;
      trace.lastBlock = "pacer";
      if (trace.blockedWaitUs.length < MAX_KEPT) trace.blockedWaitUs.push((at - now) * 1000);
    }
    return at;
  };
  const origCanSend = proto["canSend"]!;
  proto["canSend"] = function (this: DefaultController, ...a: unknown[]) {
    const ok = origCanSend.apply(this, a) as boolean;
    if (trace !== undefined && traced === this && !ok) {
      trace.windowBlocked++;
      trace.lastBlock = "window";
    }
    return ok;
  };
  const dproto = Driver.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const origService = dproto["service"]!;
  dproto["service"] = function (this: Driver, ...a: unknown[]) {
    if (trace !== undefined) trace.wakeups++;
    return origService.apply(this, a);
  };
}

// Timer callbacks that ran (the driver's pacing/ack/loss timers; the bench's own are 1-2 per run).
let timerFires = 0;
{
  const gt = globalThis as unknown as { setTimeout(fn: () => void, ms: number): unknown };
  const orig = gt.setTimeout.bind(globalThis);
  gt.setTimeout = (fn: () => void, ms: number) =>
    orig(() => {
      timerFires++;
      fn();
    }, ms);
}
const proc = (globalThis as unknown as { process?: { cpuUsage(): { user: number; system: number } } }).process;

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
}

// ---- pairs -----------------------------------------------------------------------------------

/** The sender's stats() at the end of the last ackwire run (drops, resends, RTT). */
let lastSenderStats: (() => Record<string, unknown>) | undefined;

async function ackwirePair(congestion: string): Promise<MessagePair> {
  const ends = await ackwireEnds({ congestion });
  const { client, serverConn } = ends;
  lastSenderStats = () => {
    const st = client.stats();
    return {
      dropped: st.packets.dropped,
      dispatched: st.packets.dispatched,
      resends: st.resends,
      rttMs: Math.round(st.rttMs * 1000) / 1000,
      minRttMs: Math.round(st.minRttMs * 1000) / 1000,
      receiverDuplicates: serverConn.stats().duplicates,
    };
  };
  return pairOn(ends, 0, true, () => ends.close());
}

interface RunRow {
  run: number;
  size: number;
  variant: string;
  mbPerSec: number;
  messagesPerSec: number;
  verified: boolean;
  sender?: Record<string, unknown>;
  timerFiresPerSec?: number;
  cpuMsPerMB?: number;
  trace?: Record<string, unknown>;
}

let senderStats: Record<string, unknown> | undefined;

async function measure(variant: string, size: number): Promise<ThroughputResult> {
  lastSenderStats = undefined;
  const pair = variant === "raw" ? await rawUdpPair() : await ackwirePair(variant);
  const window = variant === "raw" ? { window: 64, ackEvery: 16 } : { window: 1024, ackEvery: 64 };
  let sampler: unknown;
  if (trace !== undefined) {
    const t0 = nowMs();
    sampler = g.setInterval(() => {
      const c = traced;
      if (c === undefined || trace === undefined) return;
      trace.samples.push({
        tMs: Math.round(nowMs() - t0),
        state: c.state,
        pacingMBps: Math.round(c.pacingRateBytesPerSec() / 1e4) / 100,
        bwMBps: Math.round(c.bandwidthEstimateBps() / 8e4) / 100,
        cwndKB: Math.round(c.windowBytes() / 1000),
        minRttUs: Math.round(c.minRttMs() * 1000),
      });
    }, 100);
  }
  try {
    const r = await runThroughput(pair, { size, ...window, durationMs: DURATION_MS, warmupMs: WARMUP_MS });
    const read = lastSenderStats as (() => Record<string, unknown>) | undefined; // set by ackwirePair
    senderStats = read?.();
    return r;
  } finally {
    if (sampler !== undefined) g.clearInterval(sampler);
    await pair.close();
    await sleep(30);
  }
}

async function main(): Promise<void> {
  const rows: RunRow[] = [];
  for (let run = 0; run < RUNS; run++) {
    for (const size of SIZES) {
      // Rotate the order per run.
      const order = VARIANTS.map((_, i) => VARIANTS[(i + run) % VARIANTS.length]!);
      for (const variant of order) {
        const tracing = TRACE && (variant === "default" || variant === "none");
        if (tracing) {
          tracedAny = undefined;
          trace = { sends: 0, gapsUs: [], blocked: 0, windowBlocked: 0, lastBlock: "none", longGapCause: {}, blockedWaitUs: [], wakeups: 0, samples: [] };
          traced = undefined;
          lastSendAt = NaN;
        }
        senderStats = undefined;
        const fires0 = timerFires;
        const cpu0 = proc?.cpuUsage();
        const r = await measure(variant, size);
        const cpu1 = proc?.cpuUsage();
        const runSeconds = (WARMUP_MS + DURATION_MS) / 1000;
        const row: RunRow = { run, size, variant, mbPerSec: r.mbPerSec, messagesPerSec: r.messagesPerSec, verified: r.verified };
        if (senderStats !== undefined) row.sender = senderStats;
        row.timerFiresPerSec = Math.round((timerFires - fires0) / runSeconds);
        // Process CPU (both ends) per delivered MB over the whole run, warm-up included: less
        // sensitive to other jobs on the machine than MB/s.
        if (cpu0 !== undefined && cpu1 !== undefined) {
          const cpuMs = (cpu1.user - cpu0.user + cpu1.system - cpu0.system) / 1000;
          row.cpuMsPerMB = Math.round((cpuMs / Math.max(1e-9, (r.delivered * size) / 1e6)) * 100) / 100;
        }
        if (tracing && trace !== undefined) {
          const seconds = (WARMUP_MS + DURATION_MS) / 1000;
          const gaps = trace.gapsUs;
          row.trace = {
            sendsPerSec: Math.round(trace.sends / seconds),
            wakeupsPerSec: Math.round(trace.wakeups / seconds),
            pacerBlockedPerSec: Math.round(trace.blocked / seconds),
            windowBlockedPerSec: Math.round(trace.windowBlocked / seconds),
            longGapsByLastRefusal: trace.longGapCause,
            longGapUs: { p50: percentile(gaps.filter((x) => x >= 1000), 0.5), p90: percentile(gaps.filter((x) => x >= 1000), 0.9) },
            pacerWaitUs: { p50: percentile(trace.blockedWaitUs, 0.5), p90: percentile(trace.blockedWaitUs, 0.9) },
            sendGapUs: { p50: percentile(gaps, 0.5), p90: percentile(gaps, 0.9), p99: percentile(gaps, 0.99) },
            // Time lost in gaps of 1 ms or more (the sender sat idle between sends).
            idleInLongGapsMs: Math.round(gaps.filter((x) => x >= 1000).reduce((a, b) => a + b, 0) / 1000),
            samples: trace.samples,
          };
          trace = undefined;
        }
        rows.push(row);
        console.log(JSON.stringify(row));
      }
    }
  }
  // Summary: medians per size and variant, and ratio to raw per run.
  for (const size of SIZES) {
    for (const variant of VARIANTS) {
      const mine = rows.filter((r) => r.size === size && r.variant === variant);
      const ratios = mine.map((r) => {
        const raw = rows.find((x) => x.run === r.run && x.size === size && x.variant === "raw");
        if (raw === undefined) return NaN;
        return size >= 1000 ? r.mbPerSec / raw.mbPerSec : r.messagesPerSec / raw.messagesPerSec;
      });
      console.log(
        `SUMMARY size=${size} ${variant}: ${size >= 1000 ? "MB/s" : "msg/s"} median ${percentile(
          mine.map((r) => (size >= 1000 ? r.mbPerSec : r.messagesPerSec)),
          0.5,
        )}, ratio vs raw median ${percentile(ratios, 0.5).toFixed(3)} (runs: ${ratios.map((x) => x.toFixed(2)).join(" ")})`,
      );
    }
  }
}

main().then(
  () => g.setTimeout(() => (globalThis as { process?: { exit(c: number): void } }).process?.exit(0), 50),
  (e: unknown) => {
    console.error(e);
    (globalThis as { process?: { exit(c: number): void } }).process?.exit(1);
  },
);
