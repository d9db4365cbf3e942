/**
 * FIFOs on plain arrays with moving head and tail indexes (no per-item nodes).
 *
 * An emptied queue keeps its array (up to KEPT_CAPACITY slots): a queue that fills and drains
 * once per packet (a channel's fresh messages, the received messages) would otherwise free its
 * backing store at every drain and allocate a new one at the next push, once per message.
 * Slots below the head are cleared at once (no references kept to shifted items); the live
 * items move to the front when the array is full and at least half of it is behind the head.
 */
export const KEPT_CAPACITY = 32;

export class Queue<T> {
  private items: (T | undefined)[] = [];
  private head = 0;
  private tail = 0;

  get length(): number {
    return this.tail - this.head;
  }
  push(item: T): void {
    const tail = this.tail;
    if (tail < this.items.length) {
      this.items[tail] = item;
      this.tail = tail + 1;
    } else if (this.head !== 0 && this.head * 2 >= tail) {
      this.compact();
      this.items[this.tail++] = item;
    } else {
      this.items.push(item);
      this.tail = tail + 1;
    }
  }
  peek(): T | undefined {
    return this.head < this.tail ? this.items[this.head] : undefined;
  }
  /** Item `i` places after the head (0 = head). */
  at(i: number): T | undefined {
    return i >= 0 && this.head + i < this.tail ? this.items[this.head + i] : undefined;
  }
  shift(): T | undefined {
    const head = this.head;
    if (head === this.tail) return undefined;
    const items = this.items;
    const item = items[head];
    items[head] = undefined;
    if (head + 1 === this.tail) {
      this.head = 0;
      this.tail = 0;
      if (items.length > KEPT_CAPACITY) this.items = [];
    } else {
      this.head = head + 1;
    }
    return item;
  }
  clear(): void {
    this.items = [];
    this.head = 0;
    this.tail = 0;
  }
  /** Move the live items to the front of the array. */
  private compact(): void {
    const items = this.items;
    const head = this.head;
    const n = this.tail - head;
    for (let i = 0; i < n; i++) items[i] = items[head + i];
    for (let i = n; i < this.tail; i++) items[i] = undefined;
    this.head = 0;
    this.tail = n;
  }
}

/** A FIFO of (item, number) pairs, kept interleaved in one Queue (item, number, item, ...). */
export class PairQueue<T> {
  private readonly slots = new Queue<T | number>();

  get length(): number {
    return this.slots.length >> 1;
  }
  push(item: T, n: number): void {
    this.slots.push(item);
    this.slots.push(n);
  }
  peekItem(): T | undefined {
    return this.slots.peek() as T | undefined;
  }
  peekNumber(): number {
    return this.slots.at(1) as number;
  }
  shift(): void {
    this.slots.shift();
    this.slots.shift();
  }
  clear(): void {
    this.slots.clear();
  }
}
