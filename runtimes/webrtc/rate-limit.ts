/**
 * Offers per second per client IP: a token bucket per address (a burst of twice the rate).
 * Bounded: at most MAX_TRACKED addresses; past that, full buckets are forgotten first, and if
 * none is, every bucket is (a flood from many addresses then meets the pending-peer bound).
 */
const MAX_TRACKED = 4096;

export class OfferRateLimit {
  readonly #rate: number;
  readonly #burst: number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(perSecond: number) {
    this.#rate = perSecond;
    this.#burst = Math.max(1, 2 * perSecond);
  }

  /** Takes one offer's token for `ip` at `nowMs`; false if its bucket is empty. */
  take(ip: string, nowMs: number): boolean {
    let bucket = this.#buckets.get(ip);
    if (bucket === undefined) {
      if (this.#buckets.size >= MAX_TRACKED) this.#forget(nowMs);
      bucket = { tokens: this.#burst, at: nowMs };
      this.#buckets.set(ip, bucket);
    }
    bucket.tokens = Math.min(this.#burst, bucket.tokens + ((nowMs - bucket.at) / 1000) * this.#rate);
    bucket.at = nowMs;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  get tracked(): number {
    return this.#buckets.size;
  }

  #forget(nowMs: number): void {
    for (const [ip, b] of this.#buckets) if (b.tokens + ((nowMs - b.at) / 1000) * this.#rate >= this.#burst) this.#buckets.delete(ip);
    if (this.#buckets.size >= MAX_TRACKED) this.#buckets.clear();
  }
}
