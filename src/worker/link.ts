/**
 * The application thread's end of the network worker: starts it, batches commands (all the
 * commands of one synchronous stretch of application code leave in one postMessage, flushed
 * in a microtask), and hands each batch of events to its owner.
 */
import { host } from "../api/host.js";
import type { Command, RuntimeName, WorkerEvent } from "./protocol.js";
import { siblingUrl, spawnWorker, type WorkerHandle } from "./spawn.js";
import { WorkerError } from "./wire-errors.js";

/** How long the worker may take to load its module graph (the WASM engine included). */
const READY_TIMEOUT_MS = 15_000;

export class WorkerLink {
  readonly runtime: RuntimeName;
  /** Resolves once the worker was terminated (after close, or after it failed). */
  readonly stopped: Promise<void>;
  #handle: WorkerHandle;
  #queue: Command[] = [];
  #transfer: ArrayBuffer[] = [];
  #flushQueued = false;
  #terminated = false;
  #resolveStopped!: () => void;
  #onEvents: (events: WorkerEvent[]) => void = () => {};
  #onFailure: (error: Error) => void = () => {};
  /** Postings so far (one per batch), for tests and curiosity. */
  readonly counters = { batchesOut: 0, commandsOut: 0, batchesIn: 0, eventsIn: 0 };

  private constructor(handle: WorkerHandle, runtime: RuntimeName) {
    this.#handle = handle;
    this.runtime = runtime;
    this.stopped = new Promise((resolve) => (this.#resolveStopped = resolve));
    handle.onMessage((data) => {
      const events = data as WorkerEvent[];
      this.counters.batchesIn++;
      this.counters.eventsIn += events.length;
      this.#onEvents(events);
    });
    handle.onError((error) => this.#fail(error));
  }

  /** Spawns the worker and waits for its "ready". */
  static async start(): Promise<WorkerLink> {
    let handle: WorkerHandle;
    try {
      handle = await spawnWorker(siblingUrl("./worker-main.js", (import.meta as unknown as { url: string }).url));
    } catch (error) {
      throw new WorkerError(`could not start the network worker: ${(error as Error)?.message ?? String(error)}`, error);
    }
    return new Promise<WorkerLink>((resolve, reject) => {
      // On Node these listeners stay attached after "ready" (worker.on): once started, they must
      // leave the worker's failures to the link. Terminating here would mark the exit as asked
      // for, and the link would never hear of a worker that exited on its own or was terminated.
      let started = false;
      const timer = host.setTimeout(() => {
        handle.terminate();
        reject(new WorkerError(`the network worker did not start within ${READY_TIMEOUT_MS} ms`));
      }, READY_TIMEOUT_MS);
      handle.onError((error) => {
        if (started) return;
        host.clearTimeout(timer);
        handle.terminate();
        reject(new WorkerError(`the network worker failed while starting: ${(error as Error)?.message ?? String(error)}`, error));
      });
      handle.onMessage((data) => {
        if (started) return;
        const first = (data as WorkerEvent[])[0];
        if (first?.t !== "ready") return;
        started = true;
        host.clearTimeout(timer);
        resolve(new WorkerLink(handle, first.runtime));
      });
    });
  }

  /** Who receives the event batches and a failure of the worker. */
  bind(onEvents: (events: WorkerEvent[]) => void, onFailure: (error: Error) => void): void {
    this.#onEvents = onEvents;
    this.#onFailure = onFailure;
  }

  get terminated(): boolean {
    return this.#terminated;
  }

  /** Posts one command at once (not batched): a clone error is thrown to the caller. */
  postNow(command: Command): void {
    this.#handle.post([command], []);
    this.counters.batchesOut++;
    this.counters.commandsOut++;
  }

  /** Queues a command; `owned` is a buffer handed over with it (transferred, detached here). */
  command(command: Command, owned?: ArrayBuffer): void {
    if (this.#terminated) return;
    this.#queue.push(command);
    if (owned !== undefined) this.#transfer.push(owned);
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    host.queueMicrotask(() => this.flush());
  }

  flush(): void {
    this.#flushQueued = false;
    if (this.#queue.length === 0 || this.#terminated) return;
    const commands = this.#queue;
    const transfer = this.#transfer;
    this.#queue = [];
    this.#transfer = [];
    this.counters.batchesOut++;
    this.counters.commandsOut += commands.length;
    this.#handle.post(commands, transfer);
  }

  terminate(): void {
    if (this.#terminated) return;
    this.#terminated = true;
    this.#handle.terminate();
    this.#resolveStopped();
  }

  #fail(error: unknown): void {
    if (this.#terminated) return;
    this.terminate();
    this.#onFailure(new WorkerError(`the network worker failed: ${(error as Error)?.message ?? String(error)}`, error));
  }
}
