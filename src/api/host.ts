/**
 * The few host globals the public API layer uses, typed locally.
 *
 * Everything here exists on Node, Bun and Deno alike (timers, microtasks, performance.now,
 * Web Crypto's getRandomValues, console). The project compiles with `"types": []`, so nothing
 * leaks in by accident; runtime-specific globals live only in runtimes/<name>/.
 */

export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

interface NeutralGlobals {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  setImmediate?: (fn: () => void) => unknown;
  queueMicrotask(fn: () => void): void;
  performance: { now(): number };
  crypto: { getRandomValues<T extends Uint32Array | Uint8Array>(array: T): T };
  console: { warn(...args: unknown[]): void; error(...args: unknown[]): void };
  /** Node >= 17, Bun, Deno: with a transfer list, detaches the originals at once. */
  structuredClone<T>(value: T, options?: { transfer?: ArrayBuffer[] }): T;
}

export const host = globalThis as unknown as NeutralGlobals;

/** Monotonic milliseconds; the driver reads it once per wake-up and passes it to the core. */
export function monotonicNow(): number {
  return host.performance.now();
}

/** A crypto-random 32-bit seed for the Endpoint (initial sequences, cookie secret, salts). */
export function randomSeed(): number {
  return host.crypto.getRandomValues(new Uint32Array(1))[0]! >>> 0;
}

/** 16 crypto-random bytes: the Endpoint's secret (cookies, salts, session ids, tokens). */
export function randomSecret(): Uint8Array {
  return host.crypto.getRandomValues(new Uint8Array(16));
}

/** Runs `fn` after the current burst of I/O callbacks (setImmediate where it exists). */
export function deferToNextTurn(fn: () => void): void {
  if (host.setImmediate !== undefined) host.setImmediate(fn);
  else host.setTimeout(fn, 0);
}
