/**
 * The browser benchmark: one chromium page and one Node server in one run, ackwire over a
 * WebRTC data channel against a plain WebSocket (ws), both on 127.0.0.1.
 *
 *   node scripts/build.mjs --if-needed && node dist/bench/browser/run.js [--quick]
 *
 * Measures, per transport: the round trip of 100 B messages (p50, p99; one every 5 ms), echoed
 * 100 B messages per second, and with 5% loss each way the p99 round trip of a 30 Hz stream of
 * 100 B reliable messages. Loss: for ackwire, the server drops 5% of the datagrams it sends
 * (drop test) and ignores 5% of those it receives; for the WebSocket, an nftables rule drops 5%
 * of its TCP segments each way on loopback (needs nft and root; skipped with a reason
 * otherwise). Writes bench/results/browser.json.
 *
 * The server's WebRTC library: werift (the package's), and @roamhq/wrtc too when the bench
 * package has it (npm --prefix bench install; an optional dependency): the same carrier over
 * either (wrtc-library.ts), the same page, one after the other. `--library werift|wrtc` runs one.
 */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { WebSocketServer } from "ws";
import { Endpoint, listen, type Server } from "../../src/index.js";
import { servePage } from "../../demo/page-server.js";
import { BENCH_PAGE } from "./page.js";
import { useCarrierModule, type CarrierModule } from "../../src/api/webrtc-listen.js";
import { openCarrierOver, openWebRtcCarrier } from "../../runtimes/webrtc/server.js";
import { loadWrtc } from "./wrtc-library.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PROTOCOL_ID = 0xbe7c4;
const quick = process.argv.includes("--quick");
const RTT_COUNT = quick ? 400 : 2000;
const THROUGHPUT_MS = quick ? 2000 : 5000;
const STREAM_MS = quick ? 10_000 : 30_000;
const LOSS = 0.05;
const only = process.argv.includes("--library") ? process.argv[process.argv.indexOf("--library") + 1] : undefined;

type Library = "werift" | "wrtc";

/** The carrier modules to measure: werift, and wrtc if it loads (else the reason it does not). */
async function libraries(): Promise<{ use: Map<Library, CarrierModule>; skipped: Record<string, string> }> {
  const use = new Map<Library, CarrierModule>();
  const skipped: Record<string, string> = {};
  if (only === undefined || only === "werift") use.set("werift", { openWebRtcCarrier });
  if (only === undefined || only === "wrtc") {
    try {
      const wrtc = await loadWrtc();
      use.set("wrtc", { openWebRtcCarrier: (options, hooks) => openCarrierOver(wrtc, options, hooks) });
    } catch (error) {
      skipped.wrtc = `@roamhq/wrtc did not load (npm --prefix bench install): ${(error as Error).message.split("\n")[0]}`;
    }
  }
  return { use, skipped };
}

/** a / b, to 3 digits (null if either is missing). */
function ratio(a: unknown, b: unknown): number | null {
  return typeof a === "number" && typeof b === "number" && b > 0 ? Math.round((a / b) * 1000) / 1000 : null;
}

/** A deterministic generator for the incoming-loss Endpoint. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

async function ackwireServer(origin: string, loss: number): Promise<Server> {
  const random = rng(11);
  class LossyEndpoint extends Endpoint {
    override handleDatagram(now: number, from: string, bytes: Uint8Array): void {
      if (loss > 0 && random() < loss) return;
      super.handleDatagram(now, from, bytes);
    }
  }
  const server = await listen({
    protocolId: PROTOCOL_ID, host: "127.0.0.1", port: 0, seed: 5, dropTest: loss,
    ...(loss > 0 ? { createEndpoint: (config) => new LossyEndpoint(config) } : {}),
    webrtc: { port: 0, allowOrigins: [origin], offersPerSecond: 100 },
  });
  server.on("connection", (c) => c.on("message", (m) => void c.send(m.data, { channel: m.channel })));
  return server;
}

async function wsServer(): Promise<{ url: string; port: number; close: () => Promise<void> }> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  wss.on("connection", (socket) => {
    socket.on("message", (data, isBinary) => socket.send(data, { binary: isBinary }));
  });
  const { port } = wss.address() as { port: number };
  return { url: `ws://127.0.0.1:${port}`, port, close: () => new Promise((r) => wss.close(() => r())) };
}

/** 5% of the WebSocket's TCP segments dropped each way on loopback, by nftables; undefined if it cannot. */
function tcpLoss(port: number): { remove: () => void } | string {
  const nft = (args: string[], input?: string): boolean => spawnSync("nft", args, { input, encoding: "utf8", timeout: 10_000 }).status === 0;
  const table = `ackwire_bench_${process.pid}`;
  const percent = Math.round(LOSS * 100);
  const rules = `table inet ${table} {\n chain input {\n  type filter hook input priority 0;\n  iif "lo" tcp dport ${port} numgen random mod 100 < ${percent} drop\n  iif "lo" tcp sport ${port} numgen random mod 100 < ${percent} drop\n }\n}\n`;
  if (!nft(["-f", "-"], rules)) return "nft could not add the loss rule (needs nftables and root)";
  return { remove: () => void nft(["delete", "table", "inet", table]) };
}

async function main(): Promise<void> {
  const site = await servePage(BENCH_PAGE);
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--disable-features=WebRtcHideLocalIpsWithMdns"] });
  const results: Record<string, unknown> = {};
  try {
    const page = await browser.newPage();
    page.on("pageerror", (e) => console.error("page error:", e));
    await page.goto(site.origin + "/");
    await page.waitForFunction(() => (globalThis as { bench?: unknown }).bench !== undefined, undefined, { timeout: 20_000 });
    const run = (fn: string, kind: string, target: object, ...args: number[]): Promise<Record<string, unknown>> =>
      page.evaluate(({ fn, kind, target, args }) => (globalThis as any).bench[fn](kind, target, ...args), { fn, kind, target, args }) as Promise<Record<string, unknown>>;

    const { use, skipped } = await libraries();
    const ws = await wsServer();
    const key = (library: Library): string => (library === "werift" ? "ackwire" : "ackwireWrtc");
    const rtt100: Record<string, unknown> = {};
    const throughput100: Record<string, unknown> = {};
    const stream: Record<string, unknown> = {};
    const carriers: Record<string, unknown> = {};
    try {
      for (const [library, module] of use) {
        useCarrierModule(async () => module);
        const clean = await ackwireServer(site.origin, 0);
        try {
          const target = { url: clean.webrtc!.url, protocolId: PROTOCOL_ID, channel: 0 };
          rtt100[key(library)] = await run("rtt", "ackwire", target, RTT_COUNT, 5);
          throughput100[key(library)] = await run("throughput", "ackwire", target, THROUGHPUT_MS);
          carriers[library] = clean.webrtc!.counters();
        } finally {
          await clean.close();
        }
        console.log(library, JSON.stringify({ rtt100: rtt100[key(library)], throughput100: throughput100[key(library)] }));
      }
      rtt100.websocket = await run("rtt", "websocket", { url: ws.url }, RTT_COUNT, 5);
      throughput100.websocket = await run("throughput", "websocket", { url: ws.url }, THROUGHPUT_MS);
      results.rtt100 = rtt100;
      console.log("rtt100", JSON.stringify(rtt100));
      results.throughput100 = throughput100;
      console.log("throughput100", JSON.stringify(throughput100));
      results.serverCarrier = carriers;
      for (const [library, module] of use) {
        useCarrierModule(async () => module);
        const lossy = await ackwireServer(site.origin, LOSS);
        try {
          stream[key(library)] = await run("stream", "ackwire", { url: lossy.webrtc!.url, protocolId: PROTOCOL_ID, channel: 0 }, STREAM_MS);
          stream[`${key(library)}Server`] = { dropTested: (lossy.counters() as { dropTested?: number }).dropTested, carrier: lossy.webrtc!.counters() };
        } finally {
          await lossy.close();
        }
      }
      const rule = tcpLoss(ws.port);
      if (typeof rule === "string") stream.websocket = { skipped: rule };
      else {
        try {
          stream.websocket = await run("stream", "websocket", { url: ws.url }, STREAM_MS);
        } finally {
          rule.remove();
        }
      }
      results.stream30HzLoss5 = stream;
      console.log("stream30HzLoss5", JSON.stringify(stream));
      if (Object.keys(skipped).length > 0) results.skipped = skipped;
      const p = (o: unknown, k: string): unknown => (o as Record<string, unknown> | undefined)?.[k];
      // The figures bench/RESULTS.md shows, as ratios of two transports measured in this run.
      const vsWebSocket = (k: string): Record<string, number | null> => ({
        rttP50VsWebSocket: ratio(p(rtt100[k], "p50Ms"), p(rtt100.websocket, "p50Ms")),
        rttP99VsWebSocket: ratio(p(rtt100[k], "p99Ms"), p(rtt100.websocket, "p99Ms")),
        msgsVsWebSocket: ratio(p(throughput100[k], "msgsPerSecond"), p(throughput100.websocket, "msgsPerSecond")),
        lossP99VsWebSocket: ratio(p(stream[k], "p99Ms"), p(stream.websocket, "p99Ms")),
      });
      results.ratios = {
        werift: vsWebSocket("ackwire"),
        wrtc: vsWebSocket("ackwireWrtc"),
        wrtcVsWerift: {
          rttP50: ratio(p(rtt100.ackwireWrtc, "p50Ms"), p(rtt100.ackwire, "p50Ms")),
          rttP99: ratio(p(rtt100.ackwireWrtc, "p99Ms"), p(rtt100.ackwire, "p99Ms")),
          msgs: ratio(p(throughput100.ackwireWrtc, "msgsPerSecond"), p(throughput100.ackwire, "msgsPerSecond")),
          lossP99: ratio(p(stream.ackwireWrtc, "p99Ms"), p(stream.ackwire, "p99Ms")),
        },
      };
      console.log("ratios", JSON.stringify(results.ratios));
    } finally {
      await ws.close();
    }
  } finally {
    await browser.close();
    await site.close();
  }
  const out = {
    command: `node dist/bench/browser/run.js${process.argv.slice(2).length > 0 ? " " + process.argv.slice(2).join(" ") : ""}`,
    date: new Date().toISOString(),
    chromium: "/usr/bin/chromium (Debian), playwright-core; server on Node " + process.version + ": ackwire* over werift, ackwireWrtc* over @roamhq/wrtc",
    loss: "ackwire: server drop test 5% out + 5% of arrivals ignored; websocket: nft drops 5% of TCP segments each way on lo",
    loadAverage: loadavg().map((x) => Math.round(x * 10) / 10),
    rttIntervalMs: 5,
    rttCount: RTT_COUNT,
    throughputMs: THROUGHPUT_MS,
    streamMs: STREAM_MS,
    ...results,
  };
  if (!quick && only === undefined) writeFileSync(join(ROOT, "bench", "results", "browser.json"), JSON.stringify(out, null, 2) + "\n");
  console.log(JSON.stringify(out, null, 2));
  process.exit(0);
}

// The whole run is bounded: whatever the browser or a server does, the process ends.
setTimeout(() => {
  console.error("browser bench: hard deadline passed");
  process.exit(1);
}, 10 * 60_000).unref();
void main().catch((error) => {
  console.error(error);
  process.exit(1);
});
