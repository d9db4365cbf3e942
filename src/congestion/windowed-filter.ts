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

interface Candidate {
  value: number;
  time: number;
}

export class WindowedFilter {
  private readonly c: [Candidate, Candidate, Candidate];
  private empty = true;

  constructor(
    private readonly kind: FilterKind,
    /** Window length in the same units as the `time` passed to update(). */
    public windowLength: number,
  ) {
    this.c = [
      { value: NaN, time: 0 },
      { value: NaN, time: 0 },
      { value: NaN, time: 0 },
    ];
  }

  /** True if `a` is at least as good as `b` for this filter. */
  private better(a: number, b: number): boolean {
    return this.kind === "min" ? a <= b : a >= b;
  }

  best(): number {
    return this.empty ? NaN : this.c[0].value;
  }

  /** Time at which the current best was recorded. */
  bestTime(): number {
    return this.c[0].time;
  }

  reset(value: number, time: number): void {
    for (const k of this.c) {
      k.value = value;
      k.time = time;
    }
    this.empty = false;
  }

  update(value: number, time: number): void {
    const c = this.c;
    if (this.empty || this.better(value, c[0].value) || time - c[2].time > this.windowLength) {
      this.reset(value, time);
      return;
    }
    if (this.better(value, c[1].value)) {
      c[1].value = value;
      c[1].time = time;
      c[2].value = value;
      c[2].time = time;
    } else if (this.better(value, c[2].value)) {
      c[2].value = value;
      c[2].time = time;
    }
    // Age out: shift candidates when the best is older than the window.
    const w = this.windowLength;
    if (time - c[0].time > w) {
      c[0].value = c[1].value;
      c[0].time = c[1].time;
      c[1].value = c[2].value;
      c[1].time = c[2].time;
      c[2].value = value;
      c[2].time = time;
      if (time - c[0].time > w) {
        c[0].value = c[1].value;
        c[0].time = c[1].time;
        c[1].value = c[2].value;
        c[1].time = c[2].time;
      }
      return;
    }
    // Refresh the second and third candidates at 1/4 and 1/2 of the window so they stay useful.
    if (c[1].value === c[0].value && time - c[1].time > w / 4) {
      c[1].value = value;
      c[1].time = time;
      c[2].value = value;
      c[2].time = time;
      return;
    }
    if (c[2].value === c[1].value && time - c[2].time > w / 2) {
      c[2].value = value;
      c[2].time = time;
    }
  }
}
