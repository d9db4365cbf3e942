/**
 * ackwire/worker: the transport on its own thread (MTUDP's "network I/O must not wait for
 * the game loop").
 *
 * `listen(options)` and `connect(target, options)` have the shape of the package root's, but
 * start a worker (a Web Worker on Bun and Deno, a node:worker_threads Worker on Node) that runs
 * the root's listen()/connect(): the socket, the driver and the WASM engine. A long frame on
 * the application's thread (a 30 ms physics step, a GC pause) no longer delays receiving,
 * acking, resending or keepalives; only the application's own handling of events waits.
 * One worker per listen() or connect(); it is terminated when the server or connection closes.
 * docs/WORKER.md describes the message protocol, the ownership of bytes and the costs.
 */
import { refuseOnSecureServer } from "../secure/errors.js";
import type { ClientIdentity } from "../secure/server-security.js";
import type { Address } from "../session/sans-io.js";
import { checkRelayFamily, formatAddress, parseTarget, type HostPort, type Target } from "../api/address.js";
import { DEFAULT_MAX_QUEUED_MESSAGES, type DisconnectInfo } from "../api/connection.js";
import { TypedEmitter } from "../api/emitter.js";
import { ClosedError, ConnectAbortedError, InvalidOptionError } from "../api/errors.js";
import type { ServerConnectOptions } from "../api/runtime.js";
import { RelayConfigError } from "../relay/errors.js";
import { checkRoute } from "../relay/routes.js";
import { tokenKey, virtualAddress } from "../relay/wire.js";
import { checkPunchArguments } from "../session/punch.js";
import { deferToNextTurn, host } from "../api/host.js";
import { validateCommon, type CommonOptions, type ConnectOptions, type ListenOptions } from "../api/options.js";
import { DEFAULT_CHANNELS, type ChannelConfig, type ConnectionStats } from "../session/types.js";
import { WorkerConnection, type ConnectionEvent } from "./connection.js";
import { WorkerLink } from "./link.js";
import { DEFAULT_STATS_INTERVAL_MS, type Command, type RuntimeName, type SocketCounters, type WorkerEvent } from "./protocol.js";
import { fromWireError, WorkerError } from "./wire-errors.js";

export interface WorkerFrontOptions {
  /** How often the worker pushes every connection's stats (ms); stats() returns the newest. 0: never (use fetchStats()). Default 100. */
  statsIntervalMs?: number;
  /**
   * false (default): send() copies the bytes, so the caller may reuse its buffer at once.
   * true: a Uint8Array that spans its whole ArrayBuffer is transferred without a copy and is
   * detached (length 0) on return; other views are still copied.
   */
  transferOnSend?: boolean;
}

/** listen() options; `accept`, `createEndpoint` and `trace` cannot cross to the worker (functions). */
export type WorkerListenOptions = Omit<ListenOptions, "accept" | "createEndpoint" | "trace"> & WorkerFrontOptions;
/** connect() options; `createEndpoint` and `trace` cannot cross to the worker. `signal` stays on this thread. */
export type WorkerConnectOptions = Omit<ConnectOptions, "createEndpoint" | "trace"> & WorkerFrontOptions;

export interface WorkerServerEvents {
  connection: WorkerConnection;
  disconnect: { connection: WorkerConnection; info: DisconnectInfo };
  /** A NAT_PUNCH with a token this server punches with arrived (as the root Server's "punch"). */
  punch: { address: string; token: Uint8Array };
  /** The worker failed (every connection is then ended with reason "aborted"). */
  error: Error;
}

/** A relay route as numbered on this thread; `seq` of the last relay-route command sent for it. */
interface FrontRoute {
  relay: string;
  token: Uint8Array;
  id: number;
  virtual: string;
  seq: number;
}

/** A connect() from the server's socket, waiting for the worker's answer. */
interface Opening {
  maxQueued: number;
  resolve(connection: WorkerConnection): void;
  reject(error: Error): void;
  /** Removes the abort listener. */
  settle(): void;
}

/** How long close() waits for the worker's "shut" before terminating it anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

function frontOptions(options: WorkerFrontOptions & CommonOptions, call: string): { statsIntervalMs: number; transferOnSend: boolean } {
  if ((options as { createEndpoint?: unknown }).createEndpoint !== undefined) {
    throw new InvalidOptionError(`${call}: createEndpoint is a function and cannot cross to the network worker; use the package root's ${call} to drive a custom endpoint`);
  }
  if ((options as { trace?: unknown }).trace !== undefined) {
    throw new InvalidOptionError(`${call}: trace is a function and cannot cross to the network worker; use the package root's ${call} to trace connections`);
  }
  const statsIntervalMs = options.statsIntervalMs ?? DEFAULT_STATS_INTERVAL_MS;
  if (!(typeof statsIntervalMs === "number" && Number.isFinite(statsIntervalMs) && statsIntervalMs >= 0)) {
    throw new InvalidOptionError(`${call}: statsIntervalMs must be a number of milliseconds >= 0 (0 turns the stats push off), got ${String(statsIntervalMs)}`);
  }
  return { statsIntervalMs, transferOnSend: options.transferOnSend === true };
}

/** Drops the options that stay on this thread; what is left must survive structured cloning. */
function wireOptions<T extends object>(options: T, local: readonly string[]): T {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) if (!local.includes(key) && value !== undefined) out[key] = value;
  return out as T;
}

function postStart(link: WorkerLink, command: Command, call: string): void {
  try {
    link.postNow(command);
  } catch (error) {
    link.terminate();
    throw new InvalidOptionError(`${call}: the options must be plain data to cross to the network worker (${(error as Error)?.message ?? String(error)})`);
  }
}

/** What a server's connections are created with. */
interface ServerConnectionOptions {
  maxQueued: number;
  channels: readonly ChannelConfig[];
  transferOnSend: boolean;
  /** listen's `secure` was given: no connect(), punch() or relay routes. */
  secure: boolean;
}

/** A listening endpoint on the network worker: one socket, many connections. */
export class WorkerServer extends TypedEmitter<WorkerServerEvents> {
  /** The runtime the worker runs in (the same as this thread's). */
  readonly runtime: RuntimeName;
  readonly address: HostPort;
  /** Resolves once the worker was terminated. */
  readonly workerStopped: Promise<void>;
  #link: WorkerLink;
  #connections = new Map<number, WorkerConnection>();
  #counters: SocketCounters = { wakeups: 0, datagramsIn: 0, datagramsOut: 0, sendFailures: 0, receiveErrors: 0 };
  #options: ServerConnectionOptions;
  #closing: Promise<void> | undefined;
  #shut: (() => void) | undefined;
  #opening = new Map<number, Opening>();
  #nextReq = 1;
  /**
   * Relay routes as numbered here: virtual address -> route, and token -> virtual address. The
   * worker's server adds each under the same number, and says when it evicts one
   * ("relay-evicted"), so this list follows its least-recently-used choice.
   */
  #routes = new Map<string, FrontRoute>();
  #routeOfToken = new Map<string, FrontRoute>();
  #nextRoute = 1;
  #routeSeq = 0;

  /** @internal use listen(). */
  constructor(link: WorkerLink, address: HostPort, options: ServerConnectionOptions) {
    super();
    this.#link = link;
    this.runtime = link.runtime;
    this.address = address;
    this.workerStopped = link.stopped;
    this.#options = options;
    // The worker is gone (closed, or terminated after the grace period): connects still waiting
    // for its answer will not get one, and connections it did not report ended are over (a
    // client that never acknowledged its server-shutdown kept its connection open for ever).
    void link.stopped.then(() => {
      this.#rejectOpening(new ClosedError("this server"));
      const reason = this.#closing !== undefined ? "server-shutdown" : "aborted";
      for (const conn of [...this.#connections.values()]) conn._end({ reason });
    });
    link.bind(
      (events) => {
        for (const event of events) this.#route(event);
      },
      (error) => this.#fail(error),
    );
  }

  get connections(): ReadonlyMap<number, WorkerConnection> {
    return this.#connections;
  }

  /** The worker's socket counters, as of its last stats push. */
  counters(): SocketCounters {
    return { ...this.#counters };
  }

  /** Crossings between the threads so far: postMessage batches each way and the commands/events in them. */
  workerCounters(): WorkerLink["counters"] {
    return { ...this.#link.counters };
  }

  /**
   * Connects from this server's socket on the worker (the root Server's connect(): peer to peer,
   * NAT punching, the lobby from the game's port). Resolves with the connection, which is in
   * `connections`; no "connection" event fires for it. Rejects as the root's does.
   */
  async connect(target: Target, options: ServerConnectOptions = {}): Promise<WorkerConnection> {
    if (this.#closing !== undefined || this.#link.terminated) throw new ClosedError("this server");
    refuseOnSecureServer(this.#options.secure, "connect()");
    const { host: peerHost, port } = parseTarget(target);
    const targetText = typeof target === "string" ? target : formatAddress(peerHost, port);
    const signal = options.signal;
    if (signal?.aborted) throw new ConnectAbortedError(targetText, signal.reason);
    const req = this.#nextReq++;
    const maxQueued = options.maxQueuedMessages ?? this.#options.maxQueued;
    return new Promise<WorkerConnection>((resolve, reject) => {
      const onAbort = (): void => this.#link.command({ op: "server-connect-abort", req });
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#opening.set(req, {
        maxQueued,
        resolve: (connection) => resolve(connection),
        reject: (error) => {
          if (signal?.aborted && (error as { code?: string }).code === "ERR_CONNECT_ABORTED") (error as { cause?: unknown }).cause = signal.reason;
          reject(error);
        },
        settle: () => signal?.removeEventListener("abort", onAbort),
      });
      const wire: { userData?: Uint8Array; connectTimeoutMs?: number } = {};
      if (options.userData !== undefined) wire.userData = options.userData;
      if (options.connectTimeoutMs !== undefined) wire.connectTimeoutMs = options.connectTimeoutMs;
      this.#link.command({ op: "server-connect", req, target, options: wire });
    });
  }

  /** Sends one NAT_PUNCH from this server's socket (the root Server's punch()). */
  punch(address: string, token: Uint8Array, acceptToken: Uint8Array = token): void {
    // The root Server's checks, here, so a bad argument throws at the call as it does there.
    checkPunchArguments(address, token, acceptToken);
    refuseOnSecureServer(this.#options.secure, "punch()");
    if (this.#closing !== undefined || this.#link.terminated) return;
    this.#link.command({ op: "punch", address, token: token.slice(), acceptToken: acceptToken.slice() });
  }

  /**
   * The root Server's addRelayRoute(): routes the peer that shares a relay allocation with
   * `token` through `relay`, binds once, and returns the peer's virtual address. Numbered on
   * this thread, so the address is known at once; the worker's server uses the same number.
   */
  addRelayRoute(relayAddress: string, token: Uint8Array): string {
    if (this.#closing !== undefined || this.#link.terminated) throw new ClosedError("this server");
    refuseOnSecureServer(this.#options.secure, "addRelayRoute()");
    // The checks of the worker's server (RelayRoutes.add, Server.addRelayRoute), made here.
    checkRelayFamily(relayAddress, this.address);
    const relay = checkRoute(relayAddress, token);
    const key = tokenKey(token);
    let route = this.#routeOfToken.get(key);
    if (route !== undefined && route.relay !== relay) throw new RelayConfigError("this relay token is already routed through another relay");
    const seq = ++this.#routeSeq;
    if (route === undefined) {
      const id = this.#nextRoute++;
      route = { relay, token: token.slice(), id, seq, virtual: virtualAddress(id, Number(relay.slice(relay.lastIndexOf(":") + 1))) };
      this.#routes.set(route.virtual, route);
      this.#routeOfToken.set(key, route);
    } else {
      route.seq = seq;
    }
    // Sent again for a known token too: the worker's server answers it with one more bind (and
    // adds the route back if it had just evicted it; its eviction report then names an older seq).
    this.#link.command({ op: "relay-route", relay, token: token.slice(), id: route.id, virtual: route.virtual, seq });
    return route.virtual;
  }

  /** Whether the server was started with listen's `secure` option (PROTOCOL §9). */
  get secure(): boolean {
    return this.#options.secure;
  }

  /**
   * On a secure server, who the connect token says the client at `address` is: undefined on a
   * plain server, or with no connection at that address (the root Server's identityOf(); the
   * worker's associations stay in the worker, so this one knows only connected clients).
   */
  identityOf(address: Address): ClientIdentity | undefined {
    for (const conn of this.#connections.values()) if (conn.address === address) return conn.identity;
    return undefined;
  }

  /** Sends one more bind for a route (the root Server's bindRelayRoute()); never throws. */
  bindRelayRoute(virtual: string): boolean {
    if (this.#closing !== undefined || this.#link.terminated || !this.#routes.has(virtual)) return false;
    this.#link.command({ op: "relay-bind", virtual });
    return true;
  }

  removeRelayRoute(virtual: string): void {
    if (!this.#forgetRoute(virtual)) return;
    if (!this.#link.terminated) this.#link.command({ op: "relay-unroute", virtual });
  }

  /** Drops a route from this thread's list; false if it was not there. */
  #forgetRoute(virtual: string): boolean {
    const route = this.#routes.get(virtual);
    if (route === undefined) return false;
    this.#routes.delete(virtual);
    this.#routeOfToken.delete(tokenKey(route.token));
    return true;
  }

  /** Rejects every connect() still waiting for the worker's answer. */
  #rejectOpening(error: Error): void {
    for (const opening of this.#opening.values()) {
      opening.settle();
      opening.reject(error);
    }
    this.#opening.clear();
  }

  /** Tells every client (reason "server-shutdown"), closes the socket, then terminates the worker. */
  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      if (this.#link.terminated) return resolve();
      const timer = host.setTimeout(() => this.#link.terminate(), SHUTDOWN_GRACE_MS);
      this.#shut = () => {
        host.clearTimeout(timer);
        this.#link.terminate();
      };
      void this.#link.stopped.then(() => {
        host.clearTimeout(timer);
        resolve();
      });
      this.#link.command({ op: "shutdown" });
    });
    return this.#closing;
  }

  #route(event: WorkerEvent): void {
    switch (event.t) {
      case "connection":
        this.emit("connection", this.#adopt(event.c, event, this.#options.maxQueued));
        return;
      case "opened": {
        const opening = this.#opening.get(event.req);
        this.#opening.delete(event.req);
        const conn = this.#adopt(event.id, event, opening?.maxQueued ?? this.#options.maxQueued);
        if (opening === undefined) return;
        opening.settle();
        // Its events wait until the application's `await connect()` continuation has run.
        conn._hold();
        opening.resolve(conn);
        deferToNextTurn(() => conn._release());
        return;
      }
      case "open-failed": {
        const opening = this.#opening.get(event.req);
        this.#opening.delete(event.req);
        opening?.settle();
        opening?.reject(fromWireError(event.error));
        return;
      }
      case "punch":
        this.emit("punch", { address: event.address, token: event.token });
        return;
      case "relay-evicted":
      case "relay-refused":
        // Only if no relay-route for it left since the one the worker speaks of.
        if (this.#routes.get(event.virtual)?.seq === event.seq) this.#forgetRoute(event.virtual);
        return;
      case "counters":
        this.#counters = event.counters;
        return;
      case "shut":
        this.#shut?.();
        return;
      default:
        if ("c" in event) this.#connections.get(event.c)?._dispatch(event as ConnectionEvent);
    }
  }

  /** A connection of this server's (a client's, or one it opened): held in `connections`, its end reported as the server's "disconnect". */
  #adopt(id: number, init: { address: string; userData: Uint8Array; stats: ConnectionStats; limits: number[]; identity?: ClientIdentity }, maxQueued: number): WorkerConnection {
    const conn = new WorkerConnection({
      link: this.#link,
      id,
      address: init.address,
      userData: init.userData,
      ...(init.identity !== undefined ? { identity: init.identity } : {}),
      stats: init.stats,
      limits: init.limits,
      maxQueued,
      channels: this.#options.channels,
      transferOnSend: this.#options.transferOnSend,
      onClosed: (c) => this.#connections.delete(c.id),
      runtime: this.runtime,
    });
    this.#connections.set(id, conn);
    conn.once("disconnect", (info) => this.emit("disconnect", { connection: conn, info }));
    return conn;
  }

  #fail(error: Error): void {
    this.emit("error", error);
    this.#rejectOpening(error);
    for (const conn of [...this.#connections.values()]) conn._fail(error);
  }
}

/** Opens a server socket on the network worker (`port: 0`: read `server.address.port`). */
export async function listen(options: WorkerListenOptions): Promise<WorkerServer> {
  validateCommon(options, "listen()");
  if ((options as { accept?: unknown }).accept !== undefined) {
    throw new InvalidOptionError("listen(): an accept hook is a function and cannot run on the network worker; use maxConnections, appVersion and channel lists to refuse clients, or the package root's listen() for an accept hook");
  }
  const front = frontOptions(options, "listen()");
  const link = await WorkerLink.start();
  return new Promise<WorkerServer>((resolve, reject) => {
    link.bind(
      (events) => {
        for (const event of events) {
          if (event.t === "listening") {
            const channels = options.channels ?? DEFAULT_CHANNELS;
            const server = new WorkerServer(link, event.address, { maxQueued: options.maxQueuedMessages ?? DEFAULT_MAX_QUEUED_MESSAGES, channels, transferOnSend: front.transferOnSend, secure: options.secure !== undefined });
            resolve(server);
          } else if (event.t === "failed") {
            link.terminate();
            reject(fromWireError(event.error));
          }
        }
      },
      (error) => reject(error),
    );
    postStart(link, { op: "listen", options: wireOptions(options, ["statsIntervalMs", "transferOnSend"]), statsIntervalMs: front.statsIntervalMs }, "listen()");
  });
}

/** Connects through the network worker; resolves once the handshake completes. */
export async function connect(target: Target, options: WorkerConnectOptions): Promise<WorkerConnection> {
  validateCommon(options, "connect()");
  const { host: peerHost, port } = parseTarget(target);
  const front = frontOptions(options, "connect()");
  const signal = options.signal;
  const targetText = typeof target === "string" ? target : formatAddress(peerHost, port);
  if (signal?.aborted) throw new ConnectAbortedError(targetText, signal.reason);
  const link = await WorkerLink.start();
  if (signal?.aborted) {
    link.terminate();
    throw new ConnectAbortedError(targetText, signal.reason);
  }
  const channels = options.channels ?? DEFAULT_CHANNELS;
  const maxQueued = options.maxQueuedMessages ?? DEFAULT_MAX_QUEUED_MESSAGES;

  return new Promise<WorkerConnection>((resolve, reject) => {
    let connection: WorkerConnection | undefined;
    let shutTimer: unknown;
    const onAbort = (): void => link.command({ op: "abort" });
    signal?.addEventListener("abort", onAbort, { once: true });
    const settle = (): void => signal?.removeEventListener("abort", onAbort);
    const onClosed = (): void => {
      // A client's worker holds one connection: once it ended, let the worker close its socket, then stop it.
      shutTimer = host.setTimeout(() => link.terminate(), SHUTDOWN_GRACE_MS);
      link.command({ op: "shutdown" });
    };
    link.bind(
      (events) => {
        for (const event of events) {
          if (connection !== undefined) {
            if (event.t === "shut") {
              host.clearTimeout(shutTimer);
              link.terminate();
            } else if ("c" in event) connection._dispatch(event as ConnectionEvent);
            continue;
          }
          if (event.t === "connected") {
            settle();
            connection = new WorkerConnection({ link, id: event.c, address: event.address, userData: event.userData, stats: event.stats, limits: event.limits, maxQueued, channels, transferOnSend: front.transferOnSend, onClosed, workerStopped: link.stopped, runtime: link.runtime });
            connection._hold();
            resolve(connection);
            // After the application's `await connect()` continuation has run (a later turn).
            const held = connection;
            deferToNextTurn(() => held._release());
          } else if (event.t === "failed") {
            settle();
            link.terminate();
            const error = fromWireError(event.error);
            if (signal?.aborted && (error as { code?: string }).code === "ERR_CONNECT_ABORTED") (error as { cause?: unknown }).cause = signal.reason;
            reject(error);
          }
        }
      },
      (error) => {
        settle();
        if (connection === undefined) return reject(error);
        connection._fail(error);
      },
    );
    try {
      postStart(link, { op: "connect", target, options: wireOptions(options, ["signal", "statsIntervalMs", "transferOnSend"]), statsIntervalMs: front.statsIntervalMs }, "connect()");
    } catch (error) {
      settle();
      reject(error);
    }
  });
}

export { WorkerConnection } from "./connection.js";
export type { WorkerConnectionEvents } from "./connection.js";
export { WorkerError } from "./wire-errors.js";
export type { SocketCounters, RuntimeName } from "./protocol.js";
export type { ConnectionStats, ChannelConfig };
export { DEFAULT_CHANNELS };
export * from "../api/errors.js";
export * from "../session/errors.js";
export { RelayConfigError } from "../relay/errors.js";
export { CongestionConfigError } from "../congestion/errors.js";
export { ConnectTokenError, SecureConfigError } from "../secure/errors.js";
export { EngineConfigError } from "../engine/layout.js";
export { TraceFormatError } from "../trace/summary.js";
