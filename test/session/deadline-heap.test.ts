import { describe, expect, it } from "vitest";
import { DeadlineHeap } from "../../src/session/deadline-heap.js";
import { Rng } from "../../src/sim/rng.js";

/** A seeded stream of floats in [0, 1). */
function rng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

describe("DeadlineHeap (slot-keyed)", () => {
  it("pops due slots in time order and nothing early", () => {
    const heap = new DeadlineHeap(8);
    heap.schedule(3, 30);
    heap.schedule(1, 10);
    heap.schedule(5, 20);
    expect(heap.peekTime()).toBe(10);
    expect(heap.popDue(5)).toBe(-1);
    expect(heap.popDue(25)).toBe(1);
    expect(heap.popDue(25)).toBe(5);
    expect(heap.popDue(25)).toBe(-1);
    expect(heap.size).toBe(1);
    expect(heap.has(3)).toBe(true);
    expect(heap.has(1)).toBe(false);
  });

  it("moves, unschedules (Infinity) and removes entries in place", () => {
    const heap = new DeadlineHeap(4);
    heap.schedule(0, 50);
    heap.schedule(1, 40);
    heap.schedule(0, 10); // earlier
    expect(heap.peekTime()).toBe(10);
    heap.schedule(0, 90); // later
    expect(heap.peekTime()).toBe(40);
    heap.schedule(1, Infinity);
    expect(heap.size).toBe(1);
    heap.remove(0);
    heap.remove(0); // harmless twice
    expect(heap.peekTime()).toBeUndefined();
    expect(heap.popDue(1e9)).toBe(-1);
  });

  it("agrees with a naive model over a seeded random workload", () => {
    const slots = 64;
    const heap = new DeadlineHeap(slots);
    const model = new Array<number>(slots).fill(Infinity);
    const random = rng(12345);
    let now = 0;
    for (let step = 0; step < 20_000; step++) {
      const action = random();
      const slot = Math.floor(random() * slots);
      if (action < 0.6) {
        const time = random() < 0.05 ? Infinity : now + Math.floor(random() * 100);
        heap.schedule(slot, time);
        model[slot] = time;
      } else if (action < 0.7) {
        heap.remove(slot);
        model[slot] = Infinity;
      } else {
        now += Math.floor(random() * 10);
        for (let guard = 0; guard <= slots; guard++) {
          const popped = heap.popDue(now);
          const earliest = Math.min(...model);
          if (popped < 0) {
            expect(earliest > now).toBe(true);
            break;
          }
          // Ties may come out in any order, but the popped slot must hold the earliest time.
          expect(model[popped]).toBe(earliest);
          model[popped] = Infinity;
        }
      }
      const finite = model.filter((t) => t !== Infinity);
      expect(heap.size).toBe(finite.length);
      expect(heap.peekTime()).toBe(finite.length === 0 ? undefined : Math.min(...finite));
    }
  });
});
