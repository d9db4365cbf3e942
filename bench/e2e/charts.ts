// Turns e2e results into the three SVG charts written next to e2e.json.

import type { FsModule, RuntimeName } from "../lib/host.js";
import { barChart, cdfChart, PALETTE, type Bar, type BarGroup, type CdfSeries } from "../lib/svg.js";
import type { RuntimeResults } from "./run.js";

type Json = Record<string, unknown>;

function num(r: Json | undefined, key: string): number | null {
  if (r === undefined || "error" in r) return null;
  const v = r[key];
  return typeof v === "number" && v > 0 ? v : null;
}

const RUNTIME_COLORS: Record<RuntimeName, string> = { node: "#3c873a", bun: "#c98b3b", deno: "#1f4e8c" };

export function writeCharts(fs: FsModule, outDir: string, results: Partial<Record<RuntimeName, RuntimeResults>>): void {
  const runtimes = Object.keys(results) as RuntimeName[];
  const peerNames = Array.from(new Set(runtimes.flatMap((rt) => Object.keys(results[rt]?.peers ?? {}))));

  // throughput.svg: per runtime, MB/s at 1000 B, raw ceiling as the baseline marker.
  // HOOK(ackwire): add an "ackwire reliable" and "ackwire unreliable" bar per runtime.
  const groups: BarGroup[] = runtimes.map((rt) => {
    const r = results[rt] as RuntimeResults;
    const bars: Bar[] = [
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
      subtitle: "raw UDP: 64 in flight, ack every 16; reliable transports: app-level window (see bench/README.md). n/a = does not load on that runtime",
      yLabel: "MB/s",
      groups,
    }),
  );

  // peers.svg: messages/s at 100 B, one group per transport, one bar per runtime (log axis).
  const transports: { label: string; get: (r: RuntimeResults) => Json | undefined }[] = [
    { label: "raw UDP", get: (r) => r.raw },
    { label: "TCP", get: (r) => r.tcp },
    ...peerNames.map((p) => ({ label: p, get: (r: RuntimeResults) => r.peers[p] })),
  ];
  fs.writeFileSync(
    outDir + "peers.svg",
    barChart({
      title: "Messages per second, 100 B messages (verified), by transport and runtime",
      subtitle: "log scale; n/a = the package does not load or run on that runtime (reason in e2e.json)",
      yLabel: "messages/s",
      log: true,
      groups: transports.map((t) => ({
        label: t.label,
        bars: runtimes.map((rt) => ({ label: rt, value: num(t.get(results[rt] as RuntimeResults), "pps100"), color: RUNTIME_COLORS[rt] })),
      })),
    }),
  );

  // latency-cdf.svg: 100 B ping-pong round trips.
  // HOOK(ackwire): add delivery-latency-under-loss series from the "loss" group.
  // Colour = transport, line style = runtime.
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
}
