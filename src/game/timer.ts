/**
 * Drives one sans-IO game module (anything with `pollTimeout()` / `handleTimeout(now)`) with a
 * single host timer, the way the API's driver drives an Endpoint: after every change, `poke()`
 * re-arms the timer if the module's deadline moved earlier; an early wake-up is a harmless no-op.
 * This is the only place in src/game that touches a timer; the modules themselves never do.
 */
import { host, monotonicNow } from "../api/host.js";

/** Host timers take a signed 32-bit ms count; a longer delay fires at once (Node warns and uses
 *  1 ms), so a far deadline would spin. Arm at most this far ahead: waking early is a no-op
 *  that re-arms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface Timed {
  pollTimeout(): number | undefined;
  handleTimeout(now: number): void;
}

export class ModuleTimer {
  #module: Timed;
  #handle: unknown;
  #armedFor: number | undefined;
  #stopped = false;

  constructor(module: Timed) {
    this.#module = module;
  }

  /** Call after anything that may have moved the module's deadline. */
  poke(): void {
    if (this.#stopped) return;
    const deadline = this.#module.pollTimeout();
    if (deadline === undefined) return;
    if (this.#armedFor !== undefined && this.#armedFor <= deadline) return;
    if (this.#handle !== undefined) host.clearTimeout(this.#handle);
    this.#armedFor = deadline;
    this.#handle = host.setTimeout(() => this.#fire(), Math.min(MAX_TIMER_MS, Math.max(0, deadline - monotonicNow())));
  }

  stop(): void {
    this.#stopped = true;
    if (this.#handle !== undefined) host.clearTimeout(this.#handle);
    this.#handle = undefined;
  }

  #fire(): void {
    this.#handle = undefined;
    this.#armedFor = undefined;
    if (this.#stopped) return;
    this.#module.handleTimeout(monotonicNow());
    this.poke();
  }
}
