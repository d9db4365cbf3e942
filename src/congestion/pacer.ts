/**
 * Token-bucket pacer with debt and a send quantum.
 *
 * Tokens (bytes, or packets for the binary controller) refill at `rate` per millisecond up to
 * `capacity`. A send is allowed while the balance is above -`quantum`; the send's cost is
 * subtracted and may drive the balance below zero ("debt"). Once the debt reaches the quantum,
 * the next send waits until the balance is back at zero, so each wake-up releases a whole
 * quantum (plus whatever the timer overslept). So:
 * - the long-run rate never exceeds `rate` (the debt is bounded by quantum + one send);
 * - a sender that has been idle may burst up to capacity + quantum;
 * - the caller never needs to know the next packet's size in advance;
 * - the caller is never asked to wake up sooner than quantum / rate after a quantum was
 *   released. Real runtimes' timers fire no sooner than 1 ms (Node, Bun, Deno) and often
 *   later; a pacer that asks for a wake-up every few microseconds (one packet at a high rate)
 *   gets one 1+ ms timer per packet, and everything the bucket could not hold during the
 *   oversleep is lost (a bulk sender stands idle between sends).
 *   This is the "pacing quantum" of Linux's fq qdisc / BBR pacing: release about one timer
 *   granularity of the rate per wake-up. With quantum 0 it is the plain debt bucket.
 *
 * A balance above `capacity` (the initial burst) is allowed to drain but is never refilled.
 */
import { doubleArray } from "./doubles.js";

/**
 * A pacer's five values, stored from some offset `at` in a double array (pacerSlots long):
 * the Pacer class keeps them in an array of its own, the default controller inside its state
 * array, so a send or an ack touches one object (doubles.ts).
 */
export const PACER_TOKENS = 0;
export const PACER_LAST_REFILL = 1;
/** Units per millisecond. */
export const PACER_RATE = 2;
export const PACER_CAPACITY = 3;
/** Debt allowed before a send has to wait (units); see the class comment. */
export const PACER_QUANTUM = 4;
export const PACER_SLOTS = 5;

/** Writes a fresh pacer's state at `at`. */
export function pacerInit(s: number[], at: number, initialTokens: number, rate: number, capacity: number, quantum: number): void {
  s[at + PACER_TOKENS] = initialTokens;
  s[at + PACER_LAST_REFILL] = NaN;
  s[at + PACER_RATE] = rate;
  s[at + PACER_CAPACITY] = capacity;
  s[at + PACER_QUANTUM] = quantum;
}

function refill(s: number[], at: number, now: number): void {
  const last = s[at + PACER_LAST_REFILL];
  if (Number.isNaN(last)) {
    s[at + PACER_LAST_REFILL] = now;
    return;
  }
  const dt = now - last;
  if (dt <= 0) return; // time never runs backwards for the pacer
  s[at + PACER_LAST_REFILL] = now;
  const tokens = s[at + PACER_TOKENS];
  const capacity = s[at + PACER_CAPACITY];
  if (tokens >= capacity) return;
  s[at + PACER_TOKENS] = Math.min(capacity, tokens + s[at + PACER_RATE] * dt);
}

/** Earliest time a send may happen; <= now means now. Always finite. */
export function pacerNextSendTime(s: number[], at: number, now: number): number {
  refill(s, at, now);
  const tokens = s[at + PACER_TOKENS];
  const quantum = s[at + PACER_QUANTUM];
  if (tokens > 0 || (quantum > 0 && tokens > -quantum)) return now;
  const rate = s[at + PACER_RATE];
  if (!(rate > 0)) return now + 1000; // defensive: a zero rate re-checks every second
  // Wait until the debt is paid, so the wake-up releases a whole quantum. Strictly positive
  // balance needed: aim 1 ns past the exact refill point so floating-point rounding of
  // `now + wait` cannot leave the balance at exactly zero.
  return now + -tokens / rate + 1e-6;
}

export function pacerOnSend(s: number[], at: number, now: number, cost: number): void {
  refill(s, at, now);
  s[at + PACER_TOKENS] -= cost;
}

export class Pacer {
  private readonly s = doubleArray(PACER_SLOTS);

  constructor(
    initialTokens: number,
    /** Units per millisecond. */
    rate: number,
    capacity: number,
    /** Debt allowed before a send has to wait (units); see the class comment. */
    quantum = 0,
  ) {
    pacerInit(this.s, 0, initialTokens, rate, capacity, quantum);
  }

  /** Units per millisecond. */
  get rate(): number {
    return this.s[PACER_RATE];
  }
  set rate(v: number) {
    this.s[PACER_RATE] = v;
  }
  get capacity(): number {
    return this.s[PACER_CAPACITY];
  }
  set capacity(v: number) {
    this.s[PACER_CAPACITY] = v;
  }
  get quantum(): number {
    return this.s[PACER_QUANTUM];
  }
  set quantum(v: number) {
    this.s[PACER_QUANTUM] = v;
  }

  /** Earliest time a send may happen; <= now means now. Always finite. */
  nextSendTime(now: number): number {
    return pacerNextSendTime(this.s, 0, now);
  }

  onSend(now: number, cost: number): void {
    pacerOnSend(this.s, 0, now, cost);
  }

  /** Balance at `now` (for tests and stats). */
  balance(now: number): number {
    refill(this.s, 0, now);
    return this.s[PACER_TOKENS];
  }
}
