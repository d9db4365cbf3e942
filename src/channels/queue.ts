/** A FIFO on a plain array with a moving head, compacted now and then (no per-item nodes). */
export class Queue<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }
  push(item: T): void {
    this.items.push(item);
  }
  peek(): T | undefined {
    return this.head < this.items.length ? this.items[this.head] : undefined;
  }
  /** Item `i` places after the head (0 = head). */
  at(i: number): T | undefined {
    return this.items[this.head + i];
  }
  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      this.items.length = 0;
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
  clear(): void {
    this.items.length = 0;
    this.head = 0;
  }
}

/** A FIFO of (item, number) pairs in two parallel arrays. */
export class PairQueue<T> {
  private readonly items = new Queue<T>();
  private numbers: number[] = [];
  private numbersHead = 0;

  get length(): number {
    return this.items.length;
  }
  push(item: T, n: number): void {
    this.items.push(item);
    this.numbers.push(n);
  }
  peekItem(): T | undefined {
    return this.items.peek();
  }
  peekNumber(): number {
    return this.numbers[this.numbersHead];
  }
  shift(): void {
    this.items.shift();
    this.numbersHead++;
    if (this.numbersHead === this.numbers.length) {
      this.numbers.length = 0;
      this.numbersHead = 0;
    } else if (this.numbersHead >= 1024 && this.numbersHead * 2 >= this.numbers.length) {
      this.numbers = this.numbers.slice(this.numbersHead);
      this.numbersHead = 0;
    }
  }
  clear(): void {
    this.items.clear();
    this.numbers.length = 0;
    this.numbersHead = 0;
  }
}
