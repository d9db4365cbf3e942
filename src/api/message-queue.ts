/**
 * One async iterator's bounded queue of messages, shared by the in-thread Connection
 * and the worker's: messages are queued only while the iterator is open, at most `limit` of them;
 * past that the iterator throws MessageQueueOverflowError once the queued ones are read. It
 * ends (done) after the disconnect, once drained.
 */
import type { Message } from "./connection.js";
import { MessageQueueOverflowError } from "./errors.js";

export class MessageQueue implements AsyncIterator<Message> {
  #items: Message[] = [];
  #head = 0;
  #waiter: { resolve: (result: IteratorResult<Message>) => void; reject: (error: unknown) => void } | undefined;
  #ended = false;
  #overflow: MessageQueueOverflowError | undefined;
  #detach: () => void;

  constructor(detach: () => void) {
    this.#detach = detach;
  }

  push(message: Message, limit: number): void {
    if (this.#ended) return;
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter.resolve({ value: message, done: false });
      return;
    }
    if (this.#items.length - this.#head >= limit) {
      this.#overflow = new MessageQueueOverflowError(limit);
      this.end();
      return;
    }
    this.#items.push(message);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#detach();
    const waiter = this.#waiter;
    if (waiter === undefined) return;
    this.#waiter = undefined;
    if (this.#overflow !== undefined) waiter.reject(this.#overflow);
    else waiter.resolve({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<Message>> {
    if (this.#head < this.#items.length) {
      const value = this.#items[this.#head++]!;
      // Drop the consumed prefix now and then, so a long-lived iterator does not grow forever.
      if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.#ended) {
      const overflow = this.#overflow;
      this.#overflow = undefined;
      return overflow !== undefined ? Promise.reject(overflow) : Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => (this.#waiter = { resolve, reject }));
  }

  return(): Promise<IteratorResult<Message>> {
    this.#items = [];
    this.#head = 0;
    this.#overflow = undefined;
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }
}
