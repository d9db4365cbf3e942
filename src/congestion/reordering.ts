/**
 * The reordering window of the time threshold (RFC 8985 RACK's reo_wnd, §6.2 step 4), in packet
 * sequences of one connection (16-bit, wrapping).
 *
 * Interface:
 *   const w = new ReorderingWindow();
 *   w.onLoss(next);                       // a packet was declared lost (may start a recovery)
 *   w.onSpuriousLoss(next, minRtt, srtt); // one declared lost behind a newer acked one was acked
 *   w.onAcked(largestAcked);              // ends a round and a recovery; true if mult fell to 1
 *   w.windowMs(minRtt, srtt, rtt);        // what the time threshold adds to the RTT
 * (`next`: the sequence the next packet sent will have.)
 *
 * A packet sent before the newest acknowledged one is lost once it is older than RTT + window.
 * The caller decides which spurious losses count (the session: only packets sent while the
 * flow was not application-limited). Until a spurious loss is seen the window is RFC 9002's
 * (RTT / 8: the 9/8 time threshold). The first late ack of a packet declared lost behind a
 * newer one (RACK's DSACK) makes it min(mult x min RTT / 4, SRTT) with mult = 1, and each later
 * one in a new round (RACK's dsack_round: the round ends when a packet sent after it is
 * acknowledged) adds 1 to mult. Each such ack also sets `persist` to 16; each recovery (from a
 * declared loss to the ack of a packet sent after it) that ends with no spurious loss in it
 * takes 1 off, and at 0 mult is 1 again (RFC 8985: a path seen to reorder keeps a window of
 * min RTT / 4). The window never goes below RTT / 8, so it never declares a loss sooner than
 * RFC 9002's threshold.
 *
 * The state is six numbers, kept here so the unit can move into the engine as it is.
 */
import { sequenceGreaterThan } from "../engine/sequence.js";

/** RFC 8985 §6.2: recoveries without a spurious loss before the window is reset. */
export const REORDER_PERSIST_RECOVERIES = 16;
/** mult is capped (the window is capped at SRTT anyway; this only bounds the counter). */
const MAX_MULT = 255;
/** RFC 9002 §6.1.2's kTimeThreshold, 9/8: the window before any reordering is seen. */
const BASE_FRACTION = 1 / 8;
const NONE = -1;

export class ReorderingWindow {
  /** 0 until a spurious loss is seen (RFC 9002's window), else RACK's reo_wnd_mult. */
  private mult = 0;
  /** RACK's reo_wnd_persist. */
  private persist = 0;
  /** RACK's dsack_round: the sequence whose ack ends the round that last grew mult, or NONE. */
  private roundEnd = NONE;
  /** The sequence whose ack ends the current recovery, or NONE outside one. */
  private recoveryEnd = NONE;
  /** A spurious loss was seen during the current recovery. */
  private recoverySpurious = false;
  /** Lifetime count of window growths (stats, tests). */
  growths = 0;

  /** RACK's reo_wnd_mult (0: no reordering seen since the last reset). */
  get multiplier(): number {
    return this.mult;
  }

  get persistence(): number {
    return this.persist;
  }

  /** A packet was declared lost; `nextSequence` is the sequence the next packet will have. */
  onLoss(nextSequence: number): void {
    if (this.recoveryEnd === NONE) {
      this.recoveryEnd = nextSequence & 0xffff;
      this.recoverySpurious = false;
    }
  }

  /**
   * A packet declared lost while a newer one had been acknowledged was acknowledged after all:
   * the path reorders by more than the window. Grows the window once per round. Returns true if
   * the window changed.
   */
  onSpuriousLoss(nextSequence: number, minRttMs: number, srttMs: number): boolean {
    this.recoverySpurious = true;
    if (this.roundEnd !== NONE) return false;
    this.roundEnd = nextSequence & 0xffff;
    this.persist = REORDER_PERSIST_RECOVERIES;
    // Once the window reaches SRTT a larger mult changes nothing.
    if (this.mult >= MAX_MULT || (this.mult * minRttMs) / 4 >= srttMs) return false;
    this.mult++;
    this.growths++;
    return true;
  }

  /**
   * Acks were processed and `largestAcked` is the newest acknowledged sequence (-1: none). Ends
   * the growth round and the recovery the ack passes. Returns true if the window went back to
   * RFC 9002's (after REORDER_PERSIST_RECOVERIES recoveries without a spurious loss).
   */
  onAcked(largestAcked: number): boolean {
    if (largestAcked < 0) return false;
    if (this.roundEnd !== NONE && !sequenceGreaterThan(this.roundEnd, largestAcked)) this.roundEnd = NONE;
    if (this.recoveryEnd === NONE || sequenceGreaterThan(this.recoveryEnd, largestAcked)) return false;
    this.recoveryEnd = NONE;
    if (this.recoverySpurious || this.mult === 0) return false;
    // RFC 8985: back to mult 1, not to no window: the path has been seen to reorder.
    if (this.mult === 1 || --this.persist > 0) return false;
    this.mult = 1;
    return true;
  }

  /**
   * The reordering window in ms for a path of min RTT `minRttMs` and smoothed RTT `srttMs`,
   * whose time threshold starts from `rttMs` (the larger of the smoothed and the latest RTT):
   * the threshold is rttMs + this.
   */
  windowMs(minRttMs: number, srttMs: number, rttMs: number): number {
    const base = BASE_FRACTION * rttMs;
    if (this.mult === 0) return base;
    // RFC 8985 §6.2: min(reo_wnd_mult * min_RTT / 4, SRTT).
    return Math.max(base, Math.min((this.mult * minRttMs) / 4, srttMs));
  }
}
