/**
 * listen() and connect() over any RuntimeAdapter. Each runtime folder calls createRuntime()
 * with its adapter; the package root picks the folder for the runtime it runs in.
 */
import { Endpoint } from "../session/endpoint.js";
import type { EndpointConfig, EndpointEvent } from "../session/types.js";
import { formatAddress, isIpv4Literal, isIpv6Literal, parseTarget, type HostPort, type Target } from "./address.js";
import { Connection, DEFAULT_MAX_QUEUED_MESSAGES, type DisconnectInfo } from "./connection.js";
import { Driver } from "./driver.js";
import type { EndpointLike } from "./endpoint-like.js";
import { TypedEmitter } from "./emitter.js";
import { ConnectAbortedError, ConnectDeniedError, ConnectFailedError, ConnectTimeoutError, InvalidOptionError } from "./errors.js";
import { deferToNextTurn, host, monotonicNow } from "./host.js";
import { endpointConfig, validateCommon, type CommonOptions, type ConnectOptions, type ListenOptions } from "./options.js";
import type { RuntimeAdapter } from "./socket.js";

const DEFAULT_SOCKET_BUFFER = 4 * 1024 * 1024;
const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

export interface Runtime {
  readonly name: RuntimeAdapter["name"];
  listen(options: ListenOptions): Promise<Server>;
  connect(target: Target, options: ConnectOptions): Promise<Connection>;
}

export function createRuntime(adapter: RuntimeAdapter): Runtime {
  return {
    name: adapter.name,
    listen: (options) => listenWith(adapter, options),
    connect: (target, options) => connectWith(adapter, target, options),
  };
}

function makeEndpoint(options: CommonOptions, config: EndpointConfig): EndpointLike {
  if (options.createEndpoint !== undefined) return options.createEndpoint(config);
  return new Endpoint(config);
}

export interface ServerEvents {
  connection: Connection;
  disconnect: { connection: Connection; info: DisconnectInfo };
}

/** A listening endpoint: one socket, many connections. */
export class Server extends TypedEmitter<ServerEvents> {
  readonly runtime: RuntimeAdapter["name"];
  /** The bound address; `address.port` is the real port when you passed 0. */
  readonly address: HostPort;
  #driver: Driver;
  #connections = new Map<number, Connection>();
  #maxQueued: number;
  #closing: Promise<void> | undefined;

  /** @internal use listen(). */
  constructor(runtime: RuntimeAdapter["name"], driver: Driver, maxQueued: number) {
    super();
    this.runtime = runtime;
    this.#driver = driver;
    this.address = driver.socket.localAddress;
    this.#maxQueued = maxQueued;
  }

  /** Open connections, by id. */
  get connections(): ReadonlyMap<number, Connection> {
    return this.#connections;
  }

  /** @internal */
  _onEvent(event: EndpointEvent): void {
    if (event.type === "connect") {
      const conn = new Connection(this.#driver, event.connection, event.address, event.userData, this.#maxQueued, (c) => this.#connections.delete(c.id));
      this.#connections.set(event.connection, conn);
      conn.once("disconnect", (info) => this.emit("disconnect", { connection: conn, info }));
      this.emit("connection", conn);
      return;
    }
    this.#connections.get(event.connection)?._dispatch(event);
  }

  /** Endpoint and driver counters (datagrams, wake-ups, socket failures). */
  counters(): { wakeups: number; datagramsIn: number; datagramsOut: number; sendFailures: number; receiveErrors: number } {
    return { ...this.#driver.counters, ...this.#driver.socket.counters };
  }

  /** Tells every client (reason "server-shutdown"), then closes the socket. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      // Each close resolves when the client acknowledged or the endpoint's close timeout passed;
      // the socket stays open until then so a lost DISCONNECT is resent.
      await Promise.all([...this.#connections.values()].map((conn) => conn.close("server-shutdown")));
      this.#driver.service();
      await this.#driver.close();
    })();
    return this.#closing;
  }
}

async function listenWith(adapter: RuntimeAdapter, options: ListenOptions): Promise<Server> {
  validateCommon(options, "listen()");
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidOptionError(`listen(): port must be an integer in 0..65535 (0 lets the OS pick), got ${String(port)}`);
  const bindHost = options.host ?? "0.0.0.0";
  if (!isIpv4Literal(bindHost) && !isIpv6Literal(bindHost)) throw new InvalidOptionError(`listen(): host must be an IP address to bind ("0.0.0.0", "::", "127.0.0.1", "::1"), got ${JSON.stringify(bindHost)}`);
  const extra: Partial<EndpointConfig> = {};
  if (options.maxConnections !== undefined) extra.maxConnections = options.maxConnections;
  if (options.maxPendingHandshakes !== undefined) extra.maxPendingHandshakes = options.maxPendingHandshakes;
  if (options.handshakeRatePerAddress !== undefined) extra.handshakeRatePerAddress = options.handshakeRatePerAddress;
  if (options.accept !== undefined) extra.accept = options.accept;
  const endpoint = makeEndpoint(options, endpointConfig(options, true, extra));
  const socket = await adapter.openSocket({
    host: bindHost,
    port,
    receiveBufferBytes: options.receiveBufferBytes ?? DEFAULT_SOCKET_BUFFER,
    sendBufferBytes: options.sendBufferBytes ?? DEFAULT_SOCKET_BUFFER,
  });
  let server: Server | undefined;
  const driver = new Driver(endpoint, socket, (event) => server?._onEvent(event), { dropTest: options.dropTest, seed: options.seed });
  server = new Server(adapter.name, driver, options.maxQueuedMessages ?? DEFAULT_MAX_QUEUED_MESSAGES);
  driver.service();
  return server;
}

async function connectWith(adapter: RuntimeAdapter, target: Target, options: ConnectOptions): Promise<Connection> {
  validateCommon(options, "connect()");
  const { host: peerHost, port } = parseTarget(target);
  const signal = options.signal;
  const targetText = typeof target === "string" ? target : formatAddress(peerHost, port);
  if (signal?.aborted) throw new ConnectAbortedError(targetText, signal.reason);
  const ip = isIpv4Literal(peerHost) || isIpv6Literal(peerHost) ? peerHost : await adapter.resolve(peerHost);
  if (signal?.aborted) throw new ConnectAbortedError(targetText, signal.reason);
  const peer = formatAddress(ip, port);
  const endpoint = makeEndpoint(options, endpointConfig(options, false));
  const socket = await adapter.openSocket({
    host: isIpv6Literal(ip) ? "::" : "0.0.0.0",
    port: 0,
    peer: { host: ip, port },
    receiveBufferBytes: options.receiveBufferBytes ?? DEFAULT_SOCKET_BUFFER,
    sendBufferBytes: options.sendBufferBytes ?? DEFAULT_SOCKET_BUFFER,
  });
  const maxQueued = options.maxQueuedMessages ?? DEFAULT_MAX_QUEUED_MESSAGES;
  const timeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;

  return new Promise<Connection>((resolve, reject) => {
    let connection: Connection | undefined;
    let settled = false;
    let id = -1;
    const finish = (error: Error | undefined): void => {
      if (settled) return;
      settled = true;
      host.clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      if (error === undefined) return resolve(connection!);
      reject(error);
      if (!driver.closed) {
        driver.service();
        void driver.close();
      }
    };
    const driver = new Driver(endpoint, socket, (event) => {
      if (event.connection !== id) return;
      if (connection !== undefined) return connection._dispatch(event);
      if (event.type === "connect") {
        connection = new Connection(driver, id, peer, event.userData, maxQueued, () => {
          // A client owns its socket: once the last packet is out, close it.
          host.queueMicrotask(() => void driver.close());
        });
        connection._hold();
        finish(undefined);
        // After the application's `await connect()` continuation has run (a later turn).
        deferToNextTurn(() => connection!._release());
      } else if (event.type === "disconnect") {
        if (event.reason === "denied") finish(new ConnectDeniedError(peer, event.deny, event.userData));
        else if (event.reason === "connect-timeout" || event.reason === "timeout") finish(new ConnectTimeoutError(peer, timeoutMs));
        else if (event.reason === "aborted") finish(new ConnectAbortedError(peer, signal?.reason));
        else finish(new ConnectFailedError(peer, event.reason));
      }
    }, { dropTest: options.dropTest, seed: options.seed });
    const giveUp = (error: Error): void => {
      if (settled) return;
      try {
        if (id >= 0) endpoint.close(id, "aborted");
      } catch {
        // The endpoint may already have dropped the attempt; the error below is what matters.
      }
      finish(error);
    };
    const onAbort = (): void => giveUp(new ConnectAbortedError(peer, signal?.reason));
    const timer = host.setTimeout(() => giveUp(new ConnectTimeoutError(peer, timeoutMs)), timeoutMs);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      id = endpoint.connect(monotonicNow(), peer, options.userData !== undefined ? { userData: options.userData } : {});
    } catch (error) {
      finish(error as Error);
      return;
    }
    driver.service();
  });
}
