/**
 * Seeded pseudo-random numbers for the simulator: xoshiro128** (Blackman & Vigna, 2018) seeded
 * through splitmix32.
 *
 * Only 32-bit integer arithmetic (`Math.imul`, shifts, `>>> 0`) is used, so a given seed yields
 * the same sequence on every JavaScript engine (Node, Bun, Deno, browsers). Not for cryptography.
 */

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

/** One splitmix32 output for `x`: a strong 32-bit mixer used to spread seeds over the state. */
function splitmix32(x: number): number {
  let z = (x + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

function seedToKey(seed: Seed): number {
  if (typeof seed === "string") return hashString(seed);
  if (!Number.isFinite(seed)) {
    throw new RngError("ERR_RNG_SEED", `seed must be a finite number or a string, got ${seed}`);
  }
  // Fold both 32-bit halves of an integer seed so that e.g. 2**32 + 1 differs from 1.
  const lo = seed >>> 0;
  const hi = Math.floor(seed / 4294967296) >>> 0;
  return (lo ^ Math.imul(hi, 0x9e3779b1)) >>> 0;
}

export class Rng {
  private keyValue = 0;
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private s3 = 0;

  constructor(seed: Seed = 1) {
    this.setKey(seedToKey(seed));
  }

  /** The 32-bit key this stream was built from; `fork` derives children from it. */
  get key(): number {
    return this.keyValue;
  }

  private setKey(key: number): void {
    this.keyValue = key >>> 0;
    let x = this.keyValue;
    this.s0 = x = splitmix32(x);
    this.s1 = x = splitmix32(x);
    this.s2 = x = splitmix32(x);
    this.s3 = splitmix32(x);
    // xoshiro must never have an all-zero state.
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** Next raw 32-bit unsigned integer (xoshiro128** step). */
  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform float in [0, 1) with 32 bits of randomness. */
  next(): number {
    return this.nextU32() / 4294967296;
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

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
