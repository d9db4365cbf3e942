/**
 * A small typed event emitter (no node:events, so it runs anywhere). Listeners run in the
 * order they were added. A listener that throws does not stop the others, the driver, or the
 * process: its error goes to the emitter's "error" listeners as a ListenerError (a Connection
 * without any passes it on to its Server's), and only when nobody listens for errors is it
 * reported as unhandled (reportUnhandledError: the console, never a crash).
 */
import { ListenerError } from "./errors.js";
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
    if (list.length === 1) return this.#call(type, list[0]!, value);
    for (const listener of list.slice()) this.#call(type, listener, value);
  }

  #call<K extends keyof Events>(type: K, listener: Listener<Events[K]>, value: Events[K]): void {
    try {
      listener(value);
    } catch (error) {
      // An "error" listener that throws has nowhere further to go.
      if (type === "error") reportUnhandledError(error);
      else this._routeError(new ListenerError(String(type), error));
    }
  }

  /**
   * @internal Where an application callback's error goes: this emitter's "error" listeners,
   * else `_unhandledError` (a Connection hands it to its Server there). Also called for the
   * accept hook's errors.
   */
  _routeError(error: ListenerError): void {
    const list = this.#listeners["error" as keyof Events];
    if (list !== undefined && list.length > 0) this.emit("error" as keyof Events, error as Events[keyof Events]);
    else this._unhandledError(error);
  }

  /** @internal An error no "error" listener of this emitter took. */
  protected _unhandledError(error: ListenerError): void {
    reportUnhandledError(error);
  }
}

/**
 * Reports an application callback's error nobody handled, without ending the process: the
 * console's error output with the stack, as the runtime shows an uncaught error. Not the
 * runtime's own path: Node's is an uncaughtException (the process exits), and Bun's and Deno's
 * `reportError` end the process too, where one throwing listener must not take a server down.
 */
export function reportUnhandledError(error: unknown): void {
  try {
    host.console.error(`ackwire: unhandled error in an application callback (add an "error" listener on the connection or server to handle it):`, error);
  } catch {
    // A console that throws: nothing else to report to.
  }
}
