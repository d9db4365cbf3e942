/**
 * The few host globals the demo uses, typed locally (the project compiles with `"types": []`).
 * Node, Bun and Deno 2 all provide a Node-compatible `process` global, timers and Web Crypto.
 */

export interface DemoStream {
  readonly isTTY?: boolean;
  readonly columns?: number;
  write(text: string): boolean;
}

interface DemoProcess {
  readonly argv: string[];
  readonly stdout: DemoStream;
  readonly stderr: DemoStream;
  exit(code: number): never;
  on?(event: "SIGINT" | "SIGTERM", listener: () => void): unknown;
}

interface DemoGlobals {
  process: DemoProcess;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
  performance: { now(): number };
  crypto: { subtle: { digest(algorithm: "SHA-256", data: Uint8Array): Promise<ArrayBuffer> } };
}

export const g = globalThis as unknown as DemoGlobals;

/** Monotonic milliseconds. */
export function now(): number {
  return g.performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => g.setTimeout(resolve, ms));
}

/** Command-line arguments after the script path (the same slot on node, bun and deno). */
export function scriptArgs(): string[] {
  return g.process.argv.slice(2);
}

/** SHA-256 digest bytes (Web Crypto: the same on all three runtimes). */
export async function sha256Bytes(data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await g.crypto.subtle.digest("SHA-256", data));
}

/** `promise`, or `fallback` if it has not settled within `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: unknown;
  return Promise.race([promise, new Promise<T>((resolve) => (timer = g.setTimeout(() => resolve(fallback), ms)))]).finally(() => g.clearTimeout(timer));
}
