#!/usr/bin/env node
// The engine's CRC-32C kernel (assembly/crc32c.ts: SIMD fold, then slicing-by-16) against
// slicing-by-16 alone (assembly/bench/crc32c-slicing16.ts), both compiled into one module
// (assembly/bench/crc32c-kernels.ts) with the engine's release flags and measured in this one
// process, interleaved: per round, each size, each kernel in turn, so a drift of the machine's
// speed hits both. Sizes: a 13 B pure ack, a 122 B game packet, a 1000 B message's 1020 B
// datagram. Two figures per kernel and size, in ns per CRC:
//   wasm  a loop inside WebAssembly (as the engine calls it), inputs at all 16 alignments
//   call  one JS -> WebAssembly call per CRC (as engine.crc32c() is called)
// Prints min and median over the rounds and the per-round ratio slicing/engine (min, median).
// With --aead, also the secure layer's ChaCha20-Poly1305 (src/secure/wasm-aead.ts, from dist/:
// build first) sealing and opening a 1020 B datagram with its 13 bytes of associated data, in
// the same rounds: what the CRC costs next to the envelope that also authenticates the datagram.
//
//   node bench/engine/crc-kernels.mjs [--rounds=31] [--calls=20000] [--aead]
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const option = (name, fallback) => {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  const value = arg ? Number(arg.slice(name.length + 3)) : fallback;
  if (!Number.isInteger(value) || value < 1 || value > 1_000_000) throw new Error(`--${name}: a whole number 1..1000000`);
  return value;
};
const rounds = option("rounds", 31);
const calls = option("calls", 20_000);
const withAead = process.argv.includes("--aead");

const wasmPath = join(root, "build", "crc32c-kernels.wasm");
mkdirSync(join(root, "build"), { recursive: true });
// The release target's flags (asconfig.json), with an exported memory of its own; run from
// assembly/bench/ so that asc does not pick up the engine's asconfig.json and its entries.
const asc = spawnSync(
  process.execPath,
  [join(root, "node_modules", "assemblyscript", "bin", "asc.js"), "crc32c-kernels.ts", "-o", wasmPath,
    "-O3", "--converge", "--noAssert", "--runtime", "stub", "--enable", "simd", "--use", "abort=", "--initialMemory", "2"],
  { cwd: join(root, "assembly", "bench"), stdio: "inherit" },
);
if (asc.status !== 0) throw new Error(`asc failed (exit ${asc.status})`);
const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), {});
const k = instance.exports;
k.init();
const bytes = new Uint8Array(k.memory.buffer);
const at = 65536 + 4096; // past the module's static data (tables and scratch)

// The two kernels must agree before their times mean anything.
for (let n = 0; n <= 1600; n++) {
  for (let i = 0; i < n + 16; i++) bytes[at + i] = (i * 131 + n * 7) & 0xff;
  const state = (n * 0x9e3779b1) >>> 0;
  if (k.engineCrc(state, at + (n & 15), n) !== k.slicingCrc(state, at + (n & 15), n)) throw new Error(`kernels differ at ${n} B`);
}
for (let i = 0; i < 1100; i++) bytes[at + i] = (i * 7) & 0xff;

const sizes = [13, 122, 1020];
const kernels = {
  engine: { loop: k.engineLoop, one: k.engineCrc },
  slicing: { loop: k.slicingLoop, one: k.slicingCrc },
};
let aead;
if (withAead) {
  const { wasmAead } = await import(join(root, "dist", "src", "secure", "wasm-aead.js"));
  const key = Uint8Array.from({ length: 32 }, (_, i) => (i * 29 + 7) & 0xff);
  const ad = Uint8Array.from({ length: 13 }, (_, i) => i);
  const plaintext = Uint8Array.from({ length: 1020 }, (_, i) => (i * 7) & 0xff);
  const sealed = new Uint8Array(1020 + 16);
  const opened = new Uint8Array(1020);
  wasmAead.seal(key, 5, ad, plaintext, sealed, 0);
  let pn = 1000;
  // Fewer calls: one seal or open costs several CRCs.
  aead = {
    seal: (n) => { let x = 0; for (let i = 0; i < n; i++) x ^= wasmAead.seal(key, pn++, ad, plaintext, sealed, 0); return x; },
    open: (n) => { let x = 0; for (let i = 0; i < n; i++) x ^= wasmAead.open(key, 5, ad, sealed, opened); return x; },
  };
  if (aead.open(1) !== 1020) throw new Error("wasmAead.open failed on its own sealed datagram");
}
const samples = {}; // "size kernel figure" -> ns per CRC, one per round
const push = (key, ns) => (samples[key] ??= []).push(ns);
let sink = 0;
for (let round = 0; round <= rounds; round++) {
  for (const size of sizes) {
    for (const [name, kernel] of Object.entries(kernels)) {
      let t0 = performance.now();
      sink ^= kernel.loop(at, size, calls);
      const wasm = ((performance.now() - t0) * 1e6) / calls;
      t0 = performance.now();
      for (let i = 0; i < calls; i++) sink ^= kernel.one(0xffffffff, at + (i & 15), size);
      const call = ((performance.now() - t0) * 1e6) / calls;
      if (round === 0) continue; // warm-up
      push(`${size} ${name} wasm`, wasm);
      push(`${size} ${name} call`, call);
    }
  }
  if (aead) {
    const n = Math.max(1, calls >> 3);
    for (const op of ["seal", "open"]) {
      const t0 = performance.now();
      sink ^= aead[op](n);
      if (round > 0) push(`aead ${op}`, ((performance.now() - t0) * 1e6) / n);
    }
  }
}

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => sorted(xs)[xs.length >> 1];
const result = { rounds, calls, sink: sink & 1 };
for (const size of sizes) {
  for (const figure of ["wasm", "call"]) {
    const engine = samples[`${size} engine ${figure}`];
    const slicing = samples[`${size} slicing ${figure}`];
    const ratios = engine.map((e, i) => slicing[i] / e);
    result[`${size} ${figure}`] = {
      engineNs: { min: +sorted(engine)[0].toFixed(1), median: +median(engine).toFixed(1) },
      slicingNs: { min: +sorted(slicing)[0].toFixed(1), median: +median(slicing).toFixed(1) },
      slicingOverEngine: { min: +sorted(ratios)[0].toFixed(2), median: +median(ratios).toFixed(2) },
    };
  }
}
if (aead) {
  for (const op of ["seal", "open"]) {
    const ns = samples[`aead ${op}`];
    result[`aead ${op} 1020`] = { ns: { min: +sorted(ns)[0].toFixed(1), median: +median(ns).toFixed(1) } };
  }
}
for (const [key, r] of Object.entries(result)) {
  if (key.startsWith("aead")) {
    console.log(`${key.padEnd(14)} ${r.ns.min}/${r.ns.median} ns   [min/median]`);
    continue;
  }
  if (typeof r !== "object") continue;
  console.log(
    `${key.padEnd(9)} engine ${r.engineNs.min}/${r.engineNs.median} ns  slicing ${r.slicingNs.min}/${r.slicingNs.median} ns` +
      `  slicing/engine ${r.slicingOverEngine.median} (min ${r.slicingOverEngine.min})   [min/median]`,
  );
}
console.log(JSON.stringify(result));
