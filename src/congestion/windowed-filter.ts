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
 * approximate (it may report a value up to one third of a window older than strictly needed),
 * which is fine for both uses here and needs no per-sample memory.
 */
export type FilterKind = "min" | "max";

// Candidate k's value and time live at c[2k] and c[2k + 1].
const V0 = 0;
const T0 = 1;
const V1 = 2;
const T1 = 3;
const V2 = 4;
const T2 = 5;

export class WindowedFilter {
  /**
   * The three candidates as one plain array of doubles (value, time per candidate): one object
   * and one cache line per update, where three candidate objects with boxed fields were
   * several. Updated on every ack of every connection (min RTT, max bandwidth).
   */
  private readonly c: number[];
  private empty = true;
  private readonly isMin: boolean;

  constructor(
    kind: FilterKind,
    /** Window length in the same units as the `time` passed to update(). */
    public windowLength: number,
  ) {
    this.isMin = kind === "min";
    // A fractional literal keeps the elements unboxed doubles from the start.
    this.c = [0.5, 0, 0.5, 0, 0.5, 0];
    for (let k = 0; k < 6; k += 2) this.c[k] = NaN;
  }

  /** True if `a` is at least as good as `b` for this filter. */
  private better(a: number, b: number): boolean {
    return this.isMin ? a <= b : a >= b;
  }

  best(): number {
    return this.empty ? NaN : this.c[V0];
  }

  /** Time at which the current best was recorded. */
  bestTime(): number {
    return this.c[T0];
  }

  reset(value: number, time: number): void {
    const c = this.c;
    c[V0] = value;
    c[T0] = time;
    c[V1] = value;
    c[T1] = time;
    c[V2] = value;
    c[T2] = time;
    this.empty = false;
  }

  update(value: number, time: number): void {
    const c = this.c;
    if (this.empty || this.better(value, c[V0]) || time - c[T2] > this.windowLength) {
      this.reset(value, time);
      return;
    }
    if (this.better(value, c[V1])) {
      c[V1] = value;
      c[T1] = time;
      c[V2] = value;
      c[T2] = time;
    } else if (this.better(value, c[V2])) {
      c[V2] = value;
      c[T2] = time;
    }
    // Age out: shift candidates when the best is older than the window.
    const w = this.windowLength;
    if (time - c[T0] > w) {
      c[V0] = c[V1];
      c[T0] = c[T1];
      c[V1] = c[V2];
      c[T1] = c[T2];
      c[V2] = value;
      c[T2] = time;
      if (time - c[T0] > w) {
        c[V0] = c[V1];
        c[T0] = c[T1];
        c[V1] = c[V2];
        c[T1] = c[T2];
      }
      return;
    }
    // Refresh the second and third candidates at 1/4 and 1/2 of the window so they stay useful.
    if (c[V1] === c[V0] && time - c[T1] > w / 4) {
      c[V1] = value;
      c[T1] = time;
      c[V2] = value;
      c[T2] = time;
      return;
    }
    if (c[V2] === c[V1] && time - c[T2] > w / 2) {
      c[V2] = value;
      c[T2] = time;
    }
  }
}
