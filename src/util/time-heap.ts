/**
 * A binary min-heap ordered by `(time, order)`: earliest time first, and among equal times the
 * smallest `order` (the insertion sequence) first, so ties resolve in send order.
 */

export interface HeapItem {
  time: number;
  order: number;
}

export class TimeHeap<T extends HeapItem> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const items = this.items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(item, items[parent])) break;
      items[i] = items[parent];
      i = parent;
    }
    items[i] = item;
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    // Sift the former last element down from the root.
    const n = items.length;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && before(items[right], items[left]) ? right : left;
      if (!before(items[child], last)) break;
      items[i] = items[child];
      i = child;
    }
    items[i] = last;
    return top;
  }

  clear(): void {
    this.items.length = 0;
  }
}

function before(a: HeapItem, b: HeapItem): boolean {
  return a.time < b.time || (a.time === b.time && a.order < b.order);
}
