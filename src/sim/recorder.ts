import { Rng } from "./rng.js";

/**
 * Records numeric samples (e.g. queueing delay in ms) and answers percentiles.
 *
 * The first `capacity` samples are kept exactly; after that a seeded reservoir keeps a uniform
 * random subset of `capacity` samples, so memory stays bounded on long soak runs while count,
 * mean, min and max stay exact.
 */
export class SampleRecorder {
  private readonly samples: number[] = [];
  private readonly rng: Rng;
  private sorted = true;
  private total = 0;
  private sum = 0;
  private minValue = Infinity;
  private maxValue = -Infinity;

  constructor(
    private readonly capacity = 100_000,
    seed: number | string = "recorder",
  ) {
    this.rng = new Rng(seed);
  }

  record(value: number): void {
    this.total++;
    this.sum += value;
    if (value < this.minValue) this.minValue = value;
    if (value > this.maxValue) this.maxValue = value;
    if (this.samples.length < this.capacity) {
      this.samples.push(value);
      this.sorted = false;
      return;
    }
    // Reservoir sampling (Vitter's algorithm R): keep this sample with probability capacity/total.
    const slot = Math.floor(this.rng.next() * this.total);
    if (slot < this.capacity) {
      this.samples[slot] = value;
      this.sorted = false;
    }
  }

  get count(): number {
    return this.total;
  }

  get mean(): number {
    return this.total === 0 ? 0 : this.sum / this.total;
  }

  get min(): number {
    return this.total === 0 ? 0 : this.minValue;
  }

  get max(): number {
    return this.total === 0 ? 0 : this.maxValue;
  }

  /**
   * Nearest-rank percentile: the smallest sample such that at least `p`% of samples are <= it.
   * `p` in (0, 100]. Returns 0 when nothing was recorded.
   */
  percentile(p: number): number {
    if (this.samples.length === 0) return 0;
    if (!this.sorted) {
      this.samples.sort((a, b) => a - b);
      this.sorted = true;
    }
    const rank = Math.ceil((Math.min(Math.max(p, 0), 100) / 100) * this.samples.length);
    return this.samples[Math.max(rank, 1) - 1];
  }

  /** A plain summary for printing or snapshotting. */
  summary(): { count: number; mean: number; min: number; p50: number; p95: number; p99: number; max: number } {
    return {
      count: this.count,
      mean: this.mean,
      min: this.min,
      p50: this.percentile(50),
      p95: this.percentile(95),
      p99: this.percentile(99),
      max: this.max,
    };
  }

  reset(): void {
    this.samples.length = 0;
    this.sorted = true;
    this.total = 0;
    this.sum = 0;
    this.minValue = Infinity;
    this.maxValue = -Infinity;
  }
}
