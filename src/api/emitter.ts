/**
 * A small typed event emitter (no node:events, so it runs anywhere). Listeners run in the
 * order they were added; a listener that throws is reported once through `reportError` and
 * does not stop the others or the driver.
 */
import { host } from "./host.js";

export type Listener<T> = (value: T) => void;

export class TypedEmitter<Events extends { [K in keyof Events]: unknown }> {
  #listeners: { [K in keyof Events]?: Listener<Events[K]>[] } = {};

  on<K extends keyof Events>(type: K, listener: Listener<Events[K]>): this {
    (this.#listeners[type] ??= []).push(listener);
    return this;
  }

  once<K extends keyof Events>(type: K, listener: Listener<Events[K]>): this {
    const wrapper: Listener<Events[K]> = (value) => {
      this.off(type, wrapper);
      listener(value);
    };
    return this.on(type, wrapper);
  }

  off<K extends keyof Events>(type: K, listener: Listener<Events[K]>): this {
    const list = this.#listeners[type];
    if (list !== undefined) {
      const i = list.indexOf(listener);
      if (i >= 0) list.splice(i, 1);
    }
    return this;
  }

  listenerCount<K extends keyof Events>(type: K): number {
    return this.#listeners[type]?.length ?? 0;
  }

  protected emit<K extends keyof Events>(type: K, value: Events[K]): void {
    const list = this.#listeners[type];
    if (list === undefined || list.length === 0) return;
    // Copy only when there is more than one: a listener may remove itself (once) while running.
    if (list.length === 1) return this.#call(list[0]!, value);
    for (const listener of list.slice()) this.#call(listener, value);
  }

  #call<T>(listener: Listener<T>, value: T): void {
    try {
      listener(value);
    } catch (error) {
      reportListenerError(error);
    }
  }
}

/** Rethrows outside the driver's call stack, so the runtime's unhandled-error path sees it
 *  (an application callback's error: listeners, the accept hook). */
export function reportListenerError(error: unknown): void {
  host.queueMicrotask(() => {
    throw error;
  });
}
