/**
 * The endpoint's timer queue: an indexed binary min-heap of (time, connection slot), one entry
 * per slot at its exact next deadline. `pollTimeout()` is O(1), moving a slot's deadline is
 * O(log n) (O(1) when it did not change), and a timer pass visits only the slots that are
 * really due.
 *
 * Keyed by slot number, with every field in three typed arrays owned by the heap (time per
 * entry, slot per entry, entry per slot): a sift moves numbers only. An earlier version held
 * the connection objects and kept each one's heap position in the object itself, so moving one
 * deadline wrote into up to log2(n) other connections — with a thousand connections, each a
 * cold cache line, for every datagram. (Before that it kept "hints" that were only ever pushed
 * earlier; about three of four pops then found nothing due.)
 */
export class DeadlineHeap {
  /** Entry i's time and slot, for entries 0..size-1 (heap order). */
  private readonly times: Float64Array;
  private readonly entrySlot: Int32Array;
  /** Slot s's entry index, -1 when not queued. */
  private readonly position: Int32Array;
  private count = 0;

  constructor(slots: number) {
    this.times = new Float64Array(slots);
    this.entrySlot = new Int32Array(slots);
    this.position = new Int32Array(slots).fill(-1);
  }

  get size(): number {
    return this.count;
  }

  /** Earliest time in the heap, or undefined. */
  peekTime(): number | undefined {
    return this.count === 0 ? undefined : this.times[0];
  }

  /** True if `slot` has an entry. */
  has(slot: number): boolean {
    return this.position[slot] >= 0;
  }

  /** Make `slot` wake up at `time` exactly (Infinity: not at all). */
  schedule(slot: number, time: number): void {
    const i = this.position[slot];
    if (time === Infinity) {
      if (i >= 0) this.removeAt(i);
      return;
    }
    if (i < 0) {
      this.siftUp(this.count++, time, slot);
      return;
    }
    const old = this.times[i];
    if (time < old) this.siftUp(i, time, slot);
    else if (time > old) this.siftDown(i, time, slot);
  }

  /** Take `slot` out of the heap (no-op if it is not queued). */
  remove(slot: number): void {
    const i = this.position[slot];
    if (i >= 0) this.removeAt(i);
  }

  /** Remove and return the earliest slot if its time is <= now, else -1. */
  popDue(now: number): number {
    if (this.count === 0 || this.times[0] > now) return -1;
    const top = this.entrySlot[0];
    this.removeAt(0);
    return top;
  }

  private removeAt(i: number): void {
    const times = this.times;
    this.position[this.entrySlot[i]] = -1;
    const last = --this.count;
    if (i === last) return; // it was the last entry
    const lastTime = times[last];
    const lastSlot = this.entrySlot[last];
    // Put the last entry in the hole, then restore the order in whichever direction it needs.
    if (i > 0 && times[(i - 1) >> 1] > lastTime) this.siftUp(i, lastTime, lastSlot);
    else this.siftDown(i, lastTime, lastSlot);
  }

  // The sift loops write the three arrays themselves rather than through a shared put(i, time,
  // slot) helper: reschedule() inlines schedule, nextDeadline and both sifts, and V8's inlining
  // budget runs out before put(), and every level of a sift then becomes a call that boxes
  // `time` in a new heap number.

  /** Place (time, slot) at hole `i` or above. */
  private siftUp(i: number, time: number, slot: number): void {
    const times = this.times;
    const entrySlot = this.entrySlot;
    const position = this.position;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (times[parent] <= time) break;
      times[i] = times[parent];
      const moved = entrySlot[parent];
      entrySlot[i] = moved;
      position[moved] = i;
      i = parent;
    }
    times[i] = time;
    entrySlot[i] = slot;
    position[slot] = i;
  }

  /** Place (time, slot) at hole `i` or below. */
  private siftDown(i: number, time: number, slot: number): void {
    const times = this.times;
    const entrySlot = this.entrySlot;
    const position = this.position;
    const n = this.count;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && times[r] < times[l] ? r : l;
      if (times[c] >= time) break;
      times[i] = times[c];
      const moved = entrySlot[c];
      entrySlot[i] = moved;
      position[moved] = i;
      i = c;
    }
    times[i] = time;
    entrySlot[i] = slot;
    position[slot] = i;
  }
}
