/**
 * Per-address token buckets in a bounded table. Spoofed source addresses are free to an
 * attacker, so the table must not grow with them: when it is full the least recently inserted
 * entry is evicted (a Map iterates in insertion order). Eviction can only make the limiter more
 * lenient for the evicted address (it starts again with a full bucket); it never costs memory.
 */
import type { Address } from "./sans-io.js";

interface Bucket {
  tokens: number;
  updated: number;
}

export class AddressRateLimiter {
  private readonly buckets = new Map<Address, Bucket>();

  constructor(
    /** Tokens added per second (the sustained rate). */
    private readonly ratePerSecond: number,
    /** Bucket size (the burst allowed). */
    private readonly burst: number,
    /** Most addresses tracked at once. */
    private readonly maxEntries: number,
  ) {}

  /**
   * Take one token for `address` at `now`; false means over the limit (drop the packet).
   * `reserve`: tokens this call must leave in the bucket (kept for callers that pass less).
   */
  allow(now: number, address: Address, reserve = 0): boolean {
    let bucket = this.buckets.get(address);
    if (bucket === undefined) {
      if (this.buckets.size >= this.maxEntries) {
        const oldest = this.buckets.keys().next().value as Address;
        this.buckets.delete(oldest);
      }
      bucket = { tokens: this.burst, updated: now };
      this.buckets.set(address, bucket);
    } else if (now > bucket.updated) {
      bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.updated) * this.ratePerSecond) / 1000);
      bucket.updated = now;
    }
    if (bucket.tokens < 1 + reserve) return false;
    bucket.tokens -= 1;
    return true;
  }

  get size(): number {
    return this.buckets.size;
  }
}
