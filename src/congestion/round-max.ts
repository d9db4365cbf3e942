/**
 * The exact maximum over the last `window` + 1 rounds (round counts 0, 1, 2..., never going
 * back): the default controller's bandwidth filter (btlBw).
 *
 * Why not the three-candidate windowed filter (windowed-filter.ts, Nichols' estimator as in
 * Linux's minmax): it is built for many samples per window, and after Startup the bandwidth
 * filter gets one value per round, none in rounds without samples. With samples that sparse,
 * the candidates' refresh can replace the second best still in the window with a worse newer
 * value, and a value that arrives before the first quarter of the window passes is dropped
 * outright. The estimate then falls below what the last rounds delivered: from 37.6 to 0.59
 * Mbit/s in one round, leaving ProbeRTT (simulator, test/congestion-sim/stall-harness.ts), and
 * ProbeBW climbs back by a few percent per 8-round cycle. Per-round maxima need one value per
 * round of the window, which is small (10 rounds by default), so this keeps all of them.
 *
 * Layout: one packed array of doubles (doubles.ts: in the GC heap, one allocation, ~200 bytes
 * for the default window, where a Float64Array of the same size takes about twice that with its
 * buffer) of (round, value) pairs, slot = round % (window + 1); a slot whose round is not
 * within the window is stale (overwritten by the round that maps there next).
 */
import { doubleArray } from "./doubles.js";

export class RoundMax {
  readonly window: number;
  private readonly ring: number[];
  private best = NaN;
  private bestRound = NaN;

  constructor(window: number) {
    if (!Number.isInteger(window) || window < 1) throw new RangeError(`RoundMax window must be an integer >= 1, got ${window}`);
    this.window = window;
    this.ring = doubleArray(2 * (window + 1), NaN);
  }

  /** The max over rounds [round - window, round] of the last update, NaN before any. */
  get value(): number {
    return this.best;
  }

  /** Adds `value` (not NaN) seen in `round` (>= every earlier round); returns the new max. */
  update(value: number, round: number): number {
    const ring = this.ring;
    const at = 2 * (round % (this.window + 1));
    if (ring[at] !== round) {
      // The slot held round - (window + 1) or earlier: out of the window now, whatever it was.
      ring[at] = round;
      ring[at + 1] = value;
    } else if (value > ring[at + 1]) {
      ring[at + 1] = value;
    }
    if (value >= this.best || Number.isNaN(this.best)) {
      this.best = value;
      this.bestRound = round;
    } else if (round - this.bestRound > this.window) {
      this.rescan(round);
    }
    return this.best;
  }

  /** The best of the rounds still in the window (the previous best has aged out). */
  private rescan(round: number): void {
    const ring = this.ring;
    let best = NaN;
    let bestRound = NaN;
    for (let at = 0; at < ring.length; at += 2) {
      const r = ring[at]!;
      if (!(round - r <= this.window)) continue; // stale, or never written (NaN)
      const v = ring[at + 1]!;
      // Ties: the newer round, which stays in the window longer.
      if (Number.isNaN(best) || v > best || (v === best && r > bestRound)) {
        best = v;
        bestRound = r;
      }
    }
    this.best = best;
    this.bestRound = bestRound;
  }
}
