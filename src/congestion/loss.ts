/**
 * Packet loss-rate estimator.
 *
 * Interface:
 *   const loss = new LossEstimator({ window: 256 });
 *   loss.onDelivered(); loss.onLost();     // one call per packet outcome, in any order
 *   loss.windowedRate();                   // lost / (lost + delivered) over the last `window` outcomes
 *   loss.smoothedRate();                   // EWMA of the 0/1 outcome, gain 1/window-ish
 *
 * Two readouts because they answer different questions: the windowed rate is exact over a known
 * count of recent packets (good for stats()), the EWMA reacts smoothly and needs no history
 * (good as a controller input). Outcomes are stored as bits in a ring, O(1) per outcome.
 */
import { requireInRange } from "./errors.js";

export interface LossConfig {
  /** Number of most recent packet outcomes the windowed rate covers (default 256). */
  window?: number;
  /** EWMA gain per outcome (default 1/64). */
  ewmaGain?: number;
}

export class LossEstimator {
  readonly window: number;
  readonly ewmaGain: number;
  private readonly ring: Uint8Array;
  private next = 0;
  private held = 0;
  private lostInWindow = 0;
  private ewma = 0;
  /** Lifetime counters. */
  totalDelivered = 0;
  totalLost = 0;

  constructor(config: LossConfig = {}) {
    this.window = Math.floor(requireInRange("window", config.window ?? 256, 1, 1 << 20));
    this.ewmaGain = requireInRange("ewmaGain", config.ewmaGain ?? 1 / 64, 1e-6, 1);
    this.ring = new Uint8Array(this.window);
  }

  onDelivered(): void {
    this.totalDelivered++;
    this.push(0);
  }

  onLost(): void {
    this.totalLost++;
    this.push(1);
  }

  /** Lost fraction of the last `window` outcomes; 0 before any outcome. */
  windowedRate(): number {
    return this.held === 0 ? 0 : this.lostInWindow / this.held;
  }

  /** Exponentially weighted loss fraction; 0 before any outcome. */
  smoothedRate(): number {
    return this.ewma;
  }

  private push(lost: 0 | 1): void {
    if (this.held === this.window) this.lostInWindow -= this.ring[this.next]!;
    else this.held++;
    this.ring[this.next] = lost;
    this.lostInWindow += lost;
    this.next = (this.next + 1) % this.window;
    this.ewma += this.ewmaGain * (lost - this.ewma);
  }
}
