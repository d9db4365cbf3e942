/**
 * Network clock (MTUDP's clock sync): every client estimates the server's clock.
 *
 * Exchange (wire proposal in docs/CONGESTION.md, "Clock frames"):
 *   client -> server: clientSendTime (client clock, u32 ms)
 *   server -> client: echoed clientSendTime, serverTime (server clock when the reply left,
 *                     u32 ms), holdMs (how long the server held the request before replying, u16)
 *   client records ackTime (client clock) when the reply arrives.
 *
 * Per sample (the NTP on-wire calculation, RFC 5905 section 8, with the hold time standing in
 * for the server's receive timestamp):
 *   rtt    = ackTime - clientSendTime - holdMs                      (network round trip)
 *   offset = serverTime - holdMs / 2 - (clientSendTime + ackTime) / 2  (server - client)
 * Whatever the path asymmetry, the true offset at that moment lies within offset +/- rtt / 2
 * (plus timestamp quantization). Seed 004's rule "only correct when the round trip was close
 * to the best ping" becomes: samples whose rtt is within `trustMarginMs` of the best rtt in
 * the window are trusted.
 *
 * Drift (rate difference of the two clocks): a least-squares line through the trusted samples'
 * offsets over local time, once at least 3 trusted samples span `minDriftSpanMs`. Until then
 * the drift is taken as 0 with an allowance of `unknownDriftPpm`; after that the allowance is
 * `driftAllowancePpm` plus 3 standard errors of the fitted slope.
 *
 * Estimate and error bound (interval intersection, as in Marzullo's algorithm / NTP): sample i
 * says the true offset at `now` lies in
 *   I_i = offset_i + drift * (now - t_i)  +/-  (rtt_i / 2 + quantizationMs + allowance * |now - t_i|).
 * Every I_i contains the truth (given the drift allowance holds), so their intersection does.
 * The estimate is its midpoint and errorBoundMs() is its half-width: a bound that contains the
 * true error by construction, and much tighter than any single sample, because the lower edge
 * is set by the sample with the fastest return path and the upper by the fastest forward path.
 * If the intersection is empty (a clock step, or drift beyond the allowance), the estimate falls
 * back to the median of the trusted samples and the bound to the smallest
 * |estimate - centre_i| + halfwidth_i, which still holds for each sample whose interval is sound.
 *
 * Interface (all times ms, passed in):
 *   const clock = new NetworkClock();
 *   clock.onSample(clientSendTime, serverTime, ackTime, holdMs);   // returns false if rejected
 *   clock.synchronized; clock.serverTime(localNow); clock.offsetMs(localNow);
 *   clock.errorBoundMs(localNow); clock.driftPpm();
 *
 * Times here are full-precision numbers on each side's clock. The wire carries u32 ms; use
 * unwrapU32() to lift a received u32 next to a known full value before calling onSample.
 */
import { requireInRange } from "../congestion/errors.js";

export interface NetworkClockConfig {
  /** Samples older than this (local time) are forgotten (default 60 s). */
  windowMs?: number;
  /** Max samples kept (default 256; oldest dropped first). */
  maxSamples?: number;
  /** A sample is trusted if rtt <= bestRtt + max(trustMarginMs, trustMarginFraction * bestRtt). */
  trustMarginMs?: number;
  trustMarginFraction?: number;
  /** Timestamp resolution allowance added to every bound (default 1 ms: u32 ms on the wire). */
  quantizationMs?: number;
  /** Assumed bound on the drift-estimate error beyond the fit's own uncertainty (default 100 ppm). */
  driftAllowancePpm?: number;
  /** Drift allowance while the drift is not yet estimated (default 500 ppm). */
  unknownDriftPpm?: number;
  /** Trusted samples must span this long before drift is estimated (default 2 s). */
  minDriftSpanMs?: number;
  /** Drift estimates are clamped to +/- this (default 1000 ppm; real oscillators are < 200). */
  maxDriftPpm?: number;
  /** Samples with rtt above this are rejected outright (default 10 s, as MTUDP does). */
  maxRttMs?: number;
}

interface ClockSample {
  /** Local time the sample refers to (midpoint of send and ack, minus half the hold). */
  localTime: number;
  offset: number;
  rtt: number;
}

export class NetworkClock {
  private readonly windowMs: number;
  private readonly maxSamples: number;
  private readonly trustMarginMs: number;
  private readonly trustMarginFraction: number;
  private readonly quantizationMs: number;
  private readonly driftAllowance: number; // ms per ms
  private readonly unknownDrift: number; // ms per ms
  private readonly minDriftSpanMs: number;
  private readonly maxDrift: number; // ms per ms
  private readonly maxRttMs: number;

  private samples: ClockSample[] = [];
  // Cached estimate, recomputed on every accepted sample.
  private drift = 0;
  private allowance = 0;
  private refTime = 0;
  private refOffset = 0;
  private evalNow = NaN;
  private evalOffset = 0;
  private evalBound = Infinity;
  /** Samples accepted / rejected (counters, for stats). */
  accepted = 0;
  rejected = 0;

  constructor(config: NetworkClockConfig = {}) {
    this.windowMs = requireInRange("windowMs", config.windowMs ?? 60_000, 1, 1e9);
    this.maxSamples = Math.floor(requireInRange("maxSamples", config.maxSamples ?? 256, 1, 1e6));
    this.trustMarginMs = requireInRange("trustMarginMs", config.trustMarginMs ?? 2, 0, 1e6);
    this.trustMarginFraction = requireInRange("trustMarginFraction", config.trustMarginFraction ?? 0.05, 0, 10);
    this.quantizationMs = requireInRange("quantizationMs", config.quantizationMs ?? 1, 0, 1e6);
    this.driftAllowance = requireInRange("driftAllowancePpm", config.driftAllowancePpm ?? 100, 0, 1e6) * 1e-6;
    this.unknownDrift = requireInRange("unknownDriftPpm", config.unknownDriftPpm ?? 500, 0, 1e6) * 1e-6;
    this.minDriftSpanMs = requireInRange("minDriftSpanMs", config.minDriftSpanMs ?? 2000, 0, 1e9);
    this.maxDrift = requireInRange("maxDriftPpm", config.maxDriftPpm ?? 1000, 0, 1e6) * 1e-6;
    this.maxRttMs = requireInRange("maxRttMs", config.maxRttMs ?? 10_000, 0, 1e9);
  }

  /** True once at least one sample was accepted. */
  get synchronized(): boolean {
    return this.samples.length > 0;
  }

  /**
   * One completed exchange. Returns false (and counts it) if the sample is impossible or stale:
   * non-finite values, negative round trip, or rtt above maxRttMs.
   */
  onSample(clientSendTime: number, serverTime: number, ackTime: number, holdMs = 0): boolean {
    const rtt = ackTime - clientSendTime - holdMs;
    if (
      !Number.isFinite(clientSendTime) ||
      !Number.isFinite(serverTime) ||
      !Number.isFinite(ackTime) ||
      !Number.isFinite(holdMs) ||
      holdMs < 0 ||
      rtt < 0 ||
      rtt > this.maxRttMs
    ) {
      this.rejected++;
      return false;
    }
    const localTime = (clientSendTime + ackTime) / 2;
    const offset = serverTime - holdMs / 2 - localTime;
    this.samples.push({ localTime, offset, rtt });
    this.accepted++;
    this.prune(ackTime);
    this.recompute();
    return true;
  }

  /** Estimated server - client offset at local time `localNow` (0 before any sample). */
  offsetMs(localNow: number): number {
    if (this.samples.length === 0) return 0;
    this.evaluate(localNow);
    return this.evalOffset;
  }

  /** Estimated server clock reading at local time `localNow`. */
  serverTime(localNow: number): number {
    return localNow + this.offsetMs(localNow);
  }

  /** Converts a server-clock time to local time (inverse of serverTime, to first order). */
  localTimeOf(serverTime: number): number {
    const guess = serverTime - this.offsetMs(serverTime);
    return serverTime - this.offsetMs(guess);
  }

  /** Estimated drift in parts per million (server clock runs faster when positive). */
  driftPpm(): number {
    return this.drift * 1e6;
  }

  /** Best round trip in the window (NaN before any sample). */
  bestRttMs(): number {
    let best = NaN;
    for (const s of this.samples) if (!(s.rtt >= best)) best = s.rtt;
    return best;
  }

  /**
   * A bound on |estimated offset - true offset| at `localNow` (Infinity before any sample).
   * See the file comment for why it holds.
   */
  errorBoundMs(localNow: number): number {
    if (this.samples.length === 0) return Infinity;
    this.evaluate(localNow);
    return this.evalBound;
  }

  /** Intersects the samples' intervals projected to `now` (cached per `now`). */
  private evaluate(now: number): void {
    if (now === this.evalNow) return;
    this.evalNow = now;
    let lo = -Infinity;
    let hi = Infinity;
    for (const s of this.samples) {
      const centre = s.offset + this.drift * (now - s.localTime);
      const half = s.rtt / 2 + this.quantizationMs + this.allowance * Math.abs(now - s.localTime);
      if (centre - half > lo) lo = centre - half;
      if (centre + half < hi) hi = centre + half;
    }
    if (lo <= hi) {
      this.evalOffset = (lo + hi) / 2;
      this.evalBound = (hi - lo) / 2;
      return;
    }
    const est = this.refOffset + this.drift * (now - this.refTime);
    let bound = Infinity;
    for (const s of this.samples) {
      const centre = s.offset + this.drift * (now - s.localTime);
      const half = s.rtt / 2 + this.quantizationMs + this.allowance * Math.abs(now - s.localTime);
      bound = Math.min(bound, Math.abs(est - centre) + half);
    }
    this.evalOffset = est;
    this.evalBound = bound;
  }

  private prune(now: number): void {
    const cutoff = now - this.windowMs;
    let drop = 0;
    while (drop < this.samples.length && this.samples[drop]!.localTime < cutoff) drop++;
    const excess = this.samples.length - drop - this.maxSamples;
    if (excess > 0) drop += excess;
    if (drop > 0) this.samples.splice(0, drop);
  }

  private trusted(): ClockSample[] {
    const best = this.bestRttMs();
    const limit = best + Math.max(this.trustMarginMs, this.trustMarginFraction * best);
    return this.samples.filter((s) => s.rtt <= limit);
  }

  private recompute(): void {
    const t = this.trusted();
    const last = this.samples[this.samples.length - 1]!;
    this.refTime = last.localTime;
    // Drift: least-squares slope of offset over local time across trusted samples.
    this.evalNow = NaN;
    this.drift = 0;
    this.allowance = this.unknownDrift;
    const n = t.length;
    if (n >= 3 && t[n - 1]!.localTime - t[0]!.localTime >= this.minDriftSpanMs) {
      let mt = 0;
      let mo = 0;
      for (const s of t) {
        mt += s.localTime;
        mo += s.offset;
      }
      mt /= n;
      mo /= n;
      let sxx = 0;
      let sxy = 0;
      for (const s of t) {
        sxx += (s.localTime - mt) ** 2;
        sxy += (s.localTime - mt) * (s.offset - mo);
      }
      if (sxx > 0) {
        const slope = sxy / sxx;
        let sse = 0;
        for (const s of t) sse += (s.offset - mo - slope * (s.localTime - mt)) ** 2;
        const stdErr = Math.sqrt(sse / (n - 2) / sxx);
        // Use the fit only when it says more than the prior ("drift unknown, within
        // unknownDriftPpm"). Over a few seconds, offsets that scatter by a few ms (path
        // asymmetry) give slopes off by ~1000 ppm, and projecting along such a slope moves the
        // estimate by several ms, while drift 0 with the prior allowance stays sound.
        const fitAllowance = this.driftAllowance + 3 * stdErr;
        if (fitAllowance < this.unknownDrift) {
          this.allowance = fitAllowance;
          this.drift = Math.max(-this.maxDrift, Math.min(this.maxDrift, slope));
        }
      }
    }
    // Offset: median of trusted offsets projected to the reference time.
    const projected = t.map((s) => s.offset + this.drift * (this.refTime - s.localTime)).sort((a, b) => a - b);
    const m = projected.length >> 1;
    this.refOffset = projected.length % 2 === 1 ? projected[m]! : (projected[m - 1]! + projected[m]!) / 2;
  }
}

/**
 * Lifts a u32 wire value (ms, wrapping every ~49.7 days) to the full-precision time nearest
 * `reference` (a full value on the same clock, e.g. the client's `now` for an echoed send time).
 * Wrap-around math: the signed 32-bit difference picks the nearest candidate.
 */
export function unwrapU32(reference: number, wire: number): number {
  const refLow = Math.floor(reference) >>> 0;
  const diff = ((wire >>> 0) - refLow) | 0; // signed distance modulo 2^32
  return Math.floor(reference) + diff;
}
