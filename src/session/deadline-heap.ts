/**
 * The endpoint's timer wheel-of-one: a binary min-heap of (time, connection) wake-ups, so
 * `pollTimeout()` is O(1) and a timer pass costs O(due * log n) with 1,000+ connections instead
 * of a scan over all of them.
 *
 * Entries are hints, not truths: a connection's real deadline is whatever its timer table says
 * when the entry pops. A connection pushes a new entry only when its deadline moves EARLIER than
 * the entry it already has in the heap; later deadlines are picked up when the old entry pops
 * and is re-pushed. So the heap holds at most a few entries per connection.
 */
export interface Wakeable {
  /** Time of the earliest entry this object has in the heap (Infinity if none). */
  scheduledAt: number;
}

export class DeadlineHeap<T extends Wakeable> {
  private times: number[] = [];
  private items: T[] = [];

  get size(): number {
    return this.times.length;
  }

  /** Earliest time in the heap, or undefined. */
  peekTime(): number | undefined {
    return this.times.length === 0 ? undefined : this.times[0];
  }

  /** Make sure `item` wakes up no later than `time`. */
  schedule(item: T, time: number): void {
    if (!(time < item.scheduledAt)) return; // an earlier (or equal) entry is already queued
    item.scheduledAt = time;
    const times = this.times;
    const items = this.items;
    let i = times.length;
    times.push(time);
    items.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (times[parent] <= time) break;
      times[i] = times[parent];
      items[i] = items[parent];
      i = parent;
    }
    times[i] = time;
    items[i] = item;
  }

  /** Remove and return the earliest item if its time is <= now. Clears its `scheduledAt`
   *  if this was its earliest entry. */
  popDue(now: number): T | undefined {
    const times = this.times;
    if (times.length === 0 || times[0] > now) return undefined;
    const items = this.items;
    const top = items[0];
    const topTime = times[0];
    const lastTime = times.pop() as number;
    const lastItem = items.pop() as T;
    const n = times.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && times[r] < times[l] ? r : l;
        if (times[c] >= lastTime) break;
        times[i] = times[c];
        items[i] = items[c];
        i = c;
      }
      times[i] = lastTime;
      items[i] = lastItem;
    }
    if (top.scheduledAt === topTime) top.scheduledAt = Infinity;
    return top;
  }
}
