/**
 * Round-trip-time estimator: RFC 6298 SRTT/RTTVAR/RTO, plus min RTT, latest RTT, jitter and the
 * 10% moving average of the game-networking texts.
 *
 * Interface (all times in milliseconds, `now` passed in, floats allowed):
 *   const rtt = new RttEstimator({ minRtoMs: 30 });
 *   rtt.onSample(now, sampleMs);   // one RTT measurement
 *   rtt.onRetransmitTimeout();     // RTO fired: back off (RFC 6298 5.5)
 *   rtt.rtoMs();                   // current RTO including backoff
 *   rtt.smoothedMs / rttVarMs / minMs / latestMs / jitterMs / ewma10Ms   (readouts)
 *
 * Karn's rule (RFC 6298 section 3) is the CALLER's job: feed only samples from packets that were
 * transmitted once. In ackwire a packet sequence is never reused (data is resent in a new packet),
 * so every ack of a packet is a valid sample; a caller that measures per *message*
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
import { doubleArray } from "./doubles.js";
import { requireInRange } from "./errors.js";
import { RTT_BASE, RTT_SLOTS } from "./state-layout.js";
import { FILTER_BEST, FILTER_SLOTS, windowedInit, windowedUpdate } from "./windowed-filter.js";

export interface RttConfig {
  /** RTO before the first sample (RFC 6298 2.1: 1 s). */
  initialRtoMs?: number;
  /** Lower clamp of the RTO (RFC 6298 2.4 says 1 s; game default 30 ms, see file comment). */
  minRtoMs?: number;
  /** Upper clamp of the RTO, also the cap of exponential backoff; never below the path's own
   *  SRTT + 4 RTTVAR (a path slower than this still gets an RTO it can answer within). */
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

/**
 * Slots of RttEstimator.s: every value a sample updates, the min filter included, in one
 * packed array (doubles.ts), so a sample on a connection that is cold in cache touches the
 * estimator and one array instead of a heap box per field plus a filter object and its array.
 */
// At RTT_BASE (48) of a connection's state array (state-layout.ts), or of an array of its own.
const SMOOTHED = 48;
const RTT_VAR = 49;
const LATEST = 50;
const JITTER = 51;
const EWMA10 = 52;
const SAMPLE_COUNT = 53;
const BASE_RTO = 54;
const CURRENT_RTO = 55;
const BACKOFF_EXPONENT = 56;
const MIN_FILTER = 57;
const END = MIN_FILTER + FILTER_SLOTS;
if (SMOOTHED !== RTT_BASE || END > RTT_BASE + RTT_SLOTS) throw new Error("state-layout.ts: RTT region does not match rtt.ts");

export class RttEstimator {
  readonly initialRtoMs: number;
  readonly minRtoMs: number;
  readonly maxRtoMs: number;
  readonly granularityMs: number;
  readonly maxBackoffExponent: number;
  private readonly minRttWindowMs: number;
  /** The slots above: a connection's state array (state-layout.ts) or an array of its own. */
  private readonly s: number[];

  constructor(config: RttConfig = {}, state?: number[]) {
    this.s = state ?? doubleArray(END);
    this.initialRtoMs = requireInRange("initialRtoMs", config.initialRtoMs ?? 1000, 0, 600_000);
    this.minRtoMs = requireInRange("minRtoMs", config.minRtoMs ?? 30, 0, 600_000);
    this.maxRtoMs = requireInRange("maxRtoMs", config.maxRtoMs ?? 2000, this.minRtoMs, 600_000);
    this.granularityMs = requireInRange("granularityMs", config.granularityMs ?? 1, 0, 1000);
    this.maxBackoffExponent = requireInRange("maxBackoffExponent", config.maxBackoffExponent ?? 16, 0, 30);
    this.minRttWindowMs = requireInRange("minRttWindowMs", config.minRttWindowMs ?? 10_000, 1, 3_600_000);
    const s = this.s;
    s[SMOOTHED] = NaN;
    s[RTT_VAR] = NaN;
    s[LATEST] = NaN;
    s[EWMA10] = NaN;
    windowedInit(s, MIN_FILTER);
    s[BASE_RTO] = this.clamp(this.initialRtoMs);
    s[CURRENT_RTO] = s[BASE_RTO];
  }

  /** SRTT; NaN until the first sample. */
  get smoothedMs(): number {
    return this.s[SMOOTHED];
  }

  /** RTTVAR; NaN until the first sample. */
  get rttVarMs(): number {
    return this.s[RTT_VAR];
  }

  /** Most recent sample; NaN until the first sample. */
  get latestMs(): number {
    return this.s[LATEST];
  }

  /** RFC 3550-style smoothed |difference| of consecutive samples; 0 until two samples. */
  get jitterMs(): number {
    return this.s[JITTER];
  }

  /** Seed 002's exponentially smoothed moving average (10% per sample); NaN until a sample. */
  get ewma10Ms(): number {
    return this.s[EWMA10];
  }

  /** Number of samples taken. */
  get sampleCount(): number {
    return this.s[SAMPLE_COUNT];
  }

  /** Windowed minimum RTT (default window 10 s); NaN until the first sample. */
  get minMs(): number {
    // The filter's best read in place: read twice per RTT sample, and windowedBest() was not
    // always inlined there (a call returning a boxed double).
    return this.s[MIN_FILTER + FILTER_BEST];
  }

  /** Feed one RTT measurement taken at `now`. Non-finite or negative samples are ignored. */
  onSample(now: number, sampleMs: number): void {
    if (!Number.isFinite(sampleMs) || sampleMs < 0 || !Number.isFinite(now)) return;
    const s = this.s;
    const count = s[SAMPLE_COUNT];
    let smoothed: number;
    let rttVar: number;
    if (count === 0) {
      // RFC 6298 2.2: first measurement R.
      smoothed = sampleMs;
      rttVar = sampleMs / 2;
      s[EWMA10] = sampleMs;
    } else {
      // RFC 6298 2.3: RTTVAR is updated with the OLD srtt, then SRTT.
      const old = s[SMOOTHED];
      rttVar = (1 - BETA) * s[RTT_VAR] + BETA * Math.abs(old - sampleMs);
      smoothed = (1 - ALPHA) * old + ALPHA * sampleMs;
      s[EWMA10] += SEED_EWMA_FACTOR * (sampleMs - s[EWMA10]);
      const d = Math.abs(sampleMs - s[LATEST]);
      s[JITTER] += JITTER_GAIN * (d - s[JITTER]);
    }
    s[SMOOTHED] = smoothed;
    s[RTT_VAR] = rttVar;
    s[LATEST] = sampleMs;
    s[SAMPLE_COUNT] = count + 1;
    windowedUpdate(s, MIN_FILTER, true, this.minRttWindowMs, sampleMs, now);
    // RFC 6298 2.2/2.3: RTO = SRTT + max(G, K*RTTVAR), then clamp (2.4, 2.5), except that the
    // maximum never pulls it below what the path measures: on a path slower than maxRtoMs a
    // capped RTO would resend every packet before its ack could arrive, for ever.
    const base = Math.max(this.minRtoMs, smoothed + Math.max(this.granularityMs, K * rttVar));
    s[BASE_RTO] = base;
    // RFC 6298 5.7 (and Karn): a fresh valid sample ends the backoff (2^0: the base itself).
    s[BACKOFF_EXPONENT] = 0;
    s[CURRENT_RTO] = this.backedOff();
  }

  /** The retransmission timer expired: double the RTO (RFC 6298 5.5), capped by max(maxRtoMs, baseRto()). */
  onRetransmitTimeout(): void {
    const s = this.s;
    if (s[BACKOFF_EXPONENT] < this.maxBackoffExponent) s[BACKOFF_EXPONENT]++;
    s[CURRENT_RTO] = this.backedOff();
  }

  /** Current backoff exponent (0 = none). */
  get backoffCount(): number {
    return this.s[BACKOFF_EXPONENT];
  }

  /** RTO without backoff: at least minRtoMs, at most maxRtoMs unless the path's SRTT + 4 RTTVAR is more. */
  baseRto(): number {
    return this.s[BASE_RTO];
  }

  /** RTO including exponential backoff: never above max(maxRtoMs, baseRto()). */
  rtoMs(): number {
    return this.s[CURRENT_RTO];
  }

  /** The base doubled per backoff step, up to maxRtoMs, or the base itself if that is more. */
  private backedOff(): number {
    const base = this.s[BASE_RTO];
    return Math.max(base, Math.min(this.maxRtoMs, base * 2 ** this.s[BACKOFF_EXPONENT]));
  }

  private clamp(v: number): number {
    return Math.min(this.maxRtoMs, Math.max(this.minRtoMs, v));
  }
}
