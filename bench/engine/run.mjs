#!/usr/bin/env node
// Runs the engine benchmark (dist/bench/engine/engine.js) on Node, Bun and Deno in turn and
// writes bench/results/engine.json: {"node": {"100": {wasm, ts, ratio}, "1200": {...}}, ...}.
//
//   node bench/engine/run.mjs [--quick] [--runtimes node,bun]
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const quick = process.argv.includes("--quick");
const only = process.argv.find((a) => a.startsWith("--runtimes="))?.slice("--runtimes=".length).split(",");
const script = join("dist", "bench", "engine", "engine.js");
const extra = quick ? ["--quick"] : [];
const runtimes = {
  node: [process.execPath, script, ...extra],
  bun: [join(root, "node_modules", ".bin", "bun"), script, ...extra],
  deno: [join(root, "node_modules", ".bin", "deno"), "run", "--allow-read", "--allow-env", script, ...extra],
};

const build = spawnSync(process.execPath, ["scripts/build.mjs", "--if-needed"], { cwd: root, stdio: "inherit" });
if (build.status !== 0) console.warn("bench: build reported errors (continuing with what dist/ holds)");

const results = {};
const started = Date.now();
for (const [name, [cmd, ...args]] of Object.entries(runtimes)) {
  if (only && !only.includes(name)) continue;
  const run = spawnSync(cmd, args, { cwd: root, encoding: "utf8", timeout: 120_000 });
  if (run.status !== 0) {
    console.error(`bench: ${name} failed:\n${run.stderr}`);
    results[name] = { error: (run.stderr || "").split("\n").slice(0, 3).join(" ") };
    continue;
  }
  const { runtime, ...sizes } = JSON.parse(run.stdout.trim().split("\n").pop());
  if (runtime !== name) throw new Error(`expected ${name}, the script ran on ${runtime}`);
  results[name] = sizes;
  console.log(`${name.padEnd(5)} ${Object.entries(sizes).map(([s, r]) => `${s} B: wasm ${r.wasm} pps, ts ${r.ts} pps, wasm/ts ${r.ratio}`).join(" | ")}`);
}
mkdirSync(join(root, "bench", "results"), { recursive: true });
writeFileSync(join(root, "bench", "results", "engine.json"), JSON.stringify(results, null, 2) + "\n");
console.log(`bench: wrote bench/results/engine.json in ${((Date.now() - started) / 1000).toFixed(1)} s`);
