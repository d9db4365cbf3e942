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
 *   oversleep is lost (measured on loopback: the 1000 B bulk sender stood idle between sends).
 *   This is the "pacing quantum" of Linux's fq qdisc / BBR pacing: release about one timer
 *   granularity of the rate per wake-up. With quantum 0 it is the plain debt bucket.
 *
 * A balance above `capacity` (the initial burst) is allowed to drain but is never refilled.
 */
export class Pacer {
  private tokens: number;
  private lastRefill = NaN;

  constructor(
    initialTokens: number,
    /** Units per millisecond. */
    public rate: number,
    public capacity: number,
    /** Debt allowed before a send has to wait (units); see the class comment. */
    public quantum = 0,
  ) {
    this.tokens = initialTokens;
  }

  private refill(now: number): void {
    if (Number.isNaN(this.lastRefill)) {
      this.lastRefill = now;
      return;
    }
    const dt = now - this.lastRefill;
    if (dt <= 0) return; // time never runs backwards for the pacer
    this.lastRefill = now;
    if (this.tokens >= this.capacity) return;
    this.tokens = Math.min(this.capacity, this.tokens + this.rate * dt);
  }

  /** Earliest time a send may happen; <= now means now. Always finite. */
  nextSendTime(now: number): number {
    this.refill(now);
    if (this.tokens > 0 || (this.quantum > 0 && this.tokens > -this.quantum)) return now;
    if (!(this.rate > 0)) return now + 1000; // defensive: a zero rate re-checks every second
    // Wait until the debt is paid, so the wake-up releases a whole quantum. Strictly positive
    // balance needed: aim 1 ns past the exact refill point so floating-point rounding of
    // `now + wait` cannot leave the balance at exactly zero.
    return now + -this.tokens / this.rate + 1e-6;
  }

  onSend(now: number, cost: number): void {
    this.refill(now);
    this.tokens -= cost;
  }

  /** Balance at `now` (for tests and stats). */
  balance(now: number): number {
    this.refill(now);
    return this.tokens;
  }
}
