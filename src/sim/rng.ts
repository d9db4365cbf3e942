/**
 * Seeded pseudo-random numbers for the simulator: xoshiro128** (Blackman & Vigna, 2018) seeded
 * through splitmix32 (src/util/xoshiro.ts), with ranges, chances and forks.
 *
 * Only 32-bit integer arithmetic (`Math.imul`, shifts, `>>> 0`) is used, so a given seed yields
 * the same sequence on every JavaScript engine (Node, Bun, Deno, browsers). Not for cryptography.
 */

import { numericSeedKey, splitmix32, Xoshiro128 } from "../util/xoshiro.js";

export type Seed = number | string;

/** Misuse of the RNG API by the caller (e.g. `int(0)`). */
export class RngError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = "RngError";
    this.code = code;
  }
}

/** FNV-1a over UTF-16 code units: turns a label or string seed into 32 bits. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function seedToKey(seed: Seed): number {
  if (typeof seed === "string") return hashString(seed);
  if (!Number.isFinite(seed)) {
    throw new RngError("ERR_RNG_SEED", `seed must be a finite number or a string, got ${seed}`);
  }
  return numericSeedKey(seed);
}

export class Rng extends Xoshiro128 {
  constructor(seed: Seed = 1) {
    super(seedToKey(seed));
  }

  /** The 32-bit key this stream was built from; `fork` derives children from it. */
  get key(): number {
    return this.keyValue;
  }

  /** Uniform integer in [0, n). `n` must be an integer in [1, 2^32]. */
  int(n: number): number {
    if (!Number.isInteger(n) || n < 1 || n > 4294967296) {
      throw new RngError("ERR_RNG_RANGE", `int(n) needs an integer n in [1, 2^32], got ${n}`);
    }
    return Math.floor(this.next() * n);
  }

  /** True with probability `p` (0 never draws true, 1 always does). Always consumes one draw. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** Uniform float in [lo, hi). */
  range(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }

  /**
   * An independent stream derived from this stream's key and `label`. It does not consume draws
   * from this stream, so adding a fork never shifts the parent's sequence, and the same label
   * always yields the same child.
   */
  fork(label: string | number): Rng {
    const child = new Rng(0);
    child.setKey(splitmix32(this.keyValue ^ splitmix32(hashString(String(label)))));
    return child;
  }
}

