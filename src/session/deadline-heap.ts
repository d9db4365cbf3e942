/**
 * The endpoint's timer queue: an indexed binary min-heap of (time, connection), one entry per
 * connection at its exact next deadline. `pollTimeout()` is O(1), moving a connection's deadline
 * is O(log n) (O(1) when it did not change), and a timer pass visits only the connections that
 * are really due.
 *
 * Each item remembers its own position (`heapIndex`, -1 when not queued), so an entry can be
 * moved in place. (An earlier version kept "hints" that were only ever pushed earlier; about
 * three of four pops then found nothing due, with 30 Hz traffic moving the ack timer on every
 * packet.)
 */
export interface Wakeable {
  /** Position in the heap, -1 if not queued. Owned by the heap. */
  heapIndex: number;
}

export class DeadlineHeap<T extends Wakeable> {
  private readonly times: number[] = [];
  private readonly items: T[] = [];

  get size(): number {
    return this.times.length;
  }

  /** Earliest time in the heap, or undefined. */
  peekTime(): number | undefined {
    return this.times.length === 0 ? undefined : this.times[0];
  }

  /** Make `item` wake up at `time` exactly (Infinity: not at all). */
  schedule(item: T, time: number): void {
    const i = item.heapIndex;
    if (time === Infinity) {
      if (i >= 0) this.removeAt(i);
      return;
    }
    if (i < 0) {
      this.times.push(time);
      this.items.push(item);
      this.siftUp(this.times.length - 1, time, item);
      return;
    }
    const old = this.times[i];
    if (time < old) this.siftUp(i, time, item);
    else if (time > old) this.siftDown(i, time, item);
  }

  /** Take `item` out of the heap (no-op if it is not queued). */
  remove(item: T): void {
    if (item.heapIndex >= 0) this.removeAt(item.heapIndex);
  }

  /** Remove and return the earliest item if its time is <= now. */
  popDue(now: number): T | undefined {
    const times = this.times;
    if (times.length === 0 || times[0] > now) return undefined;
    const top = this.items[0];
    this.removeAt(0);
    return top;
  }

  private removeAt(i: number): void {
    const times = this.times;
    const items = this.items;
    items[i].heapIndex = -1;
    const lastTime = times.pop() as number;
    const lastItem = items.pop() as T;
    if (i === times.length) return; // it was the last entry
    // Put the last entry in the hole, then restore the order in whichever direction it needs.
    if (i > 0 && times[(i - 1) >> 1] > lastTime) this.siftUp(i, lastTime, lastItem);
    else this.siftDown(i, lastTime, lastItem);
  }

  /** Place (time, item) at hole `i` or above. */
  private siftUp(i: number, time: number, item: T): void {
    const times = this.times;
    const items = this.items;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (times[parent] <= time) break;
      times[i] = times[parent];
      const moved = items[parent];
      items[i] = moved;
      moved.heapIndex = i;
      i = parent;
    }
    times[i] = time;
    items[i] = item;
    item.heapIndex = i;
  }

  /** Place (time, item) at hole `i` or below. */
  private siftDown(i: number, time: number, item: T): void {
    const times = this.times;
    const items = this.items;
    const n = times.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && times[r] < times[l] ? r : l;
      if (times[c] >= time) break;
      times[i] = times[c];
      const moved = items[c];
      items[i] = moved;
      moved.heapIndex = i;
      i = c;
    }
    times[i] = time;
    items[i] = item;
    item.heapIndex = i;
  }
}
