/**
 * One outgoing ackwire handshake over a driver (listen()'s server.connect(), connect(), and the
 * browser client): a module of its own so that the browser bundle does not pull in the server.
 */
import type { EndpointEvent } from "../session/types.js";
import type { Address } from "../session/sans-io.js";
import { Connection } from "./connection.js";
import type { Driver } from "./driver.js";
import { ConnectAbortedError, ConnectDeniedError, ConnectFailedError, ConnectRefusedError, ConnectTimeoutError, InvalidOptionError } from "./errors.js";
import { deferToNextTurn, host, monotonicNow, type AbortSignalLike } from "./host.js";

const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
/** An hour, less the second the endpoint's own deadline is given on top (it allows an hour). */
const MAX_CONNECT_TIMEOUT_MS = 3_599_000;

/** Options of `server.connect()`: the handshake's; the channels and settings are the server's. */
export interface ServerConnectOptions {
  /** Sent to the peer's accept hook (small: it rides in the handshake). */
  userData?: Uint8Array;
  /** Aborts the handshake: connect() rejects with ConnectAbortedError. */
  signal?: AbortSignalLike;
  /** Give up the handshake after this long (ConnectTimeoutError). Default 5000 ms. */
  connectTimeoutMs?: number;
  /** Bound of the connection's async iterator queue. Default: the server's. */
  maxQueuedMessages?: number;
}

/**
 * One outgoing handshake on a driver: `promise` resolves with the Connection at the endpoint's
 * "connect" event and rejects with a typed error on deny, timeout, abort or failure.
 */
export class ConnectAttempt {
  readonly promise: Promise<Connection>;
  #resolve!: (connection: Connection) => void;
  #reject!: (error: Error) => void;
  readonly #driver: Driver;
  readonly #peer: Address;
  readonly #options: ServerConnectOptions;
  readonly #maxQueued: number;
  readonly #hooks: AttemptHooks;
  readonly #timeoutMs: number;
  #id = -1;
  #connection: Connection | undefined;
  #settled = false;
  #timer: unknown;
  readonly #onAbort = (): void => this.abort(new ConnectAbortedError(this.#peer, this.#options.signal?.reason));

  constructor(driver: Driver, peer: Address, options: ServerConnectOptions, maxQueued: number, hooks: AttemptHooks) {
    this.#driver = driver;
    this.#peer = peer;
    this.#options = options;
    this.#maxQueued = maxQueued;
    this.#hooks = hooks;
    this.#timeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.promise = new Promise<Connection>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /**
   * Starts the handshake; the connection id, or -1 if it could not start (the promise rejects).
   * The caller services the driver after routing the id's events here.
   */
  start(): number {
    const ms = this.#timeoutMs;
    if (!(typeof ms === "number" && ms > 0 && ms <= MAX_CONNECT_TIMEOUT_MS)) {
      this.#finish(new InvalidOptionError(`connectTimeoutMs must be a number of ms in (0, ${MAX_CONNECT_TIMEOUT_MS}], got ${String(ms)}`));
      return -1;
    }
    // Aborted while the socket was opening: an abort listener added now would never fire.
    if (this.#options.signal?.aborted === true) {
      this.#finish(new ConnectAbortedError(this.#peer, this.#options.signal.reason));
      return -1;
    }
    this.#timer = host.setTimeout(() => this.abort(new ConnectTimeoutError(this.#peer, this.#timeoutMs)), this.#timeoutMs);
    this.#options.signal?.addEventListener("abort", this.#onAbort, { once: true });
    try {
      const userData = this.#options.userData;
      // The endpoint's own deadline a little after this attempt's timer, so the timer (with the
      // caller's number in its error) decides.
      const timeoutMs = this.#timeoutMs + 1000;
      this.#id = this.#driver.endpoint.connect(monotonicNow(), this.#peer, userData !== undefined ? { userData, timeoutMs } : { timeoutMs });
    } catch (error) {
      this.#finish(error as Error);
      return -1;
    }
    return this.#id;
  }

  /** An endpoint event for this attempt's connection. */
  dispatch(event: ConnectionEvent): void {
    if (this.#connection !== undefined) return this.#connection._dispatch(event);
    if (event.type === "connect") {
      this.#connection = new Connection(this.#driver, this.#id, this.#peer, event.userData, this.#maxQueued, this.#hooks.closed);
      this.#connection._hold();
      this.#hooks.opened?.(this.#connection);
      this.#finish(undefined);
      // After the application's `await connect()` continuation has run (a later turn).
      const connection = this.#connection;
      deferToNextTurn(() => connection._release());
    } else if (event.type === "disconnect") {
      const peer = this.#peer;
      if (event.reason === "denied") this.#finish(new ConnectDeniedError(peer, event.deny, event.userData));
      else if (event.reason === "connect-timeout" || event.reason === "timeout") this.#finish(new ConnectTimeoutError(peer, this.#timeoutMs));
      else if (event.reason === "aborted") this.#finish(new ConnectAbortedError(peer, this.#options.signal?.reason));
      else this.#finish(new ConnectFailedError(peer, event.reason));
    }
  }

  /** The socket heard that nothing listens at the peer's port: give up with ConnectRefusedError
   *  (once connected, the session's own timeout decides). */
  refuse(): void {
    if (this.#connection === undefined) this.abort(new ConnectRefusedError(this.#peer));
  }

  /** Gives the handshake up (timeout, abort signal, the server closing). */
  abort(error: Error): void {
    if (this.#settled) return;
    try {
      if (this.#id >= 0) this.#driver.endpoint.close(this.#id, "aborted");
    } catch {
      // The endpoint may already have dropped the attempt; the error below is what matters.
    }
    this.#finish(error);
  }

  #finish(error: Error | undefined): void {
    if (this.#settled) return;
    this.#settled = true;
    host.clearTimeout(this.#timer);
    this.#options.signal?.removeEventListener("abort", this.#onAbort);
    if (error === undefined) return this.#resolve(this.#connection!);
    this.#reject(error);
    this.#hooks.failed?.();
  }
}

export type ConnectionEvent = Exclude<EndpointEvent, { type: "punch" }>;

export interface AttemptHooks {
  /** The handshake completed: the connection exists (its events are held until the next turn). */
  opened?: (connection: Connection) => void;
  /** The connection ended (after it opened). */
  closed: (connection: Connection) => void;
  /** The attempt failed (the promise rejected). */
  failed?: () => void;
}
