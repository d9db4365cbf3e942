// Turns e2e results into the three SVG charts written next to e2e.json.

import type { FsModule, RuntimeName } from "../lib/host.js";
import { barChart, cdfChart, PALETTE, type Bar, type BarGroup, type CdfSeries } from "../lib/svg.js";
import type { RuntimeResults } from "./run.js";

/** 2 x one-way delay (25 ms) + one RTT (50 ms): the p99 bound at 5% loss. */
const LOSS_P99_BOUND_MS = 100;

type Json = Record<string, unknown>;

function num(r: Json | undefined, key: string): number | null {
  if (r === undefined || "error" in r) return null;
  const v = r[key];
  return typeof v === "number" && v > 0 ? v : null;
}

const ACKWIRE_COLOR = "#d62728";

const RUNTIME_COLORS: Record<RuntimeName, string> = { node: "#3c873a", bun: "#c98b3b", deno: "#1f4e8c" };

export function writeCharts(fs: FsModule, outDir: string, results: Partial<Record<RuntimeName, RuntimeResults>>): void {
  const runtimes = Object.keys(results) as RuntimeName[];
  const peerNames = Array.from(new Set(runtimes.flatMap((rt) => Object.keys(results[rt]?.peers ?? {}))));

  // throughput.svg: per runtime, MB/s at 1000 B, raw ceiling as the baseline marker, ackwire first.
  const groups: BarGroup[] = runtimes.map((rt) => {
    const r = results[rt] as RuntimeResults;
    const bars: Bar[] = [
      { label: "ackwire reliable-ordered", value: num(r.ackwire ?? undefined, "reliableOrderedMbps1000"), color: ACKWIRE_COLOR },
      { label: "raw UDP", value: num(r.raw, "mbps1000"), color: "#444" },
      { label: "TCP", value: num(r.tcp, "mbps1000"), color: "#999" },
      ...peerNames.map((p, i) => ({ label: p, value: num(r.peers[p], "mbps1000"), color: PALETTE[i % PALETTE.length] })),
    ];
    const ceiling = num(r.raw, "mbps1000");
    return { label: `${rt} ${r.version ?? ""}`.trim(), bars, ...(ceiling !== null ? { baseline: { value: ceiling, label: "raw UDP ceiling" } } : {}) };
  });
  fs.writeFileSync(
    outDir + "throughput.svg",
    barChart({
      title: "Loopback throughput, 1000 B messages (payload MB/s, verified)",
      subtitle: "dashed line = that runtime's raw UDP ceiling (64 in flight, ack every 16); reliable transports: 1024 in flight, ack every 64. n/a = does not load",
      yLabel: "MB/s",
      groups,
    }),
  );

  // peers.svg: messages/s at 100 B, one group per transport, one bar per runtime (log axis).
  const transports: { label: string; get: (r: RuntimeResults) => Json | undefined }[] = [
    { label: "ackwire", get: (r) => r.ackwire ?? undefined },
    { label: "raw UDP", get: (r) => r.raw },
    { label: "TCP", get: (r) => r.tcp },
    ...peerNames.map((p) => ({ label: p, get: (r: RuntimeResults) => r.peers[p] })),
  ];
  fs.writeFileSync(
    outDir + "peers.svg",
    barChart({
      title: "Messages per second, 100 B messages (verified), by transport and runtime",
      subtitle: "log scale; ackwire: reliable-ordered, aggregated (~10 per datagram); raw UDP: one per datagram; n/a = does not load or run (reason in e2e.json)",
      yLabel: "messages/s",
      log: true,
      groups: transports.map((t) => ({
        label: t.label,
        bars: runtimes.map((rt) => ({ label: rt, value: num(t.get(results[rt] as RuntimeResults), "pps100"), color: RUNTIME_COLORS[rt] })),
      })),
    }),
  );

  // latency-cdf.svg: 100 B ping-pong round trips. Colour = transport, line style = runtime.
  const dashes: Record<RuntimeName, string | undefined> = { node: undefined, bun: "8 4", deno: "2 3" };
  const series: CdfSeries[] = [];
  for (const rt of runtimes) {
    const r = results[rt] as RuntimeResults;
    transports.forEach((t, ti) => {
      const cdf = t.get(r)?.pingCdfUs;
      if (Array.isArray(cdf) && cdf.length === 101) {
        series.push({ label: `${rt} ${t.label}`, points: cdf as number[], color: PALETTE[ti % PALETTE.length], dash: dashes[rt] });
      }
    });
  }
  fs.writeFileSync(
    outDir + "latency-cdf.svg",
    cdfChart({
      title: "Round-trip time, 100 B ping-pong over loopback",
      subtitle: "one message in flight; colour = transport; solid = node, dashed = bun, dotted = deno",
      xLabel: "round-trip time (µs, log scale)",
      logX: true,
      series,
      height: Math.max(520, 90 + series.length * 18),
    }),
  );

  // loss-latency-cdf.svg: delivery latency of the 30 Hz reliable-ordered stream through the
  // impairment proxy. Colour = loss percent, line style = runtime; the goal bound at 5% dashed.
  const lossColors: Record<string, string> = { "1": "#2ca02c", "5": "#ff7f0e", "10": "#d62728" };
  const lossSeries: CdfSeries[] = [];
  for (const rt of runtimes) {
    const levels = results[rt]?.loss as Record<string, Json> | null | undefined;
    if (levels === null || levels === undefined || "error" in levels) continue;
    for (const [pct, level] of Object.entries(levels)) {
      const cdf = (level.stream as Json | undefined)?.cdfMs;
      if (Array.isArray(cdf) && cdf.length === 101) {
        lossSeries.push({ label: `${rt} ${pct}% loss (p99 ${String(level.p99Ms)} ms)`, points: cdf as number[], color: lossColors[pct] ?? "#555", dash: dashes[rt] });
      }
      // The same stream on a default channel (no piggyback copies), at the goal's 5% only.
      const defaultCdf = (level.streamDefault as Json | undefined)?.cdfMs;
      if (pct === "5" && Array.isArray(defaultCdf) && defaultCdf.length === 101) {
        lossSeries.push({ label: `${rt} 5% loss, default channel (p99 ${String(level.defaultChannelP99Ms)} ms)`, points: defaultCdf as number[], color: "#7f7f7f", dash: dashes[rt] });
      }
    }
  }
  fs.writeFileSync(
    outDir + "loss-latency-cdf.svg",
    cdfChart({
      title: "ackwire delivery latency under loss: 30 Hz reliable-ordered stream, 50 ms RTT",
      subtitle: "8 clients x 30 Hz x 100 B through the impairment proxy, reliable-ordered with piggyback: 1 (grey: a default channel); send() to delivery; solid = node, dashed = bun, dotted = deno",
      xLabel: "delivery latency (ms, log scale); the one-way delay is 25 ms",
      logX: true,
      series: lossSeries,
      markers: [{ value: LOSS_P99_BOUND_MS, label: `goal at 5%: p99 ≤ ${LOSS_P99_BOUND_MS} ms` }],
      height: Math.max(520, 90 + lossSeries.length * 18),
    }),
  );
}
