import { describe, expect, it } from "vitest";
import { Rng, RngError, hashString } from "../../src/sim/rng.js";

function draw(rng: Rng, n: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(rng.nextU32());
  return out;
}

describe("Rng", () => {
  it("is deterministic per seed and differs across seeds", () => {
    expect(draw(new Rng(42), 64)).toEqual(draw(new Rng(42), 64));
    expect(draw(new Rng(42), 64)).not.toEqual(draw(new Rng(43), 64));
    expect(draw(new Rng("a"), 16)).not.toEqual(draw(new Rng("b"), 16));
    // Seeds beyond 32 bits are not silently truncated.
    expect(draw(new Rng(2 ** 32 + 1), 8)).not.toEqual(draw(new Rng(1), 8));
  });

  it("matches a pinned vector (guards cross-runtime determinism of the integer math)", () => {
    // Recompute the first outputs with BigInt arithmetic as an independent model of xoshiro128**
    // fed by the same state, then compare to the Number/Math.imul implementation.
    const rng = new Rng(12345);
    const fast = draw(rng, 1000);
    const model = new Rng(12345) as unknown as { s0: number; s1: number; s2: number; s3: number };
    let [s0, s1, s2, s3] = [model.s0, model.s1, model.s2, model.s3].map((v) => BigInt(v >>> 0));
    const M = 0xffffffffn;
    const rotl = (x: bigint, k: bigint): bigint => ((x << k) | (x >> (32n - k))) & M;
    const slow: number[] = [];
    for (let i = 0; i < 1000; i++) {
      slow.push(Number(rotl((s1 * 5n) & M, 7n) * 9n & M));
      const t = (s1 << 9n) & M;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = rotl(s3, 11n);
    }
    expect(fast).toEqual(slow);
  });

  it("reproduces the known-answer vector recorded identically on Node, Bun and Deno", () => {
    // Recorded by running this same sequence under node, bun and deno (all three agreed).
    const r = new Rng(12345);
    const f = r.fork("x");
    const out: number[] = [];
    for (let i = 0; i < 5; i++) out.push(r.nextU32(), f.nextU32(), r.int(1000));
    expect(out).toEqual([
      4164816853, 3135726720, 352, 313911497, 361176814, 153, 1721386193, 3071371642, 789, 3597907614, 4174414777, 63,
      3565877014, 2086660093, 4,
    ]);
  });

  it("next() is in [0,1) with a plausible mean; int(n) covers [0,n) evenly", () => {
    const rng = new Rng(7);
    let sum = 0;
    const buckets = new Array(10).fill(0);
    const n = 100_000;
    let outOfRange = 0;
    for (let i = 0; i < n; i++) {
      const x = rng.next();
      if (!(x >= 0 && x < 1)) outOfRange++;
      sum += x;
      buckets[rng.int(10)]++;
    }
    expect(outOfRange).toBe(0);
    expect(Math.abs(sum / n - 0.5)).toBeLessThan(0.01);
    // Each bucket expects 10,000 with sd ~95; 6 sd is a bound that fails only on a real bug.
    for (const b of buckets) expect(Math.abs(b - 10_000)).toBeLessThan(600);
  });

  it("fork gives stable, independent streams without disturbing the parent", () => {
    const a = new Rng(9);
    const b = new Rng(9);
    a.fork("x");
    a.fork("y");
    expect(draw(a, 10)).toEqual(draw(b, 10));
    expect(draw(new Rng(9).fork("x"), 10)).toEqual(draw(new Rng(9).fork("x"), 10));
    expect(draw(new Rng(9).fork("x"), 10)).not.toEqual(draw(new Rng(9).fork("y"), 10));
    expect(draw(new Rng(9).fork("x"), 10)).not.toEqual(draw(new Rng(10).fork("x"), 10));
  });

  it("rejects misuse with typed errors", () => {
    const rng = new Rng(1);
    for (const bad of [0, -1, 1.5, NaN]) {
      expect(() => rng.int(bad)).toThrow(RngError);
    }
    expect(() => new Rng(Infinity)).toThrow(/finite/);
  });

  it("hashString is FNV-1a 32-bit (known answers: fork labels hash through it, so it must never change)", () => {
    expect(hashString("")).toBe(0x811c9dc5);
    expect(hashString("abc")).toBe(0x1a47e90b);
  });
});
