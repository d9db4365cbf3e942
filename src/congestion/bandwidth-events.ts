/**
 * Bandwidth-change reporting: turns a continuously moving estimate into sparse events.
 *
 * Interface:
 *   const d = new BandwidthChangeDetector({ threshold: 0.2 });
 *   const ev = d.update(now, controller.bandwidthEstimateBps());
 *   if (ev) emit("bandwidth", ev);   // { now, bps, previousBps, ratio }
 *
 * An event fires when the estimate differs by more than `threshold` (default 20%) from the
 * LAST REPORTED value (not the previous sample), so a slow drift is reported once it has
 * accumulated. The first positive estimate is always reported. Zero / non-finite estimates
 * ("unknown") are ignored.
 */
import { requireInRange } from "./errors.js";

export interface BandwidthChange {
  now: number;
  bps: number;
  /** Last reported value (0 for the first report). */
  previousBps: number;
  /** bps / previousBps (Infinity for the first report). */
  ratio: number;
}

export class BandwidthChangeDetector {
  readonly threshold: number;
  private reported = 0;

  constructor(config: { threshold?: number } = {}) {
    this.threshold = requireInRange("threshold", config.threshold ?? 0.2, 0, 1e6);
  }

  /** Last value reported (0 before any). */
  get lastReportedBps(): number {
    return this.reported;
  }

  update(now: number, bps: number): BandwidthChange | undefined {
    if (!(bps > 0) || !Number.isFinite(bps)) return undefined;
    const prev = this.reported;
    if (prev > 0 && Math.abs(bps - prev) <= this.threshold * prev) return undefined;
    this.reported = bps;
    return { now, bps, previousBps: prev, ratio: prev > 0 ? bps / prev : Infinity };
  }
}
