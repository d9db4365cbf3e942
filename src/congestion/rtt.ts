/**
 * Round-trip-time estimator: RFC 6298 SRTT/RTTVAR/RTO, plus min RTT, latest RTT, jitter and the
 * seed-002 10% moving average.
 *
 * Interface (all times in milliseconds, `now` passed in, floats allowed):
 *   const rtt = new RttEstimator({ minRtoMs: 30 });
 *   rtt.onSample(now, sampleMs);   // one RTT measurement
 *   rtt.onRetransmitTimeout();     // RTO fired: back off (RFC 6298 5.5)
 *   rtt.rtoMs();                   // current RTO including backoff
 *   rtt.smoothedMs / rttVarMs / minMs / latestMs / jitterMs / ewma10Ms   (readouts)
 *
 * Karn's rule (RFC 6298 section 3) is the CALLER's job: feed only samples from packets that were
 * transmitted once. In ackwire a packet sequence is never reused (data is resent in a new packet,
 * seed 002), so every ack of a packet is a valid sample; a caller that measures per *message*
 * (which may have been resent) must use the transmission ping in ping.ts instead.
 *
 * Deviations from RFC 6298, on purpose:
 * - Minimum RTO defaults to 30 ms, not 1 s (RFC 6298 2.4). The 1 s floor protects TCP against
 *   spurious retransmits with delayed acks of up to 500 ms; ackwire acks are piggybacked on
 *   traffic that flows at game tick rates (10-60 Hz) and every ack is repeated in up to 33
 *   packets, so a spurious resend costs one small datagram while a 1 s stall costs a visible
 *   hitch. 30 ms is about one tick at 30 Hz.
 * - Maximum RTO defaults to 2 s, below RFC 6298 2.5's "at least 60 s": a game session times out
 *   after ~10 s of silence, so a 60 s resend timer would never fire.
 * Both are configurable; set minRtoMs: 1000, maxRtoMs: 60000 for RFC behaviour.
 */
import { requireInRange } from "./errors.js";
import { WindowedFilter } from "./windowed-filter.js";

export interface RttConfig {
  /** RTO before the first sample (RFC 6298 2.1: 1 s). */
  initialRtoMs?: number;
  /** Lower clamp of the RTO (RFC 6298 2.4 says 1 s; game default 30 ms, see file comment). */
  minRtoMs?: number;
  /** Upper clamp of the RTO, also the cap of exponential backoff. */
  maxRtoMs?: number;
  /** Clock granularity G (RFC 6298 2.2/2.3). */
  granularityMs?: number;
  /** Window of the min-RTT filter; a route change is noticed after at most this long. */
  minRttWindowMs?: number;
  /** Max number of doublings by onRetransmitTimeout() (the value is also capped by maxRtoMs). */
  maxBackoffExponent?: number;
}

// RFC 6298 section 2: alpha = 1/8, beta = 1/4, K = 4.
const ALPHA = 1 / 8;
const BETA = 1 / 4;
const K = 4;
/** Seed 002: "move 10% of the distance" toward each new sample. */
const SEED_EWMA_FACTOR = 0.1;
/** RFC 3550 6.4.1: jitter moves 1/16 of the way toward each new |D|. */
const JITTER_GAIN = 1 / 16;

export class RttEstimator {
  readonly initialRtoMs: number;
  readonly minRtoMs: number;
  readonly maxRtoMs: number;
  readonly granularityMs: number;
  readonly maxBackoffExponent: number;

  /** SRTT; NaN until the first sample. */
  smoothedMs = NaN;
  /** RTTVAR; NaN until the first sample. */
  rttVarMs = NaN;
  /** Most recent sample; NaN until the first sample. */
  latestMs = NaN;
  /** RFC 3550-style smoothed |difference| of consecutive samples; 0 until two samples. */
  jitterMs = 0;
  /** Seed 002's exponentially smoothed moving average (10% per sample); NaN until a sample. */
  ewma10Ms = NaN;
  /** Number of samples taken. */
  sampleCount = 0;

  private baseRtoMs: number;
  private backoffExponent = 0;
  /** rtoMs(), recomputed when a sample or a timeout changes it (it is read far more often). */
  private currentRtoMs: number;
  private readonly minFilter: WindowedFilter;

  constructor(config: RttConfig = {}) {
    this.initialRtoMs = requireInRange("initialRtoMs", config.initialRtoMs ?? 1000, 0, 600_000);
    this.minRtoMs = requireInRange("minRtoMs", config.minRtoMs ?? 30, 0, 600_000);
    this.maxRtoMs = requireInRange("maxRtoMs", config.maxRtoMs ?? 2000, this.minRtoMs, 600_000);
    this.granularityMs = requireInRange("granularityMs", config.granularityMs ?? 1, 0, 1000);
    this.maxBackoffExponent = requireInRange("maxBackoffExponent", config.maxBackoffExponent ?? 16, 0, 30);
    const window = requireInRange("minRttWindowMs", config.minRttWindowMs ?? 10_000, 1, 3_600_000);
    this.minFilter = new WindowedFilter("min", window);
    this.baseRtoMs = this.clamp(this.initialRtoMs);
    this.currentRtoMs = this.baseRtoMs;
  }

  /** Windowed minimum RTT (default window 10 s); NaN until the first sample. */
  get minMs(): number {
    return this.minFilter.best();
  }

  /** Feed one RTT measurement taken at `now`. Non-finite or negative samples are ignored. */
  onSample(now: number, sampleMs: number): void {
    if (!Number.isFinite(sampleMs) || sampleMs < 0 || !Number.isFinite(now)) return;
    if (this.sampleCount === 0) {
      // RFC 6298 2.2: first measurement R.
      this.smoothedMs = sampleMs;
      this.rttVarMs = sampleMs / 2;
      this.ewma10Ms = sampleMs;
    } else {
      // RFC 6298 2.3: RTTVAR is updated with the OLD srtt, then SRTT.
      this.rttVarMs = (1 - BETA) * this.rttVarMs + BETA * Math.abs(this.smoothedMs - sampleMs);
      this.smoothedMs = (1 - ALPHA) * this.smoothedMs + ALPHA * sampleMs;
      this.ewma10Ms += SEED_EWMA_FACTOR * (sampleMs - this.ewma10Ms);
      const d = Math.abs(sampleMs - this.latestMs);
      this.jitterMs += JITTER_GAIN * (d - this.jitterMs);
    }
    this.latestMs = sampleMs;
    this.sampleCount++;
    this.minFilter.update(sampleMs, now);
    // RFC 6298 2.2/2.3: RTO = SRTT + max(G, K*RTTVAR), then clamp (2.4, 2.5).
    this.baseRtoMs = this.clamp(this.smoothedMs + Math.max(this.granularityMs, K * this.rttVarMs));
    // RFC 6298 5.7 (and Karn): a fresh valid sample ends the backoff.
    this.backoffExponent = 0;
    this.currentRtoMs = this.backedOff();
  }

  /** The retransmission timer expired: double the RTO (RFC 6298 5.5), capped by maxRtoMs. */
  onRetransmitTimeout(): void {
    if (this.backoffExponent < this.maxBackoffExponent) this.backoffExponent++;
    this.currentRtoMs = this.backedOff();
  }

  /** Current backoff exponent (0 = none). */
  get backoffCount(): number {
    return this.backoffExponent;
  }

  /** RTO without backoff, clamped to [minRtoMs, maxRtoMs]. */
  baseRto(): number {
    return this.baseRtoMs;
  }

  /** RTO including exponential backoff, never above maxRtoMs. */
  rtoMs(): number {
    return this.currentRtoMs;
  }

  private backedOff(): number {
    return Math.min(this.maxRtoMs, this.baseRtoMs * 2 ** this.backoffExponent);
  }

  private clamp(v: number): number {
    return Math.min(this.maxRtoMs, Math.max(this.minRtoMs, v));
  }
}
