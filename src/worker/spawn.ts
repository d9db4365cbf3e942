/**
 * Starting the network thread, per runtime (the only runtime-specific code of ackwire/worker).
 *
 * - Bun and Deno have the Web `Worker` global: `new Worker(url, { type: "module" })`, messages
 *   as `MessageEvent`s, `onerror` for uncaught errors. Deno workers inherit the parent's
 *   permissions and flags (--unstable-net included) and see the `Deno` namespace.
 * - Node 20 has no global `Worker`: `node:worker_threads` is loaded with a dynamic import in the
 *   Node branch only, so importing this module never touches node:* (src/ rule). An ESM worker
 *   file is given as a file: URL; "type": "module" in package.json makes it ESM.
 *
 * The runtime types are declared locally (the project compiles with `"types": []`).
 */
import type { RuntimeName } from "./protocol.js";

/** The WHATWG URL, a global on all three runtimes (typed here: the project has no DOM lib). */
interface UrlLike {
  readonly href: string;
}
type UrlConstructor = new (url: string, base?: string) => UrlLike;

/** The file URL of a module next to `moduleUrl` (pass `import.meta.url`). */
export function siblingUrl(name: string, moduleUrl: string): UrlLike {
  return new (globalThis as unknown as { URL: UrlConstructor }).URL(name, moduleUrl);
}

/** The application thread's handle on the worker. */
export interface WorkerHandle {
  post(message: unknown, transfer: ArrayBuffer[]): void;
  /** Uncaught errors in the worker, and (Node) an exit that nobody asked for. */
  onError(listener: (error: unknown) => void): void;
  onMessage(listener: (data: unknown) => void): void;
  terminate(): void;
}

/** The worker's handle on its parent. */
export interface ParentHandle {
  post(message: unknown, transfer: ArrayBuffer[]): void;
  onMessage(listener: (data: unknown) => void): void;
}

interface WebWorker {
  onmessage: ((event: { data: unknown }) => void) | null;
  onerror: ((event: { message?: string; error?: unknown; preventDefault?: () => void }) => void) | null;
  postMessage(message: unknown, transfer: ArrayBuffer[]): void;
  terminate(): void;
}
type WebWorkerConstructor = new (url: string, options: { type: "module" }) => WebWorker;

interface NodeWorker {
  on(event: "message", listener: (data: unknown) => void): void;
  on(event: "error", listener: (error: unknown) => void): void;
  on(event: "exit", listener: (code: number) => void): void;
  postMessage(message: unknown, transfer: ArrayBuffer[]): void;
  terminate(): Promise<number>;
}
interface NodeMessagePort {
  on(event: "message", listener: (data: unknown) => void): void;
  postMessage(message: unknown, transfer: ArrayBuffer[]): void;
}
interface NodeWorkerThreads {
  Worker: new (url: UrlLike, options?: Record<string, unknown>) => NodeWorker;
  parentPort: NodeMessagePort | null;
}

/** The runtime this module runs in (same rule as the package root). */
export function currentRuntime(): RuntimeName {
  const g = globalThis as { Bun?: unknown; Deno?: unknown };
  if (g.Bun !== undefined) return "bun";
  if (g.Deno !== undefined) return "deno";
  return "node";
}

async function importWorkerThreads(): Promise<NodeWorkerThreads> {
  const name: string = "node:worker_threads";
  return (await import(name)) as NodeWorkerThreads;
}

export async function spawnWorker(url: UrlLike): Promise<WorkerHandle> {
  if (currentRuntime() !== "node") {
    const WorkerClass = (globalThis as unknown as { Worker?: WebWorkerConstructor }).Worker;
    if (WorkerClass === undefined) throw new Error("this runtime has no Web Worker global");
    const worker = new WorkerClass(url.href, { type: "module" });
    return {
      post: (message, transfer) => worker.postMessage(message, transfer),
      onError: (listener) => {
        worker.onerror = (event) => {
          event.preventDefault?.(); // reported to the application instead of killing the process
          listener(event.error ?? new Error(event.message ?? "worker error"));
        };
      },
      onMessage: (listener) => {
        worker.onmessage = (event) => listener(event.data);
      },
      terminate: () => worker.terminate(),
    };
  }
  const { Worker } = await importWorkerThreads();
  const worker = new Worker(url);
  let terminating = false;
  return {
    post: (message, transfer) => worker.postMessage(message, transfer),
    onError: (listener) => {
      worker.on("error", listener);
      worker.on("exit", (code) => {
        if (!terminating) listener(new Error(`the network worker exited (code ${code})`));
      });
    },
    onMessage: (listener) => worker.on("message", listener),
    terminate: () => {
      terminating = true;
      void worker.terminate();
    },
  };
}

export async function parentHandle(): Promise<ParentHandle> {
  if (currentRuntime() !== "node") {
    const scope = globalThis as unknown as { onmessage: ((event: { data: unknown }) => void) | null; postMessage(message: unknown, transfer: ArrayBuffer[]): void };
    return {
      post: (message, transfer) => scope.postMessage(message, transfer),
      onMessage: (listener) => {
        scope.onmessage = (event) => listener(event.data);
      },
    };
  }
  const { parentPort } = await importWorkerThreads();
  if (parentPort === null) throw new Error("ackwire/worker: worker-main.js must run as a worker thread, not as the main module");
  return {
    post: (message, transfer) => parentPort.postMessage(message, transfer),
    onMessage: (listener) => parentPort.on("message", listener),
  };
}
