/**
 * Token-bucket pacer with debt.
 *
 * Tokens (bytes, or packets for the binary controller) refill at `rate` per millisecond up to
 * `capacity`. A send is allowed whenever the balance is positive; the send's cost is subtracted
 * and may drive the balance negative ("debt"), which delays the next send by debt / rate. So the
 * long-run rate never exceeds `rate`, a sender that has been idle may burst up to `capacity`,
 * and the caller never needs to know the next packet's size in advance.
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
    if (this.tokens > 0) return now;
    if (!(this.rate > 0)) return now + 1000; // defensive: a zero rate re-checks every second
    // Strictly positive balance needed: aim 1 ns past the exact refill point so floating-point
    // rounding of `now + wait` cannot leave the balance at exactly zero.
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
