/**
 * ChaCha20-Poly1305 per packet: wasmAead (src/secure/wasm-aead.ts, the WebAssembly module of
 * assembly/aead/) against nobleAead (@noble/ciphers), seal and open of 100 B and 1200 B payloads
 * with 16 bytes of associated data, in the same process. Each measurement is the median of
 * several timed rounds (implementations interleaved round by round); every loop is bounded.
 * Prints one JSON line: {"runtime", "version", "unit": "us/call",
 * "100": {"seal": {wasm, noble, ratio}, "open": {...}}, "1200": {...}} with ratio = noble / wasm.
 *
 *   node dist/bench/secure/aead.js [--quick]
 *   npx bun dist/bench/secure/aead.js
 *   npx deno run -A dist/bench/secure/aead.js
 */
import { TAG_BYTES, type PacketAead } from "../../src/secure/aead.js";
import { nobleAead } from "../../src/secure/noble-aead.js";
import { wasmAead } from "../../src/secure/wasm-aead.js";
import { g, nowMs, runtimeName, runtimeVersion, scriptArgs } from "../lib/host.js";
import { median, round } from "../lib/stats.js";

const quick = scriptArgs().includes("--quick");
const ROUNDS = quick ? 3 : 9;
const WARMUP_ROUNDS = quick ? 1 : 3;
/** Time one round should take, so the clock's resolution does not matter. */
const ROUND_MS = quick ? 10 : 40;
const MAX_CALLS_PER_ROUND = 1 << 22;
const SIZES = [100, 1200] as const;
/** Measured in this order; `measure` returns the times in the same order. */
const IMPLS: PacketAead[] = [wasmAead, nobleAead];

const key = Uint8Array.from({ length: 32 }, (_, i) => (i * 29 + 7) & 0xff);
const ad = Uint8Array.from({ length: 16 }, (_, i) => i);

/** Accumulates results so no runtime can treat the calls as dead code. */
let sink = 0;

interface Case {
  /** Makes `calls` calls; returns nothing, accumulates into `sink`. */
  run(calls: number): void;
}

function sealCase(aead: PacketAead, size: number): Case {
  const plaintext = Uint8Array.from({ length: size }, (_, i) => i & 0xff);
  const out = new Uint8Array(size + TAG_BYTES);
  let pn = 1000;
  return {
    run(calls) {
      for (let i = 0; i < calls; i++) sink += aead.seal(key, pn++, ad, plaintext, out, 0) + out[i & 15];
    },
  };
}

function openCase(aead: PacketAead, size: number): Case {
  const plaintext = Uint8Array.from({ length: size }, (_, i) => i & 0xff);
  const sealed = new Uint8Array(size + TAG_BYTES);
  nobleAead.seal(key, 77, ad, plaintext, sealed, 0);
  const out = new Uint8Array(size);
  return {
    run(calls) {
      for (let i = 0; i < calls; i++) sink += aead.open(key, 77, ad, sealed, out) + out[i & 15];
    },
  };
}

/** Calls per round so that a round of `c` takes about ROUND_MS (doubling, bounded). */
function calibrate(c: Case): number {
  for (let calls = 16; calls < MAX_CALLS_PER_ROUND; calls *= 2) {
    const t0 = nowMs();
    c.run(calls);
    const ms = nowMs() - t0;
    if (ms >= ROUND_MS / 4) return Math.min(MAX_CALLS_PER_ROUND, Math.ceil((calls * ROUND_MS) / ms));
  }
  return MAX_CALLS_PER_ROUND;
}

/**
 * Median microseconds per call of each case, rounds interleaved across the cases. The first
 * WARMUP_ROUNDS rounds are not counted: they let the JIT finish optimising (without them noble's
 * first case measured alternates between two speeds from run to run).
 */
function measure(cases: Case[]): number[] {
  const calls = cases.map(calibrate);
  const samples: number[][] = cases.map(() => []);
  for (let r = -WARMUP_ROUNDS; r < ROUNDS; r++) {
    for (let k = 0; k < cases.length; k++) {
      const t0 = nowMs();
      cases[k].run(calls[k]);
      if (r >= 0) samples[k].push(((nowMs() - t0) * 1000) / calls[k]);
    }
  }
  return samples.map(median);
}

/** Both implementations must produce the same bytes before their speed means anything. */
function checkAgreement(): void {
  for (const size of SIZES) {
    const plaintext = Uint8Array.from({ length: size }, (_, i) => (i * 7) & 0xff);
    const a = new Uint8Array(size + TAG_BYTES);
    const b = new Uint8Array(size + TAG_BYTES);
    wasmAead.seal(key, 123_456_789_012, ad, plaintext, a, 0);
    nobleAead.seal(key, 123_456_789_012, ad, plaintext, b, 0);
    const back = new Uint8Array(size);
    const opened = wasmAead.open(key, 123_456_789_012, ad, b, back);
    if (!a.every((x, i) => x === b[i]) || opened !== size || !back.every((x, i) => x === plaintext[i])) {
      g.console.error(`bench/secure/aead: wasmAead and nobleAead disagree at ${size} bytes`);
      throw new Error("implementations disagree");
    }
  }
}

function main(): void {
  checkAgreement();
  const result: Record<string, unknown> = {
    bench: "secure/aead",
    runtime: runtimeName(),
    version: runtimeVersion(),
    unit: "us/call",
    adBytes: ad.length,
  };
  for (const size of SIZES) {
    const entry: Record<string, { wasm: number; noble: number; ratio: number }> = {};
    for (const [op, make] of [
      ["seal", sealCase],
      ["open", openCase],
    ] as const) {
      const [wasmUs, nobleUs] = measure(IMPLS.map((aead) => make(aead, size)));
      entry[op] = { wasm: round(wasmUs, 3), noble: round(nobleUs, 3), ratio: round(nobleUs / wasmUs, 1) };
    }
    result[String(size)] = entry;
  }
  g.console.log(JSON.stringify(result));
}

main();
