// The bandwidth filter (src/congestion/round-max.ts) against an exact windowed max, and the
// three-candidate filter (windowed-filter.ts, min RTT) within what it promises.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RoundMax } from "../../src/congestion/round-max.js";
import { WindowedFilter } from "../../src/congestion/windowed-filter.js";

const WINDOW = 10;

/** Samples at non-decreasing integer times; `maxGap` rounds may pass without one. */
const samples = (maxGap: number) =>
  fc.array(fc.record({ gap: fc.integer({ min: 0, max: maxGap }), value: fc.integer({ min: 1, max: 100 }) }), { minLength: 1, maxLength: 80 });

/** Runs `update` over the samples; after each, the exact best of the window and the seen samples. */
function replay(seq: { gap: number; value: number }[], update: (value: number, t: number) => number, kind: "min" | "max", check: (got: number, exact: number, seen: { t: number; v: number }[], t: number) => void): void {
  const seen: { t: number; v: number }[] = [];
  let t = 0;
  for (const { gap, value } of seq) {
    t += gap;
    const got = update(value, t);
    seen.push({ t, v: value });
    const inWindow = seen.filter((s) => t - s.t <= WINDOW).map((s) => s.v);
    check(got, kind === "max" ? Math.max(...inWindow) : Math.min(...inWindow), seen, t);
  }
}

describe("RoundMax (the bandwidth filter)", () => {
  it("is the exact max over the window, whatever the gaps between samples", () => {
    fc.assert(
      fc.property(samples(14), (seq) => {
        const f = new RoundMax(WINDOW);
        replay(seq, (v, t) => f.update(v, t), "max", (got, exact, seen) => expect(got, JSON.stringify(seen)).toBe(exact));
      }),
      { seed: 4242, numRuns: 3000 },
    );
  });

  it("is exact for any window length", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), samples(25), (window, seq) => {
        const f = new RoundMax(window);
        const seen: { t: number; v: number }[] = [];
        let t = 0;
        for (const { gap, value } of seq) {
          t += gap;
          seen.push({ t, v: value });
          expect(f.update(value, t), `window ${window}: ${JSON.stringify(seen)}`).toBe(Math.max(...seen.filter((s) => t - s.t <= window).map((s) => s.v)));
        }
      }),
      { seed: 4245, numRuns: 2000 },
    );
  });

  it("keeps a second best that came early in the window (the three-candidate filter dropped it)", () => {
    // 3 at round 0, 2 at round 1, then 1s: at round 11 the 3 has aged out and the 2 has not.
    const f = new RoundMax(WINDOW);
    const old = new WindowedFilter("max", WINDOW);
    for (const [v, t] of [[3, 0], [2, 1], [1, 7], [1, 11]] as const) {
      f.update(v, t);
      old.update(v, t);
    }
    expect(f.value).toBe(2);
    expect(old.best()).toBe(1);
    expect(() => new RoundMax(0)).toThrow(RangeError);
  });
});

describe("WindowedFilter (three candidates, min RTT)", () => {
  // Its promise holds for what it filters, many samples per window: the value it reports was
  // the best at most a third of a window beyond the window, and is never worse than the best
  // still inside it.
  for (const kind of ["min", "max"] as const) {
    it(`${kind}: with a sample at least every time unit, never worse than the window's best`, () => {
      fc.assert(
        fc.property(samples(1), (seq) => {
          const f = new WindowedFilter(kind, WINDOW);
          replay(
            seq,
            (v, t) => (f.update(v, t), f.best()),
            kind,
            (got, exact, seen, t) => {
              if (kind === "max") expect(got, JSON.stringify(seen)).toBeGreaterThanOrEqual(exact);
              else expect(got, JSON.stringify(seen)).toBeLessThanOrEqual(exact);
              expect(seen.filter((s) => t - s.t <= WINDOW + WINDOW / 3).map((s) => s.v)).toContain(got);
            },
          );
        }),
        { seed: kind === "min" ? 4243 : 4244, numRuns: 3000 },
      );
    });
  }
});
