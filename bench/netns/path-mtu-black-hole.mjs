#!/usr/bin/env node
// A path MTU black hole below the base over a real kernel path: the longer version of
// test/interop/path-mtu-black-hole.test.ts. Two network namespaces (bench/lib/netns.mjs) whose
// nftables input drops every UDP datagram over 1100 bytes of payload, silently (no ICMP, link
// MTU 1500). A Node server answers each message in order (test/interop/fixtures/
// black-hole-peer.mjs); a client per runtime sends `count` messages of 3000 B on a reliable-
// ordered channel, one every 66 ms. Per run: when the client's "pathMtu" event said it fell
// below the base (ms after the first send), how many messages were answered within 20 s of the
// first send, when the last was, and the size in use at the end. The baseline is a Node client
// with discovery off (`maxMtu: 1200`, no fallback). Needs root, iproute2, nft and a build.
//
//   node bench/netns/path-mtu-black-hole.mjs [--count=300] [--runtimes=node,bun,deno] [--out=bench/results/path-mtu-netns.json]
import { writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { netnsUnsupported, TwoHosts } from "../lib/netns.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const fixture = join(root, "test", "interop", "fixtures", "black-hole-peer.mjs");
const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const count = Number(arg("count", "300"));
const runtimes = arg("runtimes", "node,bun,deno").split(",");
const outFile = arg("out", "");
const LIMIT = 1100;
const EVERY_MS = 66;
const WINDOW_MS = 20_000;

const skip = netnsUnsupported();
if (skip !== undefined) {
  console.log(JSON.stringify({ skipped: skip }));
  process.exit(0);
}

const bin = (name) => join(root, "node_modules", ".bin", name);
const commands = {
  node: [process.execPath, fixture],
  bun: [bin("bun"), fixture],
  deno: [bin("deno"), "run", "--unstable-net", "--allow-net", "--allow-read", "--allow-env", fixture],
};

/** Runs the fixture in `ns`; calls onLine per JSON line; resolves when it exits (killed after `limitMs`). */
function runIn(ns, runtime, args, limitMs, onLine = () => undefined) {
  return new Promise((resolve) => {
    const child = spawn("ip", ["netns", "exec", ns, ...commands[runtime], ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let buffer = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), limitMs);
    child.stdout.on("data", (c) => {
      buffer += c.toString("utf8");
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line.startsWith("{")) onLine(JSON.parse(line));
      }
    });
    child.on("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    resolve.child = child;
  });
}

const hosts = new TwoHosts("bhb", 96);
const results = [];
let server;
try {
  hosts.dropUdpLargerThan(LIMIT);
  let port = 0;
  const listening = new Promise((resolve) => {
    server = spawn("ip", ["netns", "exec", hosts.server, ...commands.node, "server", JSON.stringify({ deadlineMs: 600_000 })], { stdio: ["ignore", "pipe", "inherit"] });
    server.stdout.on("data", (c) => {
      const m = /"listening":(\d+)/.exec(c.toString("utf8"));
      if (m) resolve(Number(m[1]));
    });
  });
  port = await listening;
  const plans = [...runtimes.map((runtime) => ({ runtime, baseline: false })), { runtime: "node", baseline: true }];
  for (const { runtime, baseline } of plans) {
    const drops = hosts.blackHoleDrops(hosts.server) + hosts.blackHoleDrops(hosts.client);
    const options = { target: `${hosts.serverIp}:${port}`, count, size: 3000, everyMs: EVERY_MS, waitMs: Math.max(1000, WINDOW_MS - count * EVERY_MS), deadlineMs: 120_000 };
    if (baseline) options.maxMtu = 1200;
    let result;
    await runIn(hosts.client, runtime, ["client", JSON.stringify(options)], 120_000, (line) => { if ("ok" in line) result = line; });
    const below = result?.events?.find((e) => e.belowBase);
    const row = {
      runtime,
      baseline,
      sent: result?.sent,
      answeredInWindow: result?.answered,
      detectMs: below?.atMs ?? null,
      allMs: result?.allMs ?? null,
      pathMtu: result?.pathMtu ?? null,
      disconnect: result?.disconnect,
      blackHoleDrops: hosts.blackHoleDrops(hosts.server) + hosts.blackHoleDrops(hosts.client) - drops,
    };
    console.log(JSON.stringify(row));
    results.push(row);
  }
} finally {
  server?.kill("SIGKILL");
  hosts.close();
}
const runs = results.filter((r) => !r.baseline);
const summary = {
  date: new Date().toISOString(),
  command: `node bench/netns/path-mtu-black-hole.mjs --count=${count} --runtimes=${runtimes.join(",")}`,
  setup: { dropsUdpOverBytes: LIMIT, messages: count, messageBytes: 3000, everyMs: EVERY_MS, windowMs: WINDOW_MS },
  answeredInWindowMin: Math.min(...runs.map((r) => r.answeredInWindow ?? 0)),
  detectMsMax: Math.max(...runs.map((r) => r.detectMs ?? Infinity)),
  pathMtuMax: Math.max(...runs.map((r) => r.pathMtu ?? Infinity)),
  baselineAnswered: results.find((r) => r.baseline)?.answeredInWindow ?? null,
  runs: results,
};
console.log(JSON.stringify({ ...summary, runs: undefined }));
if (outFile !== "") writeFileSync(outFile, JSON.stringify(summary, null, 2) + "\n");
