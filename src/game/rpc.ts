/**
 * Request/response and notifications over one channel of a connection (seed 002's RPC notes:
 * a serialization framework, a call abstraction over the transport, concurrency semantics).
 *
 * `RpcPeer` is sans-IO: it sends through the `send` callback you give it, you feed it
 * `receive(bytes)`, and time comes from the injected `now()` clock; `pollTimeout()` /
 * `handleTimeout(now)` drive call timeouts. `attachRpc()` (./rpc-connection.ts) binds it to a
 * Connection with one timer. Use a reliable-ordered or reliable-unordered channel: the peer does
 * not resend (the transport does), so on an unreliable channel lost calls simply time out.
 *
 * Concurrency semantics:
 * - both sides may call and be called on the same connection (symmetric);
 * - at most `maxInFlight` outgoing calls wait for answers; one more throws RpcBusyError at once
 *   (back-pressure the caller can see, instead of an unbounded hidden queue);
 * - incoming calls run concurrently, up to `maxConcurrentHandlers`; past that the peer answers
 *   "ERR_RPC_BUSY" at once without running the handler. Answers may come back in any order and
 *   are matched by call id;
 * - cancellation (the caller's AbortSignal, or a timeout) rejects the call locally and sends
 *   CANCEL, which aborts the handler's `ctx.signal`; an answer that arrives later is dropped.
 *
 * Wire format of one message (payload values: ./codec.ts):
 *   u8 kind | varuint id (not in NOTIFY) | ...
 *   1 REQUEST: id, method (varuint length + UTF-8, <= 255 bytes), value
 *   2 NOTIFY:  method, value
 *   3 RESULT:  id, value
 *   4 ERROR:   id, code (string), message (string)
 *   5 CANCEL:  id
 */
import type { AbortSignalLike } from "../api/host.js";
import { ByteReader, ByteWriter, Malformed } from "./bytes.js";
import { readValue, writeValue, type Value } from "./codec.js";
import {
  CodecError,
  GameMessageTooLargeError,
  GameUsageError,
  RpcAbortedError,
  RpcBusyError,
  RpcClosedError,
  RpcRemoteError,
  RpcTimeoutError,
} from "./errors.js";

const enum Kind {
  Request = 1,
  Notify = 2,
  Result = 3,
  Error = 4,
  Cancel = 5,
}

const MAX_METHOD_BYTES = 255;
const MAX_ERROR_TEXT = 1024;

export interface RpcContext {
  method: string;
  /** Aborted when the caller cancels or times out (and when this peer closes). */
  signal: AbortSignalLike;
}

/** Returns the result (a codec Value, or a promise of one). Throw to answer with an error. */
export type RpcHandler = (params: Value, ctx: RpcContext) => unknown;

export interface RpcOptions {
  send: (data: Uint8Array) => void;
  /** The clock (ms), e.g. the simulator's virtual time or performance.now(). */
  now: () => number;
  /** Methods this side answers (and notifications it accepts). */
  handlers?: Record<string, RpcHandler>;
  /** Outgoing calls waiting for answers. Default 64. */
  maxInFlight?: number;
  /** Incoming calls running at once. Default 64. */
  maxConcurrentHandlers?: number;
  /** Default 5000 ms. */
  defaultTimeoutMs?: number;
  /** Largest encoded message either way. Default 64 KiB. */
  maxMessageBytes?: number;
}

export interface CallOptions {
  timeoutMs?: number;
  signal?: AbortSignalLike;
}

export interface RpcCounters {
  callsSent: number;
  callsAnswered: number;
  callsFailed: number;
  timeouts: number;
  cancelled: number;
  notificationsSent: number;
  requestsReceived: number;
  notificationsReceived: number;
  /** Requests refused because maxConcurrentHandlers were running. */
  busyRefused: number;
  /** Answers for calls no longer pending (timed out or cancelled first). */
  lateAnswers: number;
  /** Messages that did not parse, or over maxMessageBytes: dropped. */
  malformed: number;
}

interface PendingCall {
  method: string;
  deadline: number;
  timeoutMs: number;
  resolve: (value: Value) => void;
  reject: (error: Error) => void;
  detach: () => void;
}

/** The AbortSignal handed to handlers (AbortController is not in the compiled lib types). */
class HandlerSignal implements AbortSignalLike {
  aborted = false;
  reason: unknown = undefined;
  #listeners = new Set<() => void>();
  addEventListener(_type: "abort", listener: () => void): void {
    this.#listeners.add(listener);
  }
  removeEventListener(_type: "abort", listener: () => void): void {
    this.#listeners.delete(listener);
  }
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    for (const listener of this.#listeners) listener();
    this.#listeners.clear();
  }
}

export class RpcPeer {
  readonly counters: RpcCounters = {
    callsSent: 0,
    callsAnswered: 0,
    callsFailed: 0,
    timeouts: 0,
    cancelled: 0,
    notificationsSent: 0,
    requestsReceived: 0,
    notificationsReceived: 0,
    busyRefused: 0,
    lateAnswers: 0,
    malformed: 0,
  };
  readonly #send: (data: Uint8Array) => void;
  readonly #now: () => number;
  readonly #handlers: Record<string, RpcHandler>;
  readonly #maxInFlight: number;
  readonly #maxHandlers: number;
  readonly #defaultTimeoutMs: number;
  readonly #maxBytes: number;
  #nextId = 1;
  #pending = new Map<number, PendingCall>();
  #running = new Map<number, HandlerSignal>();
  #closed: string | undefined;

  constructor(options: RpcOptions) {
    this.#send = options.send;
    this.#now = options.now;
    this.#handlers = options.handlers ?? {};
    this.#maxInFlight = positive("maxInFlight", options.maxInFlight ?? 64);
    this.#maxHandlers = positive("maxConcurrentHandlers", options.maxConcurrentHandlers ?? 64);
    this.#defaultTimeoutMs = positive("defaultTimeoutMs", options.defaultTimeoutMs ?? 5000);
    this.#maxBytes = positive("maxMessageBytes", options.maxMessageBytes ?? 65_536);
  }

  get inFlight(): number {
    return this.#pending.size;
  }
  get runningHandlers(): number {
    return this.#running.size;
  }
  get isClosed(): boolean {
    return this.#closed !== undefined;
  }

  /** Calls `method` on the peer. Rejects with RpcTimeoutError, RpcAbortedError, RpcRemoteError or RpcClosedError. */
  call(method: string, params: unknown = null, options: CallOptions = {}): Promise<Value> {
    if (this.#closed !== undefined) return Promise.reject(new RpcClosedError(this.#closed));
    if (this.#pending.size >= this.#maxInFlight) return Promise.reject(new RpcBusyError(this.#maxInFlight));
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(new RpcAbortedError(method));
    const timeoutMs = positive("timeoutMs", options.timeoutMs ?? this.#defaultTimeoutMs);
    const id = this.#nextId++;
    let bytes: Uint8Array;
    try {
      bytes = this.#encode(Kind.Request, id, method, (w) => writeValue(w, params));
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<Value>((resolve, reject) => {
      const onAbort = () => this.#cancel(id, new RpcAbortedError(method));
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#pending.set(id, {
        method,
        timeoutMs,
        deadline: this.#now() + timeoutMs,
        resolve,
        reject,
        detach: () => signal?.removeEventListener("abort", onAbort),
      });
      this.counters.callsSent++;
      this.#send(bytes);
    });
  }

  /** One-way message: no answer, no id, no timeout. */
  notify(method: string, params: unknown = null): void {
    if (this.#closed !== undefined) throw new RpcClosedError(this.#closed);
    const bytes = this.#encode(Kind.Notify, 0, method, (w) => writeValue(w, params));
    this.counters.notificationsSent++;
    this.#send(bytes);
  }

  /** Feed one message received on the RPC channel. Malformed input is counted and dropped. */
  receive(data: Uint8Array): void {
    if (this.#closed !== undefined) return;
    if (data.length > this.#maxBytes) {
      this.counters.malformed++;
      return;
    }
    try {
      const r = new ByteReader(data);
      const kind = r.u8();
      const id = kind === Kind.Notify ? 0 : r.varuint();
      switch (kind) {
        case Kind.Request:
        case Kind.Notify: {
          const method = r.string(MAX_METHOD_BYTES);
          const params = readValue(r);
          end(r);
          if (kind === Kind.Request) this.#onRequest(id, method, params);
          else this.#onNotify(method, params);
          return;
        }
        case Kind.Result: {
          const value = readValue(r);
          end(r);
          const call = this.#settle(id);
          if (call === undefined) return;
          this.counters.callsAnswered++;
          call.resolve(value);
          return;
        }
        case Kind.Error: {
          const code = r.string(MAX_ERROR_TEXT);
          const message = r.string(MAX_ERROR_TEXT);
          end(r);
          const call = this.#settle(id);
          if (call === undefined) return;
          this.counters.callsFailed++;
          call.reject(new RpcRemoteError(call.method, code, message));
          return;
        }
        case Kind.Cancel: {
          end(r);
          // The slot is freed now: a handler is expected to stop on ctx.signal, and whatever it
          // returns later is not sent (its signal is aborted).
          const signal = this.#running.get(id);
          this.#running.delete(id);
          signal?.abort("cancelled by the caller");
          return;
        }
        default:
          throw new Malformed("unknown kind");
      }
    } catch (error) {
      if (!(error instanceof Malformed)) throw error;
      this.counters.malformed++;
    }
  }

  /** Earliest call deadline, or undefined. A scan: at most maxInFlight calls are pending. */
  pollTimeout(): number | undefined {
    let earliest: number | undefined;
    for (const call of this.#pending.values()) if (earliest === undefined || call.deadline < earliest) earliest = call.deadline;
    return earliest;
  }

  /** Times out every call whose deadline is <= now (calling early is a no-op). */
  handleTimeout(now: number): void {
    for (const [id, call] of this.#pending) {
      if (call.deadline > now) continue;
      this.counters.timeouts++;
      this.#cancel(id, new RpcTimeoutError(call.method, call.timeoutMs));
    }
  }

  /** Rejects pending calls with RpcClosedError and aborts running handlers. Idempotent. */
  close(reason = "closed by the application"): void {
    if (this.#closed !== undefined) return;
    this.#closed = reason;
    for (const [id] of this.#pending) {
      const call = this.#settle(id)!;
      call.reject(new RpcClosedError(reason));
    }
    for (const signal of this.#running.values()) signal.abort(reason);
    this.#running.clear();
  }

  #settle(id: number): PendingCall | undefined {
    const call = this.#pending.get(id);
    if (call === undefined) {
      this.counters.lateAnswers++;
      return undefined;
    }
    this.#pending.delete(id);
    call.detach();
    return call;
  }

  /** Local give-up (abort or timeout): reject now, and tell the peer to stop working on it. */
  #cancel(id: number, error: Error): void {
    const call = this.#pending.get(id);
    if (call === undefined) return;
    this.#pending.delete(id);
    call.detach();
    if (error instanceof RpcAbortedError) this.counters.cancelled++;
    call.reject(error);
    if (this.#closed === undefined) this.#send(new ByteWriter(8).u8(Kind.Cancel).varuint(id).finish());
  }

  #onNotify(method: string, params: Value): void {
    this.counters.notificationsReceived++;
    const handler = this.#handlers[method];
    if (handler === undefined || !Object.hasOwn(this.#handlers, method)) return;
    // A notification's handler errors have nobody to go to: swallowed by design.
    try {
      const result = handler(params, { method, signal: new HandlerSignal() });
      if (result instanceof Promise) result.catch(() => undefined);
    } catch {
      /* see above */
    }
  }

  #onRequest(id: number, method: string, params: Value): void {
    this.counters.requestsReceived++;
    if (this.#running.has(id)) {
      this.counters.malformed++; // a reused id while the first is running: the peer is broken
      return;
    }
    const handler = Object.hasOwn(this.#handlers, method) ? this.#handlers[method] : undefined;
    if (handler === undefined) {
      this.#answerError(id, "ERR_RPC_UNKNOWN_METHOD", `no handler for "${method}" on this peer`);
      return;
    }
    if (this.#running.size >= this.#maxHandlers) {
      this.counters.busyRefused++;
      this.#answerError(id, "ERR_RPC_BUSY", `${this.#maxHandlers} calls already running here: retry later`);
      return;
    }
    const signal = new HandlerSignal();
    this.#running.set(id, signal);
    let result: Promise<unknown>;
    try {
      result = Promise.resolve(handler(params, { method, signal }));
    } catch (error) {
      result = Promise.reject(error);
    }
    result.then(
      (value) => {
        if (!this.#finish(id, signal)) return;
        let bytes: Uint8Array;
        try {
          bytes = this.#encode(Kind.Result, id, undefined, (w) => writeValue(w, value));
        } catch (error) {
          this.#answerError(id, "ERR_RPC_HANDLER", `the result could not be sent: ${(error as Error).message}`);
          return;
        }
        this.#send(bytes);
      },
      (error: unknown) => {
        if (!this.#finish(id, signal)) return;
        const code = typeof (error as { code?: unknown })?.code === "string" ? (error as { code: string }).code : "ERR_RPC_HANDLER";
        const message = error instanceof Error ? error.message : String(error);
        this.#answerError(id, code, message);
      },
    );
  }

  /** True if the answer should still be sent (not cancelled, peer open). */
  #finish(id: number, signal: HandlerSignal): boolean {
    if (this.#running.get(id) === signal) this.#running.delete(id);
    return !signal.aborted && this.#closed === undefined;
  }

  #answerError(id: number, code: string, message: string): void {
    const w = new ByteWriter(64).u8(Kind.Error).varuint(id);
    w.string(truncate(code, 64)).string(truncate(message, 256)); // <= 1024 bytes each
    this.#send(w.finish());
  }

  #encode(kind: Kind, id: number, method: string | undefined, body: (w: ByteWriter) => void): Uint8Array {
    const w = new ByteWriter(64).u8(kind);
    if (kind !== Kind.Notify) w.varuint(id);
    if (method !== undefined) {
      const before = w.length;
      w.string(method);
      if (w.length - before - 1 > MAX_METHOD_BYTES) throw new GameUsageError(`method name "${method.slice(0, 40)}..." is over ${MAX_METHOD_BYTES} bytes: use a shorter name`);
    }
    try {
      body(w);
    } catch (error) {
      if (error instanceof CodecError) throw error;
      throw new CodecError(`cannot encode: ${(error as Error).message}`);
    }
    if (w.length > this.#maxBytes) throw new GameMessageTooLargeError("the encoded RPC message", w.length, this.#maxBytes);
    return w.finish();
  }
}

function end(r: ByteReader): void {
  if (r.remaining !== 0) throw new Malformed("trailing bytes");
}

/** Cuts a string to at most `max` characters (UTF-16 units; the wire limit is in bytes, 4x). */
function truncate(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max);
}

function positive(name: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0)) throw new GameUsageError(`${name} must be a positive number, got ${value}`);
  return value;
}
