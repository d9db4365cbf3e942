// Spawning interop peers (test/interop/fixtures/peer.mjs) on node, bun and deno from dist/.
import { spawn, type ChildProcess } from "node:child_process";
import { expect } from "vitest";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const FIXTURES = join(ROOT, "test", "interop", "fixtures");
export type RuntimeName = "node" | "bun" | "deno";
export const RUNTIMES: RuntimeName[] = ["node", "bun", "deno"];
/**
 * True in npm test's main run, false in its runs on further Node lines (scripts/test.mjs sets
 * ACKWIRE_TEST_NODE_LINE). A test whose processes are all Bun or Deno, with nothing on the Node
 * that runs vitest, runs only in the main run: on another Node line it would repeat the same.
 */
export const MAIN_NODE_RUN = (process.env.ACKWIRE_TEST_NODE_LINE ?? "main") === "main";

/** The parts of a runtime adapter firewalled() wraps (structural: src/ or dist/ adapters alike). */
interface AdapterLike {
  name: "node" | "bun" | "deno";
  resolve(host: string): Promise<string>;
  openSocket(options: never): Promise<SocketLike>;
}
interface BatchLike {
  length: number;
  from: string[];
  bytes: Uint8Array[];
}
interface SocketLike {
  readonly localAddress: { host: string; port: number };
  readonly counters: { sendFailures: number; receiveErrors: number };
  send(bytes: Uint8Array, to: string): void;
  flush(): void;
  close(): Promise<void>;
  onDatagrams(callback: (batch: BatchLike) => void): void;
}

/**
 * `adapter` with a firewall: sockets it opens drop every datagram from an address in `blocked`.
 * Two peers that block each other reach each other only through a third party, as behind two
 * symmetric NATs.
 */
export function firewalled<A extends AdapterLike>(adapter: A, blocked: Set<string>): A {
  return {
    name: adapter.name,
    resolve: (host: string) => adapter.resolve(host),
    openSocket: async (options: never) => {
      const socket = await adapter.openSocket(options);
      const out: BatchLike = { length: 0, from: [], bytes: [] };
      return {
        get localAddress() {
          return socket.localAddress;
        },
        counters: socket.counters,
        send: (bytes: Uint8Array, to: string) => socket.send(bytes, to),
        flush: () => socket.flush(),
        close: () => socket.close(),
        onDatagrams: (callback: (batch: BatchLike) => void) =>
          socket.onDatagrams((batch) => {
            let n = 0;
            for (let i = 0; i < batch.length; i++) {
              if (blocked.has(batch.from[i]!)) continue;
              out.from[n] = batch.from[i]!;
              out.bytes[n] = batch.bytes[i]!;
              n++;
            }
            out.length = n;
            if (n > 0) callback(out);
          }),
      };
    },
  } as unknown as A;
}

/** Resolves with the first value `register`'s callback gets; rejects after `ms` naming `what`. */
export function waitFor<T>(what: string, register: (resolve: (value: T) => void) => void, ms = 5000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
    register((value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}

export function commandFor(runtime: RuntimeName, script: string): [string, string[]] {
  const bin = (name: string): string => join(ROOT, "node_modules", ".bin", name);
  switch (runtime) {
    case "node":
      return [process.execPath, [script]];
    case "bun":
      return [bin("bun"), [script]];
    case "deno":
      return [bin("deno"), ["run", "--unstable-net", "--allow-net", "--allow-read", "--allow-env", script]];
  }
}

export function assertBuilt(): void {
  if (!existsSync(join(ROOT, "dist", "src", "index.js"))) throw new Error("dist/ is missing: run `npx tsc -p tsconfig.json` first (npm run test:interop does)");
}

/** A child process whose stdout is parsed as JSON lines. Killed by `stop()` or after `limitMs`. */
export class Peer {
  readonly lines: Record<string, unknown>[] = [];
  readonly stderr: string[] = [];
  readonly child: ChildProcess;
  exitCode: number | null | undefined = undefined;
  #waiters: (() => void)[] = [];
  #killTimer: NodeJS.Timeout;

  /** With `netns`, the process runs inside that network namespace (`ip netns exec`). */
  constructor(runtime: RuntimeName, script: string, args: string[], limitMs = 90_000, netns?: string) {
    const [cmd, pre] = commandFor(runtime, script);
    const [bin, argv] = netns === undefined ? [cmd, [...pre, ...args]] : ["ip", ["netns", "exec", netns, cmd, ...pre, ...args]];
    this.child = spawn(bin, argv, { cwd: FIXTURES, stdio: ["ignore", "pipe", "pipe"] });
    let buffer = "";
    this.child.stdout!.on("data", (chunk: Buffer) => {
      buffer += chunk.toString("utf8");
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line.startsWith("{")) {
          try {
            this.lines.push(JSON.parse(line) as Record<string, unknown>);
          } catch {
            this.stderr.push(`unparsed: ${line}`);
          }
        }
      }
      this.#wake();
    });
    this.child.stderr!.on("data", (chunk: Buffer) => this.stderr.push(chunk.toString("utf8")));
    this.child.on("exit", (code) => {
      this.exitCode = code;
      this.#wake();
    });
    this.#killTimer = setTimeout(() => this.stop(), limitMs);
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  /** Resolves with the first line having `key`; rejects after `ms` or if the process exits first. */
  async waitFor(key: string, ms = 30_000, from = 0): Promise<Record<string, unknown>> {
    const deadline = Date.now() + ms;
    for (;;) {
      const line = this.lines.slice(from).find((l) => key in l);
      if (line !== undefined) return line;
      if (this.exitCode !== undefined) throw new Error(`peer exited (${this.exitCode}) before "${key}"; stderr: ${this.stderr.join("").slice(-2000)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no "${key}" within ${ms} ms; lines: ${JSON.stringify(this.lines).slice(0, 1000)}; stderr: ${this.stderr.join("").slice(-2000)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  exited(ms = 10_000): Promise<number | null> {
    return new Promise((resolve) => {
      if (this.exitCode !== undefined) return resolve(this.exitCode);
      const t = setTimeout(() => {
        this.stop();
        resolve(null);
      }, ms);
      this.child.once("exit", (code) => {
        clearTimeout(t);
        resolve(code);
      });
    });
  }

  stop(signal: NodeJS.Signals = "SIGKILL"): void {
    clearTimeout(this.#killTimer);
    if (this.exitCode === undefined) this.child.kill(signal);
  }
}

export async function runtimeOf(peer: Peer): Promise<unknown> {
  return (await peer.waitFor("runtime")).runtime;
}

/** Starts a peer, asserts the runtime it reports, and returns it. */
export async function startPeer(runtime: RuntimeName, role: string, options: Record<string, unknown>, limitMs?: number, netns?: string): Promise<Peer> {
  const peer = new Peer(runtime, "peer.mjs", [role, JSON.stringify(options)], limitMs, netns);
  const reported = await runtimeOf(peer);
  if (reported !== runtime) {
    peer.stop();
    throw new Error(`expected a ${runtime} process, it reports ${String(reported)}`);
  }
  return peer;
}

/** A client's report (fixtures/peer.mjs runPlan). */
export interface PlanResult {
  ok: boolean;
  error?: { name: string; code?: string; message: string };
  bad: number;
  timedOut: boolean;
  disconnect?: string;
  channels: Record<string, { kind: string; sent: number; received: number; duplicates: number; outOfOrder: number; converged?: boolean }>;
  ms: number;
  /** The client connection's stats().pathMtu at the end of the plan. */
  pathMtu?: number;
}

/** The plan's channel 0 (reliable-ordered) came back whole: every message once, in order. */
export function expectPlanDelivered(result: PlanResult, why: string): void {
  expect(result.ok, why).toBe(true);
  expect(result.timedOut, why).toBe(false);
  const c = result.channels["0"]!;
  expect(c.received, why).toBe(c.sent);
  expect(c.duplicates, why).toBe(0);
  expect(c.outOfOrder, why).toBe(0);
}
