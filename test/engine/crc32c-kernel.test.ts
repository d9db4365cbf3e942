// The CRC-32C kernel (assembly/crc32c.ts: a SIMD fold for inputs of 240 B and more, slicing-by-16
// for the rest) against a bitwise reference: random lengths 0..1500 at random alignments, from
// arbitrary raw states and split at arbitrary points (a connection's saved CRC state continues
// that way), and inputs after longer ones (the fold's scratch must not leak between calls).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Engine } from "../../src/engine/abi.js";
import { config, wasmEngine } from "./helpers.js";

/** Bit-at-a-time CRC-32C from raw state `state` (no final xor), straight from the definition. */
function bitwiseUpdate(state: number, data: Uint8Array): number {
  let crc = state;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return crc >>> 0;
}
const bitwiseCrc32c = (data: Uint8Array) => (bitwiseUpdate(0xffffffff, data) ^ 0xffffffff) >>> 0;

/** Lengths around the kernel's boundaries: slicing steps, the fold's threshold (240) and its
 *  first vectors past the 192-byte tail; and the sizes a datagram has. */
const edgeLengths = [0, 1, 3, 4, 7, 8, 12, 13, 15, 16, 17, 31, 122, 192, 239, 240, 241, 255, 256, 257, 271, 272, 1020, 1500];
const anyLength = fc.oneof(fc.constantFrom(...edgeLengths), fc.integer({ min: 0, max: 1500 }));

describe.each([
  ["debug", "debug"],
  ["release", "release"],
] as const)("CRC-32C kernel in the %s engine", (_name, build) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await wasmEngine(config(), build);
  });
  const crcAt = (data: Uint8Array, offset: number) => {
    const at = engine.layout.txArenaOffset + offset;
    engine.bytes.set(data, at);
    return engine.crc32c(at, data.length);
  };

  it("equals the bitwise CRC for random lengths 0..1500 at any alignment", () => {
    fc.assert(
      fc.property(
        anyLength.chain((n) => fc.uint8Array({ minLength: n, maxLength: n })),
        fc.integer({ min: 0, max: 31 }),
        (data, offset) => {
          expect(crcAt(data, offset)).toBe(bitwiseCrc32c(data));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a folded input after a longer one gives the same CRC as on a fresh engine", () => {
    const long = Uint8Array.from({ length: 1500 }, (_, i) => (i * 151 + 7) & 0xff);
    for (let n = 240; n <= 420; n += 9) {
      const data = long.subarray(0, n).map((b) => b ^ 0x5a);
      crcAt(long, 0);
      expect(crcAt(data, n & 15)).toBe(bitwiseCrc32c(data));
    }
  });
});

describe("CRC-32C kernel continuing from a raw state (assembly/bench/crc32c-kernels.ts)", () => {
  // The engine exposes the state-taking entry point only inside WebAssembly (per-slot CRC states),
  // so this compiles the kernel module with the release flags and calls crcUpdate directly.
  let dir: string;
  let update: (state: number, ptr: number, len: number) => number;
  let bytes: Uint8Array;
  const at = 65536 + 4096; // past the module's static data
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ackwire-crc-"));
    const wasmPath = join(dir, "kernels.wasm");
    const asc = spawnSync(
      process.execPath,
      [join(process.cwd(), "node_modules", "assemblyscript", "bin", "asc.js"), "crc32c-kernels.ts", "-o", wasmPath,
        "-O3", "--noAssert", "--runtime", "stub", "--enable", "simd", "--use", "abort=", "--initialMemory", "2"],
      { cwd: join(process.cwd(), "assembly", "bench"), encoding: "utf8" },
    );
    expect(asc.status, asc.stderr).toBe(0);
    const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), {});
    const exports = instance.exports as Record<string, unknown>;
    (exports.init as () => void)();
    const raw = exports.engineCrc as (state: number, ptr: number, len: number) => number;
    update = (state, ptr, len) => raw(state, ptr, len) >>> 0;
    bytes = new Uint8Array((exports.memory as WebAssembly.Memory).buffer);
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("from any state, split at any point, equals one bitwise pass", () => {
    fc.assert(
      fc.property(
        anyLength.chain((n) => fc.tuple(fc.uint8Array({ minLength: n, maxLength: n }), fc.integer({ min: 0, max: n }))),
        fc.integer({ min: 0, max: 31 }),
        fc.integer({ min: 0, max: 0xffffffff }),
        ([data, split], offset, state) => {
          const ptr = at + offset;
          bytes.set(data, ptr);
          const want = bitwiseUpdate(state, data);
          expect(update(state, ptr, data.length)).toBe(want);
          expect(update(update(state, ptr, split), ptr + split, data.length - split)).toBe(want);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("inputs longer than one 2048-byte fold piece chain the pieces", () => {
    for (const n of [2048, 2049, 2048 + 239, 2048 + 240, 4096 + 17, 6000]) {
      const data = Uint8Array.from({ length: n }, (_, i) => (i * 89 + n) & 0xff);
      bytes.set(data, at + 3);
      const state = (n * 0x9e3779b1) >>> 0;
      expect(update(state, at + 3, n)).toBe(bitwiseUpdate(state, data));
    }
  });
});
