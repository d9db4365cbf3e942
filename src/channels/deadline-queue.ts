/**
 * The messages of one ChannelSet that were sent with a deadline, earliest deadline first: a
 * binary min-heap on OutMessage.deadline. Messages are not taken out when they settle early;
 * they leave when their deadline comes, so the heap holds the messages sent within the longest
 * deadline in use.
 */
import type { OutMessage } from "./out-message.js";

export class DeadlineQueue {
  private readonly heap: OutMessage[] = [];

  get size(): number {
    return this.heap.length;
  }

  peek(): OutMessage | undefined {
    return this.heap[0];
  }

  push(m: OutMessage): void {
    const h = this.heap;
    let i = h.length;
    h.push(m);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent].deadline <= m.deadline) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i] = m;
  }

  pop(): OutMessage | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (top === undefined || last === undefined || h.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= h.length) break;
      const right = left + 1;
      const child = right < h.length && h[right].deadline < h[left].deadline ? right : left;
      if (h[child].deadline >= last.deadline) break;
      h[i] = h[child];
      i = child;
    }
    h[i] = last;
    return top;
  }
}
