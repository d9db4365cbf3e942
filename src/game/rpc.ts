/**
 * Request/response and notifications over one channel of a connection (after Fiedler's RPC notes:
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
 * The `send` callback may throw (the transport refuses a message over the channel's
 * maxMessageBytes, an unknown channel, a closing connection). What the peer sends on its own
 * behalf, from promise callbacks, timers and receive(), must never throw out of it: there is no
 * caller to catch it, and an unhandled rejection ends a Node, Bun or Deno process. So an answer
 * that cannot be sent goes back as an ERR_RPC_HANDLER error answer instead; an error answer or a
 * CANCEL that cannot be sent is counted (`counters.sendFailures`) and dropped. A request that
 * cannot be sent rejects its call at once with the send's error, and frees its maxInFlight slot.
 *
 * Call ids start at a random point per peer (and attachRpc continues the old peer's sequence on
 * a channel it re-attaches), so the late answers to a closed peer's calls, which the remote still
 * sends on the same channel, match none of a new peer's calls.
 *
 * Wire format of one message (payload values: ./codec.ts):
 *   u8 kind | varuint id (not in NOTIFY) | ...
 *   1 REQUEST: id, method (varuint length + UTF-8, <= 255 bytes), value
 *   2 NOTIFY:  method, value
 *   3 RESULT:  id, value
 *   4 ERROR:   id, code (string), message (string)
 *   5 CANCEL:  id
 */
import { randomSeed, type AbortSignalLike } from "../api/host.js";
import { ByteReader, ByteWriter } from "./bytes.js";
import { readValue, writeValue, type Value } from "./codec.js";
import type { RpcCallArgs, RpcHandlers, RpcMethodName, RpcMethods, RpcNotifyArgs, RpcResult, UntypedRpc } from "./rpc-types.js";
import {
  ByteReadError,
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
/** The longest timeout: host timers (setTimeout) take a signed 32-bit ms count, and a longer one
 *  fires at once on Node, Bun and Deno. About 24.8 days. */
export const MAX_RPC_TIMEOUT_MS = 2 ** 31 - 1;
/** Call ids are in 1..ID_LIMIT-1: at most 4 bytes of varuint on the wire, wide enough that a
 *  random start rarely lands near another peer's ids. */
const ID_LIMIT = 2 ** 28;

export interface RpcContext {
  method: string;
  /**
   * Aborted when the caller cancels or times out (and when this peer closes). A real AbortSignal
   * where the runtime has AbortController (Node, Bun, Deno), so fetch() and timers take it; typed
   * loosely only because the package compiles without DOM types (cast it: `ctx.signal as AbortSignal`).
   */
  signal: AbortSignalLike;
}

/** Returns the result (a codec Value, or a promise of one). Throw to answer with an error. */
export type RpcHandler = (params: Value, ctx: RpcContext) => unknown;

/** `Local`: the method map this side answers (./rpc-types.ts), untyped by default. */
export interface RpcOptions<Local extends RpcMethods<Local> = UntypedRpc> {
  send: (data: Uint8Array) => void;
  /** The clock (ms), e.g. the simulator's virtual time or performance.now(). */
  now: () => number;
  /** Methods this side answers (and notifications it accepts). */
  handlers?: RpcHandlers<Local>;
  /** Outgoing calls waiting for answers. Default 64. */
  maxInFlight?: number;
  /** Incoming calls running at once. Default 64. */
  maxConcurrentHandlers?: number;
  /** Default 5000 ms. */
  defaultTimeoutMs?: number;
  /** Largest encoded message either way. Default 64 KiB. Keep it at most the channel's own
   *  maxMessageBytes: a larger answer fails the call with ERR_RPC_HANDLER. */
  maxMessageBytes?: number;
  /** The first call id (1..2^28-1). Default: a random one (see the module notes). */
  firstCallId?: number;
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
  /**
   * Error answers and CANCELs this peer could not send (the send callback threw): dropped. An
   * answer that could not be sent but went back as an ERR_RPC_HANDLER error answer instead is
   * not counted; a request that could not be sent rejects its call instead.
   */
  sendFailures: number;
}

interface PendingCall {
  method: string;
  deadline: number;
  timeoutMs: number;
  resolve: (value: Value) => void;
  reject: (error: Error) => void;
  detach: () => void;
}

/** What aborts a handler's `ctx.signal`: an AbortController (typed locally: the project compiles
 *  without DOM types). */
/** A CANCEL of our call `id`. */
function cancelMessage(id: number): Uint8Array {
  return new ByteWriter(8).u8(Kind.Cancel).varuint(id).finish();
}

/** An ERROR answer to call `id`. */
function errorAnswer(id: number, code: string, message: string): Uint8Array {
  const w = new ByteWriter(64).u8(Kind.Error).varuint(id);
  w.string(truncate(code, 64)).string(truncate(message, 256)); // <= 1024 bytes each
  return w.finish();
}

interface Aborter {
  readonly signal: AbortSignalLike;
  abort(reason?: unknown): void;
}

const HostAbortController = (globalThis as { AbortController?: new () => Aborter }).AbortController;

/**
 * Handlers get a real AbortSignal where the runtime has AbortController (Node, Bun and Deno all
 * do): they pass it on to fetch(), timers and other APIs that check `instanceof AbortSignal` or
 * call throwIfAborted(). The fallback only keeps the peer usable on a host without one.
 */
function newAborter(): Aborter {
  return HostAbortController !== undefined ? new HostAbortController() : new FallbackAborter();
}

class FallbackSignal implements AbortSignalLike {
  aborted = false;
  reason: unknown = undefined;
  readonly listeners = new Set<() => void>();
  addEventListener(_type: "abort", listener: () => void): void {
    if (!this.aborted) this.listeners.add(listener);
  }
  removeEventListener(_type: "abort", listener: () => void): void {
    this.listeners.delete(listener);
  }
  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }
}

class FallbackAborter implements Aborter {
  readonly signal = new FallbackSignal();
  abort(reason: unknown): void {
    const signal = this.signal;
    if (signal.aborted) return;
    signal.aborted = true;
    signal.reason = reason;
    const listeners = [...signal.listeners];
    signal.listeners.clear();
    for (const listener of listeners) {
      try {
        listener();
      } catch {
        // A listener's error has nowhere to go (abort() runs inside receive() and close()).
      }
    }
  }
}

/**
 * `Remote`: the method map the peer answers (what call() and notify() take); `Local`: the one
 * this side answers (the handlers). Both untyped by default (./rpc-types.ts).
 */
export class RpcPeer<Remote extends RpcMethods<Remote> = UntypedRpc, Local extends RpcMethods<Local> = UntypedRpc> {
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
    sendFailures: 0,
  };
  readonly #send: (data: Uint8Array) => void;
  readonly #now: () => number;
  readonly #handlers: Record<string, RpcHandler>;
  readonly #maxInFlight: number;
  readonly #maxHandlers: number;
  readonly #defaultTimeoutMs: number;
  readonly #maxBytes: number;
  #nextId: number;
  #pending = new Map<number, PendingCall>();
  #running = new Map<number, Aborter>();
  /** Notification handlers still running (their signals abort at close()). */
  #notifying = new Set<Aborter>();
  #closed: string | undefined;

  constructor(options: RpcOptions<Local>) {
    this.#send = options.send;
    this.#now = options.now;
    this.#handlers = (options.handlers ?? {}) as Record<string, RpcHandler>;
    this.#maxInFlight = positive("maxInFlight", options.maxInFlight ?? 64);
    this.#maxHandlers = positive("maxConcurrentHandlers", options.maxConcurrentHandlers ?? 64);
    const defaultTimeout = checkTimeout("defaultTimeoutMs", options.defaultTimeoutMs ?? 5000);
    if (defaultTimeout !== undefined) throw defaultTimeout;
    this.#defaultTimeoutMs = options.defaultTimeoutMs ?? 5000;
    this.#maxBytes = positive("maxMessageBytes", options.maxMessageBytes ?? 65_536);
    const first = options.firstCallId;
    if (first !== undefined && !(Number.isInteger(first) && first >= 1 && first < ID_LIMIT)) throw new GameUsageError(`firstCallId must be an integer in 1..${ID_LIMIT - 1}, got ${first}`);
    this.#nextId = first ?? 1 + (randomSeed() % (ID_LIMIT - 1));
  }

  /** The id the next call will take (attachRpc hands it on to the peer that replaces this one). */
  get nextCallId(): number {
    return this.#nextId;
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

  /**
   * Calls `method` on the peer. Never throws: every failure is a rejection, with RpcTimeoutError,
   * RpcAbortedError, RpcRemoteError, RpcClosedError, RpcBusyError, GameUsageError (bad options),
   * CodecError / GameMessageTooLargeError (params), or the send callback's own error when the
   * request could not be sent (e.g. the channel's MessageTooLargeError).
   */
  call<M extends RpcMethodName<Remote>>(method: M, ...args: RpcCallArgs<Remote[M]>): Promise<RpcResult<Remote[M]>> {
    const [params = null, options] = args as [unknown?, CallOptions?];
    try {
      return this.#call(method, params, options ?? {}) as Promise<RpcResult<Remote[M]>>;
    } catch (error) {
      // The caller's own objects can still throw (a signal whose addEventListener throws, a
      // clock that throws): a rejection too, like every other failure.
      return Promise.reject(error);
    }
  }

  #call(method: string, params: unknown, options: CallOptions): Promise<Value> {
    if (this.#closed !== undefined) return Promise.reject(new RpcClosedError(this.#closed));
    if (this.#pending.size >= this.#maxInFlight) return Promise.reject(new RpcBusyError(this.#maxInFlight));
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(new RpcAbortedError(method));
    const timeoutMs = options.timeoutMs ?? this.#defaultTimeoutMs;
    const badTimeout = checkTimeout("timeoutMs", timeoutMs);
    if (badTimeout !== undefined) return Promise.reject(badTimeout);
    const id = this.#takeId();
    let bytes: Uint8Array;
    try {
      bytes = this.#encode(Kind.Request, id, method, (w) => writeValue(w, params));
    } catch (error) {
      return Promise.reject(error);
    }
    let resolve!: (value: Value) => void;
    let reject!: (error: Error) => void;
    const promise = new Promise<Value>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const deadline = this.#now() + timeoutMs;
    const onAbort = () => this.#cancel(id, new RpcAbortedError(method));
    signal?.addEventListener("abort", onAbort, { once: true });
    // Pending before the send: a send that delivers synchronously may bring the answer back
    // within the call.
    this.#pending.set(id, {
      method,
      timeoutMs,
      deadline,
      resolve,
      reject,
      detach: () => signal?.removeEventListener("abort", onAbort),
    });
    try {
      this.#send(bytes);
    } catch (error) {
      // Not sent, so nothing will answer: fail now and free the slot, rather than hold it
      // until the timeout.
      const call = this.#pending.get(id);
      if (call !== undefined) {
        this.#pending.delete(id);
        call.detach();
        call.reject(error as Error);
      }
      return promise;
    }
    this.counters.callsSent++;
    return promise;
  }

  /** One-way message: no answer, no id, no timeout. Throws what encoding or the send throws. */
  notify<M extends RpcMethodName<Remote>>(method: M, ...args: RpcNotifyArgs<Remote[M]>): void {
    const params: unknown = args[0] ?? null;
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
          r.expectEnd();
          if (kind === Kind.Request) this.#onRequest(id, method, params);
          else this.#onNotify(method, params);
          return;
        }
        case Kind.Result: {
          const value = readValue(r);
          r.expectEnd();
          const call = this.#settle(id);
          if (call === undefined) return;
          this.counters.callsAnswered++;
          call.resolve(value);
          return;
        }
        case Kind.Error: {
          const code = r.string(MAX_ERROR_TEXT);
          const message = r.string(MAX_ERROR_TEXT);
          r.expectEnd();
          const call = this.#settle(id);
          if (call === undefined) return;
          this.counters.callsFailed++;
          call.reject(new RpcRemoteError(call.method, code, message));
          return;
        }
        case Kind.Cancel: {
          r.expectEnd();
          // The slot is freed now: a handler is expected to stop on ctx.signal, and whatever it
          // returns later is not sent (its signal is aborted).
          const aborter = this.#running.get(id);
          this.#running.delete(id);
          aborter?.abort("cancelled by the caller");
          return;
        }
        default:
          throw new ByteReadError("malformed", 0, `unknown RPC message kind ${kind}`);
      }
    } catch (error) {
      if (!(error instanceof ByteReadError)) throw error;
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

  /**
   * Rejects pending calls with RpcClosedError and aborts running handlers (notifications' too).
   * Idempotent. The remote is told, best effort (it may be gone, and then nothing is counted):
   * a CANCEL for each of our pending calls, so its handlers stop and give back their slots, and
   * an ERR_RPC_CLOSED answer for each call it is waiting on here, so its caller need not wait
   * for a timeout. Without them a peer detached from a connection that stays open left the
   * remote's handlers running for ever (a re-attached peer then found it busy).
   */
  close(reason = "closed by the application"): void {
    if (this.#closed !== undefined) return;
    const pending = [...this.#pending.keys()];
    const running = [...this.#running.entries()];
    this.#running.clear();
    for (const id of pending) this.#sendOwn(cancelMessage(id), false);
    for (const [id] of running) this.#sendOwn(errorAnswer(id, "ERR_RPC_CLOSED", `the peer closed: ${reason}`), false);
    this.#closed = reason;
    for (const id of pending) {
      const call = this.#settle(id)!;
      call.reject(new RpcClosedError(reason));
    }
    for (const [, aborter] of running) aborter.abort(reason);
    const notified = [...this.#notifying];
    this.#notifying.clear();
    for (const aborter of notified) aborter.abort(reason);
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
    // From a timer or an abort listener: nobody to throw to. A lost CANCEL only lets the remote
    // handler run on; its answer is dropped here as late.
    if (this.#closed === undefined) this.#sendOwn(cancelMessage(id));
  }

  /** The next free call id; wraps within 1..ID_LIMIT-1, skipping ids still waiting. */
  #takeId(): number {
    let id = this.#nextId;
    while (this.#pending.has(id)) id = id + 1 >= ID_LIMIT ? 1 : id + 1;
    this.#nextId = id + 1 >= ID_LIMIT ? 1 : id + 1;
    return id;
  }

  /** Sends on this peer's own behalf; false when the send threw, counted in sendFailures unless
   *  `counted` is false (close(): the connection may be gone, and a failure is expected). */
  #sendOwn(bytes: Uint8Array, counted = true): boolean {
    try {
      this.#send(bytes);
      return true;
    } catch {
      if (counted) this.counters.sendFailures++;
      return false;
    }
  }

  #onNotify(method: string, params: Value): void {
    this.counters.notificationsReceived++;
    const handler = this.#handlers[method];
    if (handler === undefined || !Object.hasOwn(this.#handlers, method)) return;
    // A notification's handler errors have nobody to go to: swallowed by design. Its signal
    // aborts when this peer closes (as RpcContext says), so it is held until the handler ends.
    const aborter = newAborter();
    this.#notifying.add(aborter);
    try {
      const result = handler(params, { method, signal: aborter.signal });
      if (result instanceof Promise) void result.then(() => this.#notifying.delete(aborter), () => this.#notifying.delete(aborter));
      else this.#notifying.delete(aborter);
    } catch {
      this.#notifying.delete(aborter);
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
    const aborter = newAborter();
    this.#running.set(id, aborter);
    let result: Promise<unknown>;
    try {
      result = Promise.resolve(handler(params, { method, signal: aborter.signal }));
    } catch (error) {
      result = Promise.reject(error);
    }
    result
      .then(
        (value) => {
          if (!this.#finish(id, aborter)) return;
          let bytes: Uint8Array;
          try {
            bytes = this.#encode(Kind.Result, id, undefined, (w) => writeValue(w, value));
            this.#send(bytes);
          } catch (error) {
            // Too large for this peer or the channel, or not encodable: the caller still gets
            // an answer, an error saying why, rather than waiting for its timeout.
            this.#answerError(id, "ERR_RPC_HANDLER", `the result could not be sent: ${errorText(error)}`);
          }
        },
        (error: unknown) => {
          if (!this.#finish(id, aborter)) return;
          let code = "ERR_RPC_HANDLER";
          try {
            const own = (error as { code?: unknown } | null | undefined)?.code;
            if (typeof own === "string") code = own;
          } catch {
            // a throwing `code` getter: keep ERR_RPC_HANDLER
          }
          this.#answerError(id, code, errorText(error));
        },
      )
      // Last resort: nothing above should throw, and an unhandled rejection would end the process.
      .catch(() => void this.counters.sendFailures++);
  }

  /** True if the answer should still be sent (not cancelled, peer open). */
  #finish(id: number, aborter: Aborter): boolean {
    if (this.#running.get(id) === aborter) this.#running.delete(id);
    return !aborter.signal.aborted && this.#closed === undefined;
  }

  /** Never throws: an error answer that cannot be sent is counted and dropped. */
  #answerError(id: number, code: string, message: string): void {
    this.#sendOwn(errorAnswer(id, code, message));
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

/** Cuts a string to at most `max` characters (UTF-16 units; the wire limit is in bytes, 4x). */
function truncate(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max);
}

/** An error's message, or its text; never throws (a thrown value may be anything). */
function errorText(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return "(an error without a printable message)";
  }
}

/** The error for a bad timeout, or undefined: call() rejects with it, the constructor throws it. */
function checkTimeout(name: string, value: unknown): GameUsageError | undefined {
  if (typeof value === "number" && value > 0 && value <= MAX_RPC_TIMEOUT_MS) return undefined;
  return new GameUsageError(`${name} must be a number of ms in (0, ${MAX_RPC_TIMEOUT_MS}] (about 24.8 days: the longest host timer), got ${String(value)}`);
}

function positive(name: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0)) throw new GameUsageError(`${name} must be a positive number, got ${value}`);
  return value;
}
