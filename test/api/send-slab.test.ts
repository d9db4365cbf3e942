import { describe, expect, it } from "vitest";
import { SendSlab } from "../../src/api/send-slab.js";

const filled = (length: number, value: number): Uint8Array => new Uint8Array(length).fill(value & 255);

describe("SendSlab", () => {
  it("keeps every copy intact until releaseAll, across many slabs", () => {
    const slab = new SendSlab();
    const source = new Uint8Array(1200);
    const copies: Uint8Array[] = [];
    for (let i = 0; i < 500; i++) {
      source.fill(i & 255);
      copies.push(slab.copy(source));
      source.fill(0xee); // the engine reuses its arena: the copy must not change
    }
    copies.forEach((c, i) => expect(c).toEqual(filled(1200, i)));
  });

  it("reuses the same memory after releaseAll (no allocation in steady bulk traffic)", () => {
    const slab = new SendSlab();
    const buffers = (): Set<ArrayBufferLike> => {
      const seen = new Set<ArrayBufferLike>();
      for (let i = 0; i < 300; i++) seen.add(slab.copy(filled(1000, i)).buffer);
      return seen;
    };
    const first = buffers();
    slab.releaseAll();
    const second = buffers();
    expect(first.size).toBeGreaterThan(1);
    expect([...second]).toEqual([...first]);
  });

  it("copies datagrams larger than a slab", () => {
    const slab = new SendSlab();
    const a = slab.copy(filled(100, 1));
    const big = slab.copy(filled(70_000, 2));
    const b = slab.copy(filled(100, 3));
    expect(a).toEqual(filled(100, 1));
    expect(big).toEqual(filled(70_000, 2));
    expect(b).toEqual(filled(100, 3));
    slab.releaseAll();
    expect(slab.copy(filled(70_000, 4))).toEqual(filled(70_000, 4));
  });

  it("past the kept slabs, copies still never overlap", () => {
    const slab = new SendSlab();
    const copies: Uint8Array[] = [];
    for (let i = 0; i < 6000; i++) copies.push(slab.copy(filled(1200, i)));
    copies.forEach((c, i) => expect(c[0] === (i & 255) && c[1199] === (i & 255)).toBe(true));
    slab.releaseAll();
    const again = slab.copy(filled(10, 9));
    expect(again).toEqual(filled(10, 9));
  });
});
