#!/usr/bin/env node
// A game's traffic over a real bottleneck: ackwire against TCP, in the same run.
//
// Two network namespaces joined by a veth pair, the kernel's token bucket filter as the link
// in each direction (bench/lib/netns.mjs): `rate` Mbit/s with a 250 KB tail-drop queue in front
// (~100 ms at 20 Mbit/s, ~2 s at 1). On one side a client runs an upload of 1000 B messages
// (at most 2 s of the link, 256..4096 messages, not yet acknowledged by the server's
// application, which answers every 64 with their count) and a 30 Hz stream of 64 B messages at once, which the server echoes. The
// stream's round trip is what a player feels while a transfer shares the link.
// - ackwire: one connection, the upload on channel 6 and the stream on channel 0 (both
//   reliable-ordered): test/interop/fixtures/peer.mjs "mixed", client on each runtime asked for;
// - TCP (node:net, no delay): the bulk and the stream on two connections, so the stream never
//   waits behind bulk bytes in one byte stream; only the shared queue is measured
//   (test/interop/fixtures/tcp-mixed.mjs), Node.
// Needs root and iproute2. Writes bench/results/netns.json.
//
//   node bench/netns/run.mjs [--quick] [--runtimes=node,bun,deno] [--rates=20,5,2,1]
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { netnsUnsupported, TwoHosts } from "../lib/netns.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const fixtures = join(root, "test", "interop", "fixtures");
const quick = process.argv.includes("--quick");
const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3).split(",") ?? fallback;
const runtimes = arg("runtimes", ["node", "bun", "deno"]);
const rates = arg("rates", ["20", "5", "2", "1"]).map(Number);
const durationMs = quick ? 3000 : 6000;
const QUEUE_BYTES = 250_000;
/** The upload's application window: 2 s of the link (256..4096 messages of 1000 B). */
const windowFor = (rateMbit) => Math.min(4096, Math.max(256, Math.round((rateMbit * 1e6 * 2) / 8 / 1000)));
/** What is still queued when a run ends (up to the window) drains at the link rate: ms. */
const drainMs = (rateMbit) => ((windowFor(rateMbit) * 1000 * 8) / (rateMbit * 1e6)) * 1000;

const bin = (name) => join(root, "node_modules", ".bin", name);
const commands = {
  node: (script) => [process.execPath, script],
  bun: (script) => [bin("bun"), script],
  deno: (script) => [bin("deno"), "run", "--unstable-net", "--allow-net", "--allow-read", "--allow-env", script],
};

/** Runs `argv` in namespace `ns`; resolves with the first JSON line having `key` (the process keeps running). */
function startIn(ns, argv, key, limitMs) {
  const child = spawn("ip", ["netns", "exec", ns, ...argv], { cwd: fixtures, stdio: ["ignore", "pipe", "pipe"] });
  const kill = setTimeout(() => child.kill("SIGKILL"), limitMs);
  child.on("exit", () => clearTimeout(kill));
  let buffer = "";
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const line = new Promise((resolve, reject) => {
    child.stdout.on("data", (d) => {
      buffer += d;
      const lines = buffer.split("\n");
      buffer = lines.pop(); // an unfinished last line waits for the rest
      for (const l of lines) {
        if (!l.startsWith("{")) continue;
        const parsed = JSON.parse(l);
        if (key in parsed) resolve(parsed);
      }
    });
    child.on("exit", (code) => reject(new Error(`${argv.join(" ")} exited (${code}) before "${key}": ${stderr.slice(-500)}`)));
  });
  return { child, line };
}

const skip = netnsUnsupported();
if (skip !== undefined) {
  console.error(`bench/netns: ${skip}`);
  process.exit(1);
}
const hosts = new TwoHosts("bench", 96);
const results = { queueBytes: QUEUE_BYTES, durationMs, rates: {} };
const servers = [];
try {
  const limit = durationMs + 60_000 + 1.5 * Math.max(...rates.map(drainMs));
  const ackwireServer = startIn(hosts.server, [...commands.node("peer.mjs"), "server", JSON.stringify({ host: hosts.serverIp, sinkChannel: 6, deadlineMs: 30 * 60_000 })], "listening", 30 * 60_000);
  const tcpServer = startIn(hosts.server, [...commands.node("tcp-mixed.mjs"), "server", JSON.stringify({ host: hosts.serverIp, deadlineMs: 30 * 60_000 })], "listening", 30 * 60_000);
  servers.push(ackwireServer.child, tcpServer.child);
  const ackwirePort = (await ackwireServer.line).listening;
  const tcpPort = (await tcpServer.line).listening;
  for (const rate of rates) {
    hosts.shape({ rateMbit: rate, queueBytes: QUEUE_BYTES });
    const plan = { bulkWindow: windowFor(rate), warmupMs: 1000, durationMs, waitMs: Math.max(15_000, 1.5 * drainMs(rate)) };
    const row = {};
    for (const runtime of runtimes) {
      const run = startIn(hosts.client, [...commands[runtime]("peer.mjs"), "mixed", JSON.stringify({ target: `${hosts.serverIp}:${ackwirePort}`, ...plan })], "ok", limit);
      row[`ackwire-${runtime}`] = await run.line;
    }
    const tcp = startIn(hosts.client, [...commands.node("tcp-mixed.mjs"), "client", JSON.stringify({ target: `${hosts.serverIp}:${tcpPort}`, ...plan })], "ok", limit);
    row["tcp-node"] = await tcp.line;
    results.rates[rate] = row;
    console.log(`\n${rate} Mbit/s each way, ${QUEUE_BYTES / 1000} KB queue (~${Math.round((QUEUE_BYTES * 8) / (rate * 1000))} ms):`);
    console.log("transport       ok    upload Mbit/s   stream RTT p50 / p99 / max ms   resends");
    for (const [name, r] of Object.entries(row)) {
      const s = r.stream ?? {};
      console.log(`${name.padEnd(15)} ${String(r.ok).padEnd(5)} ${String(r.bulk?.mbitPerSec).padStart(13)}   ${`${s.rttP50Ms} / ${s.rttP99Ms} / ${s.rttMaxMs}`.padStart(29)}   ${r.stats?.resends ?? "-"}`);
    }
  }
} finally {
  for (const child of servers) child.kill("SIGKILL");
  hosts.close();
}
mkdirSync(join(root, "bench", "results"), { recursive: true });
writeFileSync(join(root, "bench", "results", "netns.json"), JSON.stringify(results, null, 2) + "\n");
console.log("\nwrote bench/results/netns.json");
