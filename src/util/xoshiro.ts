/**
 * xoshiro128** (Blackman & Vigna, 2018) seeded through splitmix32: the generator under the
 * simulator's Rng (src/sim/rng.ts), and on its own where only uniform draws are needed (the
 * driver's dropTest), so that those stay small.
 *
 * Only 32-bit integer arithmetic (`Math.imul`, shifts, `>>> 0`) is used, so a given seed yields
 * the same sequence on every JavaScript engine (Node, Bun, Deno, browsers). Not for cryptography.
 */

/** One splitmix32 output for `x`: a strong 32-bit mixer used to spread seeds over the state. */
export function splitmix32(x: number): number {
  let z = (x + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** The 32-bit key of a finite numeric seed: both 32-bit halves of an integer seed are folded,
 *  so that e.g. 2**32 + 1 differs from 1. */
export function numericSeedKey(seed: number): number {
  const lo = seed >>> 0;
  const hi = Math.floor(seed / 4294967296) >>> 0;
  return (lo ^ Math.imul(hi, 0x9e3779b1)) >>> 0;
}

export class Xoshiro128 {
  protected keyValue = 0;
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private s3 = 0;

  constructor(key: number) {
    this.setKey(key);
  }

  protected setKey(key: number): void {
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
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
