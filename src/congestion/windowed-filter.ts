/**
 * Windowed min / max filter over a time (or round-count) axis.
 *
 * Interface:
 *   const f = new WindowedFilter("min", 10_000);
 *   f.update(sample, now);   // O(1)
 *   f.best();                // current windowed min (or max), NaN before any sample
 *   f.reset(sample, now);
 *
 * Keeps the three best candidates (best, second, third) with their times, so that when the best
 * ages out of the window the next candidate is already known. This is Kathleen Nichols'
 * windowed-min estimator, the same idea BBR uses for max bandwidth and min RTT. The result is
 * approximate: with samples at least every 1/10 of the window it may report a value up to one
 * third of a window older than strictly needed (test/congestion/windowed-filter.test.ts), and
 * needs no per-sample memory. With sparser samples it can lose the best still in the window
 * (a candidate refresh takes a worse newer value over it), which is why the default
 * controller's bandwidth filter, one value per round, is round-max.ts instead. Here: the RTT
 * estimator's min RTT (rtt.ts), one sample per receive batch over 10 s.
 */
import { doubleArray } from "./doubles.js";

export type FilterKind = "min" | "max";

// Candidate k's value and time live at c[at + 2k] and c[at + 2k + 1].
const V0 = 0;
const T0 = 1;
const V1 = 2;
const T1 = 3;
const V2 = 4;
const T2 = 5;
/** Doubles a filter takes in an array (windowedInit / windowedUpdate). */
export const FILTER_SLOTS = 6;
/** Offset of the current best in a filter's slots: `c[at + FILTER_BEST]` is windowedBest(c, at),
 *  for readers on a hot path where a call might not be inlined. */
export const FILTER_BEST = V0;

/**
 * The filter's state at `at` in a double array, so an estimator can keep it inside its own
 * state array (doubles.ts): an empty filter (best NaN).
 */
export function windowedInit(c: number[], at: number): void {
  for (let k = 0; k < FILTER_SLOTS; k++) c[at + k] = NaN;
}

/** Current best of the filter at `at` (NaN while empty). */
export function windowedBest(c: number[], at: number): number {
  return c[at + V0];
}

function windowedReset(c: number[], at: number, value: number, time: number): void {
  c[at + V0] = value;
  c[at + T0] = time;
  c[at + V1] = value;
  c[at + T1] = time;
  c[at + V2] = value;
  c[at + T2] = time;
}

/**
 * One sample into the filter at `at` (a min filter if `isMin`, else max). `value` must not be
 * NaN (an empty filter is one whose best is NaN).
 */
export function windowedUpdate(c: number[], at: number, isMin: boolean, windowLength: number, value: number, time: number): void {
  const v0 = c[at + V0];
  if (Number.isNaN(v0) || (isMin ? value <= v0 : value >= v0) || time - c[at + T2] > windowLength) {
    windowedReset(c, at, value, time);
    return;
  }
  if (isMin ? value <= c[at + V1] : value >= c[at + V1]) {
    c[at + V1] = value;
    c[at + T1] = time;
    c[at + V2] = value;
    c[at + T2] = time;
  } else if (isMin ? value <= c[at + V2] : value >= c[at + V2]) {
    c[at + V2] = value;
    c[at + T2] = time;
  }
  // Age out: shift candidates when the best is older than the window.
  const w = windowLength;
  if (time - c[at + T0] > w) {
    c[at + V0] = c[at + V1];
    c[at + T0] = c[at + T1];
    c[at + V1] = c[at + V2];
    c[at + T1] = c[at + T2];
    c[at + V2] = value;
    c[at + T2] = time;
    if (time - c[at + T0] > w) {
      c[at + V0] = c[at + V1];
      c[at + T0] = c[at + T1];
      c[at + V1] = c[at + V2];
      c[at + T1] = c[at + T2];
    }
    return;
  }
  // Refresh the second and third candidates at 1/4 and 1/2 of the window so they stay useful.
  if (c[at + V1] === c[at + V0] && time - c[at + T1] > w / 4) {
    c[at + V1] = value;
    c[at + T1] = time;
    c[at + V2] = value;
    c[at + T2] = time;
    return;
  }
  if (c[at + V2] === c[at + V1] && time - c[at + T2] > w / 2) {
    c[at + V2] = value;
    c[at + T2] = time;
  }
}

export class WindowedFilter {
  /**
   * The three candidates as one plain array of doubles (value, time per candidate): one object
   * and one cache line per update, where three candidate objects with boxed fields were
   * several. The RTT estimator and the default controller keep the same layout inside their
   * own state arrays instead (windowedUpdate).
   */
  private readonly c: number[] = doubleArray(FILTER_SLOTS, NaN);
  private readonly isMin: boolean;

  constructor(
    kind: FilterKind,
    /** Window length in the same units as the `time` passed to update(). */
    public windowLength: number,
  ) {
    this.isMin = kind === "min";
  }

  best(): number {
    return windowedBest(this.c, 0);
  }

  /** Time at which the current best was recorded. */
  bestTime(): number {
    return this.c[T0];
  }

  reset(value: number, time: number): void {
    windowedReset(this.c, 0, value, time);
  }

  /** NaN samples are ignored. */
  update(value: number, time: number): void {
    if (Number.isNaN(value)) return;
    windowedUpdate(this.c, 0, this.isMin, this.windowLength, value, time);
  }
}
