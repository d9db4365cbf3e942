// The few host globals and modules the benchmark touches, typed locally.
//
// The project's tsconfig has `"types": []` so that nothing under src/ can lean on
// Node, Bun or Deno globals by accident. A `/// <reference types="node" />` here would
// leak Node's globals into the whole program (src/ included), so the bench declares the
// narrow slice it uses and loads `node:*` modules through a string-typed dynamic import.

export type RuntimeName = "node" | "bun" | "deno";

interface HostGlobals {
  console: { log(...a: unknown[]): void; error(...a: unknown[]): void };
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(id: unknown): void;
  setImmediate?: (fn: () => void) => unknown;
  queueMicrotask(fn: () => void): void;
  performance: { now(): number };
  TextDecoder: new () => { decode(b: Uint8Array, opt?: { stream: boolean }): string };
  URL: new (url: string, base?: string) => { pathname: string; href: string };
  process?: {
    argv: string[];
    exit(code?: number): never;
    versions: Record<string, string | undefined>;
    stdout: { write(s: string): boolean };
  };
  Bun?: { version: string };
  Deno?: { version: { deno: string }; args: string[]; exit(code?: number): never };
}

export const g = globalThis as unknown as HostGlobals;

export function runtimeName(): RuntimeName {
  if (g.Bun !== undefined) return "bun";
  if (g.Deno !== undefined) return "deno";
  return "node";
}

export function runtimeVersion(): string {
  if (g.Bun !== undefined) return g.Bun.version;
  if (g.Deno !== undefined) return g.Deno.version.deno;
  return g.process?.versions.node ?? "unknown";
}

/** Command-line arguments after the script path, on every runtime. */
export function scriptArgs(): string[] {
  if (g.Deno !== undefined) return g.Deno.args;
  return g.process !== undefined ? g.process.argv.slice(2) : [];
}

/** The value after `--name` in the script's arguments, if given. */
export function stringArg(name: string): string | undefined {
  const args = scriptArgs();
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

/** The number after `--name` in the script's arguments, or `fallback`. */
export function numberArg(name: string, fallback: number): number {
  const v = stringArg(name);
  return v === undefined ? fallback : Number(v);
}

export function nowMs(): number {
  return g.performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => g.setTimeout(resolve, ms));
}

/** Yields to the event loop so socket callbacks can run. */
export function yieldTurn(): Promise<void> {
  return new Promise((resolve) => g.setTimeout(resolve, 0));
}

/** `import(name)` without letting tsc resolve the specifier (no @types needed). */
export async function importDynamic<T>(specifier: string): Promise<T> {
  return (await import(specifier)) as T;
}

/** URL of this file, for locating the repository from compiled output. */
export function moduleUrl(meta: ImportMeta): string {
  return (meta as unknown as { url: string }).url;
}

// ---- node:* module slices -------------------------------------------------

export interface NodeBuffer extends Uint8Array {}

export interface BufferStatic {
  allocUnsafe(n: number): NodeBuffer;
  concat(list: readonly Uint8Array[], total?: number): NodeBuffer;
  from(a: ArrayBufferLike, offset?: number, len?: number): NodeBuffer;
}

export interface RemoteInfo {
  address: string;
  port: number;
}

export interface DgramSocket {
  bind(port: number, address: string, cb?: () => void): void;
  on(ev: "message", fn: (msg: NodeBuffer, rinfo: RemoteInfo) => void): void;
  on(ev: "error", fn: (err: Error) => void): void;
  send(msg: Uint8Array, port: number, address: string, cb?: (err: Error | null) => void): void;
  /** On a connected socket: to its peer. */
  send(msg: Uint8Array): void;
  connect(port: number, address: string, cb?: (err?: Error) => void): void;
  address(): { port: number; address: string };
  setRecvBufferSize(n: number): void;
  setSendBufferSize(n: number): void;
  getRecvBufferSize(): number;
  close(cb?: () => void): void;
}

export interface DgramModule {
  createSocket(type: "udp4" | "udp6"): DgramSocket;
}

export interface NetSocket {
  setNoDelay(v: boolean): void;
  write(b: Uint8Array): boolean;
  on(ev: "data", fn: (b: NodeBuffer) => void): void;
  on(ev: "drain" | "close" | "connect", fn: () => void): void;
  on(ev: "error", fn: (e: Error) => void): void;
  once(ev: "connect" | "drain", fn: () => void): void;
  destroy(): void;
}

export interface NetServer {
  listen(port: number, host: string, cb: () => void): void;
  address(): { port: number };
  close(): void;
  on(ev: "error", fn: (e: Error) => void): void;
}

export interface NetModule {
  createServer(onConn: (s: NetSocket) => void): NetServer;
  connect(port: number, host: string): NetSocket;
}

export interface ModuleModule {
  createRequire(path: string): (id: string) => unknown;
}

export interface FsModule {
  writeFileSync(path: string, data: string): void;
  readFileSync(path: string, enc: "utf8"): string;
  mkdirSync(path: string, opts: { recursive: boolean }): void;
  existsSync(path: string): boolean;
}

export interface ChildProcess {
  stdout: { on(ev: "data", fn: (b: Uint8Array) => void): void } | null;
  stderr: { on(ev: "data", fn: (b: Uint8Array) => void): void } | null;
  on(ev: "close", fn: (code: number | null, signal: string | null) => void): void;
  on(ev: "error", fn: (e: Error) => void): void;
  kill(sig?: string): boolean;
}

export interface ChildProcessModule {
  spawn(cmd: string, args: string[], opts: { cwd?: string; stdio: ("ignore" | "pipe")[] }): ChildProcess;
}

export async function nodeBuffer(): Promise<BufferStatic> {
  const m = await importDynamic<{ Buffer: BufferStatic }>("node:buffer");
  return m.Buffer;
}
