/**
 * Seed 002's "simple binary congestion avoidance", exactly as the text describes it, behind the
 * CongestionController interface.
 *
 * - Two modes: good = 30 packets/s, bad = 10 packets/s. The mode sets the pacing rate; every
 *   datagram costs one packet token whatever its size. There is no window.
 * - The signal is RTT smoothed as Fiedler's flow control does it: an exponential moving average that moves 10%
 *   toward each sample (the first sample initializes it).
 * - Good -> bad at once when the smoothed RTT exceeds 250 ms.
 * - Bad -> good once conditions have been good (smoothed RTT <= 250 ms) for time t.
 * - If good mode falls back to bad less than 10 s after it was entered, t doubles (max 60 s).
 * - For every 10 s spent (continuously) in good mode, t halves (min 1 s).
 * - t starts at 1 s. The seed text does not give a starting value (it gives the 1 s floor and the
 *   60 s cap); we start at the floor so a connection that is briefly bad recovers quickly, and the
 *   doubling rule takes care of flapping links. Configurable.
 * - The controller starts in good mode (30 packets/s is ~64 kbit/s at the seed's 256-byte
 *   packets; the seed assumes every broadband link carries that). Configurable.
 *
 * Every threshold is configurable. Loss does not change the mode (the seed's rule is RTT only;
 * it mentions loss and jitter as possible refinements, which the default controller uses).
 */
import type { AckSummary, CongestionController, SentPacket } from "./controller.js";
import { plainSentPacket } from "./controller.js";
import { requireInRange } from "./errors.js";
import { Pacer } from "./pacer.js";

export interface BinaryConfig {
  goodPacketsPerSec?: number;
  badPacketsPerSec?: number;
  rttThresholdMs?: number;
  initialPenaltyMs?: number;
  minPenaltyMs?: number;
  maxPenaltyMs?: number;
  /** Falling back to bad within this long after entering good doubles t (seed: 10 s). */
  quickFallbackMs?: number;
  /** Each this long continuously in good mode halves t (seed: 10 s). */
  halvingPeriodMs?: number;
  /** Smoothing factor of the RTT moving average (seed: 0.1). */
  rttSmoothing?: number;
  initialMode?: BinaryMode;
  /** Packet size used only to express the rate as bits/s in bandwidthEstimateBps(). */
  nominalPacketBytes?: number;
}

export type BinaryMode = "good" | "bad";

export class BinaryController implements CongestionController {
  readonly name = "binary";
  readonly goodPps: number;
  readonly badPps: number;
  readonly rttThresholdMs: number;
  readonly minPenaltyMs: number;
  readonly maxPenaltyMs: number;
  readonly quickFallbackMs: number;
  readonly halvingPeriodMs: number;
  private readonly smoothing: number;
  private readonly nominalBytes: number;

  mode: BinaryMode;
  /** The seed's t: how long conditions must stay good before bad mode returns to good. */
  penaltyMs: number;
  /** Seed-002 smoothed RTT (NaN before the first sample). */
  smoothedRttMs = NaN;

  private started = false;
  private goodEnteredAt = 0;
  private halvingAnchor = 0;
  private goodConditionsSince = NaN;
  private lastNow = -Infinity;
  private readonly pacer: Pacer;

  constructor(config: BinaryConfig = {}) {
    this.goodPps = requireInRange("goodPacketsPerSec", config.goodPacketsPerSec ?? 30, 1e-3, 1e7);
    this.badPps = requireInRange("badPacketsPerSec", config.badPacketsPerSec ?? 10, 1e-3, 1e7);
    this.rttThresholdMs = requireInRange("rttThresholdMs", config.rttThresholdMs ?? 250, 0, 1e7);
    this.minPenaltyMs = requireInRange("minPenaltyMs", config.minPenaltyMs ?? 1000, 0, 1e9);
    this.maxPenaltyMs = requireInRange("maxPenaltyMs", config.maxPenaltyMs ?? 60_000, this.minPenaltyMs, 1e9);
    this.penaltyMs = requireInRange(
      "initialPenaltyMs",
      config.initialPenaltyMs ?? this.minPenaltyMs,
      this.minPenaltyMs,
      this.maxPenaltyMs,
    );
    this.quickFallbackMs = requireInRange("quickFallbackMs", config.quickFallbackMs ?? 10_000, 0, 1e9);
    this.halvingPeriodMs = requireInRange("halvingPeriodMs", config.halvingPeriodMs ?? 10_000, 1, 1e9);
    this.smoothing = requireInRange("rttSmoothing", config.rttSmoothing ?? 0.1, 1e-6, 1);
    this.nominalBytes = requireInRange("nominalPacketBytes", config.nominalPacketBytes ?? 1200, 1, 1e6);
    this.mode = config.initialMode ?? "good";
    // One packet of burst: the mode's packet rate is a hard ceiling on the long-run rate.
    this.pacer = new Pacer(1, this.currentPps() / 1000, 1);
  }

  private currentPps(): number {
    return this.mode === "good" ? this.goodPps : this.badPps;
  }

  /** Moves the mode clock to `now`: halving credits in good mode, recovery in bad mode. */
  private advance(now: number): void {
    if (!Number.isFinite(now)) return;
    if (!this.started) {
      this.started = true;
      this.goodEnteredAt = now;
      this.halvingAnchor = now;
    }
    if (now < this.lastNow) return;
    this.lastNow = now;
    if (this.mode === "good") {
      // "for each 10 seconds the connection is in good mode, halve t" (min 1 s)
      while (now - this.halvingAnchor >= this.halvingPeriodMs) {
        this.penaltyMs = Math.max(this.minPenaltyMs, this.penaltyMs / 2);
        this.halvingAnchor += this.halvingPeriodMs;
      }
    } else if (!Number.isNaN(this.goodConditionsSince) && now - this.goodConditionsSince >= this.penaltyMs) {
      this.setMode("good", now);
      this.goodEnteredAt = now;
      this.halvingAnchor = now;
    }
  }

  private setMode(mode: BinaryMode, now: number): void {
    this.mode = mode;
    this.pacer.nextSendTime(now); // settle the bucket at the old rate before switching
    this.pacer.rate = this.currentPps() / 1000;
  }

  /**
   * Feeds an RTT sample (also done by onAcks), weighted as `count` samples of it: a datagram's
   * acks of several packets move the average as far as one ack each would have. Exposed for
   * tests and custom drivers.
   */
  onRttSample(now: number, rttMs: number, count = 1): void {
    this.advance(now);
    if (!Number.isFinite(rttMs) || rttMs < 0) return;
    const gain = count === 1 ? this.smoothing : 1 - Math.pow(1 - this.smoothing, count);
    this.smoothedRttMs = Number.isNaN(this.smoothedRttMs)
      ? rttMs
      : this.smoothedRttMs + gain * (rttMs - this.smoothedRttMs);
    const bad = this.smoothedRttMs > this.rttThresholdMs;
    if (this.mode === "good") {
      if (bad) {
        // "drop from good mode to bad in under 10 seconds" -> double t (max 60 s)
        if (now - this.goodEnteredAt < this.quickFallbackMs) {
          this.penaltyMs = Math.min(this.maxPenaltyMs, this.penaltyMs * 2);
        }
        this.setMode("bad", now);
        this.goodConditionsSince = NaN;
      }
    } else if (bad) {
      this.goodConditionsSince = NaN;
    } else if (Number.isNaN(this.goodConditionsSince)) {
      this.goodConditionsSince = now;
      this.advance(now); // t may be 0 in custom configs
    }
  }

  onSent(now: number, bytes: number, inFlightBytes: number, out?: SentPacket): SentPacket {
    this.advance(now);
    this.pacer.onSend(now, 1);
    return plainSentPacket(now, bytes, inFlightBytes, out);
  }

  /** The newest packet's round trip (the shortest of the datagram's), weighted by the count. */
  onAcks(now: number, acks: AckSummary): void {
    const packets = acks.packets;
    const rtt = acks.rttMs === acks.rttMs ? acks.rttMs : now - packets[packets.length - 1]!.sentTime;
    this.onRttSample(now, rtt, packets.length);
  }

  onLoss(now: number): void {
    this.advance(now);
  }

  onAppLimited(now: number): void {
    this.advance(now);
  }

  canSend(): boolean {
    return true;
  }

  nextSendTime(now: number): number {
    this.advance(now);
    return this.pacer.nextSendTime(now);
  }

  windowBytes(): number {
    return Infinity;
  }

  pacingRateBytesPerSec(): number {
    return this.currentPps() * this.nominalBytes;
  }

  bandwidthEstimateBps(): number {
    return this.currentPps() * this.nominalBytes * 8;
  }
}
