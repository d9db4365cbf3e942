/**
 * listen() and connect() over any RuntimeAdapter. Each runtime folder calls createRuntime()
 * with its adapter; the package root picks the folder for the runtime it runs in.
 */
import { Endpoint, readAcceptDecision, type EndpointCounters } from "../session/endpoint.js";
import { isThenable } from "../session/pending-accepts.js";
import type { AcceptDecision, EndpointConfig, EndpointEvent } from "../session/types.js";
import { checkRelayFamily, formatAddress, isIpv4Literal, isIpv6Literal, parseTarget, type HostPort, type Target } from "./address.js";
import { Connection, DEFAULT_MAX_QUEUED_MESSAGES, type DisconnectInfo } from "./connection.js";
import { Driver } from "./driver.js";
import type { EndpointLike } from "./endpoint-like.js";
import { TypedEmitter } from "./emitter.js";
import { ClosedError, ConnectAbortedError, ConnectDeniedError, ConnectRefusedError, ConnectFailedError, ConnectTimeoutError, InvalidOptionError, ListenerError } from "./errors.js";
import { deferToNextTurn, host, monotonicNow } from "./host.js";
import { endpointConfig, validateCommon, type CommonOptions, type ConnectOptions, type ListenOptions } from "./options.js";
import type { RuntimeAdapter } from "./socket.js";
import type { AbortSignalLike } from "./host.js";
import type { Address } from "../session/sans-io.js";
import { channelNameIndex } from "./send-options.js";
import { listenRelayWith, type RelayListenOptions, type RelayServer } from "./relay-server.js";
import { RelayingSocket } from "./relay-socket.js";
import { canonicalAddress } from "../relay/wire.js";
import { attachWebRtc, openWebRtcJoin, webrtcInfo, webrtcPeerCarrier, type WebRtcInfo } from "./webrtc-listen.js";
import type { WebRtcJoinSocket } from "./webrtc-socket.js";
import { ConnectAttempt, type ConnectionEvent, type ServerConnectOptions } from "./connect-attempt.js";
export type { ServerConnectOptions } from "./connect-attempt.js";
import { makeRoomForSeal, serverSecurityOptions } from "./secure-options.js";
import { refuseOnSecureServer } from "../secure/errors.js";
import { parseConnectToken } from "../secure/token.js";
import { wasmAead } from "../secure/wasm-aead.js";
import { SecureClientSocket, SecureServerSocket } from "./secure-socket.js";
import { followConnections, type ClientIdentity, type ServerSecurityCounters } from "../secure/server-security.js";
import { broadcastTo, type BroadcastOptions } from "./broadcast.js";
import { GroupRegistry, type Group } from "./groups.js";
import { serverStats, type ServerStats } from "./server-stats.js";

const DEFAULT_SOCKET_BUFFER = 4 * 1024 * 1024;

export interface Runtime {
  readonly name: RuntimeAdapter["name"];
  listen(options: ListenOptions): Promise<Server>;
  connect(target: Target, options: ConnectOptions): Promise<Connection>;
  /** A relay for peers that NAT punching cannot connect (src/api/relay-server.ts). */
  listenRelay(options?: RelayListenOptions): Promise<RelayServer>;
}

export function createRuntime(adapter: RuntimeAdapter): Runtime {
  return {
    name: adapter.name,
    listen: (options) => listenWith(adapter, options),
    connect: (target, options) => connectWith(adapter, target, options),
    listenRelay: (options) => listenRelayWith(adapter, options),
  };
}

/** The engine's drop reasons (DropReason in src/engine/abi.ts, by index) as counter names. */
const DROP_NAMES = [
  "tooShort",
  "badCrc",
  "unknownType",
  "badLength",
  "stalePacket",
  "duplicatePacket",
  "malformedFrame",
  "unknownPeer",
  "staleMessage",
  "duplicateMessage",
  "tooFarAhead",
] as const;

/** The session Endpoint's counters, with its drops named (PROTOCOL.md, "Clarifications"). */
export type SessionCounters = Omit<EndpointCounters, "drops"> & { drops: Record<(typeof DROP_NAMES)[number], number> };

function sessionCounters(c: EndpointCounters): SessionCounters {
  const drops = {} as SessionCounters["drops"];
  DROP_NAMES.forEach((name, i) => (drops[name] = c.drops[i + 1] ?? 0));
  return { ...c, drops };
}

/** The accept hook's answer, or InvalidOptionError naming what it returned. */
function checkAcceptDecision(decision: unknown): AcceptDecision {
  if (readAcceptDecision(decision) === undefined) {
    throw new InvalidOptionError(`listen(): the accept hook returns (or resolves to) true, false or { accept: boolean, userData?: Uint8Array }, got ${describeValue(decision)}`);
  }
  return decision as AcceptDecision;
}

/** A value as an error message shows it: its type, or its JSON for plain objects and arrays. */
function describeValue(value: unknown): string {
  if (value === null || value === undefined || typeof value !== "object") return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

function makeEndpoint(options: CommonOptions, config: EndpointConfig): EndpointLike {
  if (options.createEndpoint !== undefined) return options.createEndpoint(config);
  return new Endpoint(config);
}

export interface ServerEvents {
  connection: Connection;
  disconnect: { connection: Connection; info: DisconnectInfo };
  /**
   * A NAT_PUNCH with a token this server is punching with arrived from `address` (see
   * `punch()`): that address reaches this socket through both NATs.
   */
  punch: { address: Address; token: Uint8Array };
  /**
   * An application callback threw: the accept hook (`error.event` "accept"), a listener of this
   * server, or a listener of one of its connections that has no "error" listener of its own
   * (`error.connection`). The server keeps running; without an "error" listener the error is
   * printed to the console (docs/RUNTIMES.md, "Errors thrown by your listeners").
   */
  error: ListenerError;
}

/**
 * A listening endpoint: one socket, many connections. It also opens connections of its own
 * from that socket (`connect()`), so that a peer-to-peer game, or a host behind a NAT that
 * registered with a lobby from this socket, needs one port only.
 */
export class Server extends TypedEmitter<ServerEvents> {
  readonly runtime: RuntimeAdapter["name"];
  /** The bound address; `address.port` is the real port when you passed 0. */
  readonly address: HostPort;
  #adapter: RuntimeAdapter;
  #driver: Driver;
  #socket: RelayingSocket;
  /** The secure layer under the relay routes, on a secure server (listen's `secure`). */
  #secure: SecureServerSocket | undefined;
  #connections = new Map<number, Connection>();
  /** Connections this server opened itself (connect()), until they connect or fail. */
  #attempts = new Map<number, ConnectAttempt>();
  #maxQueued: number;
  #closing: Promise<void> | undefined;
  #groups: GroupRegistry;

  /** @internal use listen(). */
  constructor(adapter: RuntimeAdapter, driver: Driver, socket: RelayingSocket, maxQueued: number, secure?: SecureServerSocket) {
    super();
    this.runtime = adapter.name;
    this.#adapter = adapter;
    this.#driver = driver;
    this.#socket = socket;
    this.#secure = secure;
    this.address = driver.socket.localAddress;
    this.#maxQueued = maxQueued;
    this.#groups = new GroupRegistry(driver, (c) => this.#connections.get(c.id) === c);
    this.on("disconnect", ({ connection }) => this.#groups.leaveAll(connection));
  }

  /** Where browser clients connect (listen's `webrtc`): the signaling URL and the carrier's counters. */
  get webrtc(): WebRtcInfo | undefined {
    return webrtcInfo(this);
  }

  /** Open connections, by id: the clients' and those this server opened with connect(). */
  get connections(): ReadonlyMap<number, Connection> {
    return this.#connections;
  }

  /**
   * Connects from this server's socket to another endpoint that listens, e.g. a peer in a
   * peer-to-peer game, or a NAT-punched host (src/game/nat.ts). Resolves with the Connection
   * (it is in `connections`, but no "connection" event fires for it); rejects as the
   * package's connect() does. Its channels and settings are this server's.
   */
  async connect(target: Target, options: ServerConnectOptions = {}): Promise<Connection> {
    if (this.#closing !== undefined) throw new ClosedError("this server");
    refuseOnSecureServer(this.#secure !== undefined, "connect()");
    const { peer, targetText } = await resolvePeer(this.#adapter, target, options.signal);
    // close() may have run while the target was resolved: it aborted the attempts it saw.
    if (this.#closing !== undefined) throw new ClosedError("this server");
    const ipv6 = peer.startsWith("[");
    // A relayed peer's virtual address is IPv6 whatever the relay's family (addRelayRoute checked that).
    if (ipv6 !== isIpv6Literal(this.address.host) && this.#socket.routes.get(peer) === undefined) {
      throw new InvalidOptionError(`connect(): ${targetText} is ${ipv6 ? "IPv6" : "IPv4"} but this server's socket is bound to ${this.address.host}; listen on ${ipv6 ? '"::"' : '"0.0.0.0"'} to reach it`);
    }
    const attempt = new ConnectAttempt(this.#driver, peer, options, options.maxQueuedMessages ?? this.#maxQueued, {
      // At the "connect" event itself, not in this method's continuation a turn later: a
      // close() in between must see it (and tell the peer).
      opened: (connection) => this.#adopt(connection),
      closed: (c) => this.#connections.delete(c.id),
    });
    const id = attempt.start();
    if (id >= 0) {
      // Routed to the attempt before the first service can produce its events.
      this.#attempts.set(id, attempt);
      this.#driver.service();
    }
    try {
      return await attempt.promise;
    } finally {
      this.#attempts.delete(id);
    }
  }

  /**
   * Sends one NAT_PUNCH to `address` (PROTOCOL §7) carrying the 8-byte `token` an introducer
   * gave: it opens this socket's NAT for packets from there. For 30 s, punches that arrive with
   * `acceptToken` (default: `token`) are "punch" events. src/game/nat.ts schedules the repeats.
   */
  punch(address: Address, token: Uint8Array, acceptToken: Uint8Array = token): void {
    refuseOnSecureServer(this.#secure !== undefined, "punch()");
    const endpoint = this.#driver.endpoint;
    if (endpoint.punch === undefined) throw new InvalidOptionError("punch(): this server's endpoint (createEndpoint) has no punch()");
    endpoint.punch(monotonicNow(), address, token, acceptToken);
    this.#driver.requestService();
  }

  /**
   * Routes datagrams to the peer that shares a relay allocation with `token` (8 bytes, from an
   * introduction: src/game/nat.ts) through the relay at `relay` ("ip:port", PROTOCOL §8), and
   * sends the relay one bind so it learns this socket's public address. Returns the peer's
   * virtual address ("[100::...]:port"): connect() to it, or expect the peer's connection
   * from it. Calling it again with the same token sends another bind and returns the same
   * address. At most 64 routes; the one used longest ago makes room.
   */
  addRelayRoute(relay: Address, token: Uint8Array): Address {
    return this._addRelayRoute(relay, token, undefined);
  }

  /** @internal addRelayRoute() with the route's number chosen by the caller (ackwire/worker's front end numbers them). */
  _addRelayRoute(relay: Address, token: Uint8Array, id: number | undefined): Address {
    if (this.#closing !== undefined) throw new ClosedError("this server");
    refuseOnSecureServer(this.#secure !== undefined, "addRelayRoute()");
    checkRelayFamily(relay, this.address);
    const virtual = this.#socket.routes.add(relay, token, id);
    this.#socket.sendBind(virtual);
    return virtual;
  }

  /**
   * Sends one more bind for a route added with addRelayRoute(), so the relay keeps (or learns
   * again) this socket's public address. False, and nothing sent, if the route is gone or the
   * server is closing; it never throws (punch timers call it).
   */
  bindRelayRoute(virtual: Address): boolean {
    if (this.#closing !== undefined || this.#driver.closed) return false;
    return this.#socket.sendBind(virtual);
  }

  /** @internal ackwire/worker's worker tells its front end which routes were evicted. */
  _onRelayEvicted(listener: (virtual: Address) => void): void {
    this.#socket.routes.onEvict = (route) => listener(route.virtual);
  }

  /** Drops a relay route (its connection, if any, then times out unless it closed first). */
  removeRelayRoute(virtual: Address): void {
    this.#socket.routes.remove(virtual);
  }

  /** Whether this server was started with listen's `secure` option (PROTOCOL §9). */
  get secure(): boolean {
    return this.#secure !== undefined;
  }

  /**
   * On a secure server, who the connect token says the client at `address` is (undefined on a
   * plain server, or for an address with no association). Also `connection.identity`.
   */
  identityOf(address: Address): ClientIdentity | undefined {
    return this.#secure?.security.identityOf(address);
  }

  /** @internal */
  _onEvent(event: EndpointEvent): void {
    if (event.type === "punch") {
      this.emit("punch", { address: event.address, token: event.token });
      return;
    }
    if (this.#secure !== undefined) this.#followInSecureLayer(event);
    const attempt = this.#attempts.get(event.connection);
    if (attempt !== undefined) return attempt.dispatch(event);
    if (event.type === "connect") {
      const conn = new Connection(this.#driver, event.connection, event.address, event.userData, this.#maxQueued, (c) => this.#connections.delete(c.id));
      conn.identity = this.identityOf(event.address);
      this.#adopt(conn);
      // A client that completes its handshake while the server closes: told at once, never
      // handed to the application (close() already waits for the connections it knew of).
      if (this.#closing !== undefined) return void conn.close("server-shutdown", undefined, { linger: false });
      this.emit("connection", conn);
      return;
    }
    this.#connections.get(event.connection)?._dispatch(event);
  }

  /** Tells the secure layer what the Endpoint did with its connections (PROTOCOL §9, "Lifetime"). */
  #followInSecureLayer(event: ConnectionEvent): void {
    const replaced = followConnections(this.#secure!.security, event, monotonicNow());
    // A newer connection with the same token replaced it (one token, one connection): ended
    // at once, so that it holds no slot through a close timeout (its address is the newer
    // connection's now, so no DISCONNECT could be sealed to it anyway). Its "disconnect"
    // ("kicked") follows the newer one's "connection".
    if (replaced !== undefined) {
      const endpoint = this.#driver.endpoint;
      if (endpoint.reset !== undefined) endpoint.reset(replaced, "kicked");
      else endpoint.close(replaced, "kicked", new Uint8Array(0), monotonicNow(), false);
      this.#driver.service();
    }
  }

  /** Holds an open connection (a client's or one of ours) and reports its end as the server's "disconnect". */
  #adopt(connection: Connection): void {
    this.#connections.set(connection.id, connection);
    connection._setErrorParent((error) => {
      error.connection = connection;
      this._routeError(error);
    });
    connection.once("disconnect", (info) => this.emit("disconnect", { connection, info }));
  }

  /** Driver and socket counters (datagrams, wake-ups, socket failures), and the session's:
   *  what it dropped and refused, and why. */
  counters(): {
    wakeups: number;
    datagramsIn: number;
    datagramsOut: number;
    sendFailures: number;
    receiveErrors: number;
    relay: RelayingSocket["routes"]["counters"];
    /** The session endpoint's counters, drops by reason (absent with a custom `createEndpoint`). */
    session?: SessionCounters;
    /** The secure layer's drops and associations (a secure server only). */
    secure?: ServerSecurityCounters;
  } {
    const endpoint = this.#driver.endpoint;
    const counters = {
      ...this.#driver.counters,
      ...this.#driver.socket.counters,
      relay: { ...this.#socket.routes.counters },
      ...(endpoint instanceof Endpoint ? { session: sessionCounters(endpoint.counters) } : {}),
    };
    return this.#secure === undefined ? counters : { ...counters, secure: { ...this.#secure.security.counters } };
  }

  /** Sends `data` to every open connection (but `options.except`), one copy shared by all
   *  (src/api/broadcast.ts); returns how many it was queued for. */
  broadcast(data: Uint8Array, options?: BroadcastOptions): number {
    return broadcastTo(this.#driver, this.#connections.values(), data, options);
  }

  /** The group (room) called `name`, made on first use; its members leave it at disconnect. */
  group(name: string): Group {
    return this.#groups.group(name);
  }

  get groups(): ReadonlyMap<string, Group> {
    return this.#groups.groups;
  }

  /** Server-wide figures: counters since listen() and the open connections' stats summed. */
  stats(): ServerStats {
    return serverStats(this.counters(), this.#connections.values());
  }

  /** Tells every peer (reason "server-shutdown"), then closes the socket. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const attempt of [...this.#attempts.values()]) attempt.abort(new ClosedError("this server"));
      // Each close resolves when the peer acknowledged or the endpoint's close timeout passed;
      // the socket stays open until then so a lost DISCONNECT is resent.
      await Promise.all([...this.#connections.values()].map((conn) => conn.close("server-shutdown")));
      this.#driver.service();
      await this.#driver.close();
    })();
    return this.#closing;
  }
}


/** The target as an "ip:port" address (a host name resolved through the runtime). */
async function resolvePeer(adapter: RuntimeAdapter, target: Target, signal: AbortSignalLike | undefined): Promise<{ peer: Address; ip: string; port: number; targetText: string }> {
  const { host: peerHost, port } = parseTarget(target);
  const targetText = typeof target === "string" ? target : formatAddress(peerHost, port);
  if (signal?.aborted) throw new ConnectAbortedError(targetText, signal.reason);
  const ip = isIpv4Literal(peerHost) || isIpv6Literal(peerHost) ? peerHost : await adapter.resolve(peerHost);
  if (signal?.aborted) throw new ConnectAbortedError(targetText, signal.reason);
  // In the spelling runtimes report senders in (IPv6 lowercase, zeros compressed: RFC 5952), so
  // that the peer's datagrams match the address the endpoint connected to, however it was written.
  const formatted = formatAddress(ip, port);
  const peer = canonicalAddress(formatted) ?? formatted;
  return { peer, ip: peer.startsWith("[") ? peer.slice(1, peer.lastIndexOf("]")) : ip, port, targetText };
}


async function listenWith(adapter: RuntimeAdapter, options: ListenOptions): Promise<Server> {
  validateCommon(options, "listen()");
  const channelNames = channelNameIndex(options.channels);
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidOptionError(`listen(): port must be an integer in 0..65535 (0 lets the OS pick), got ${String(port)}`);
  const bindHost = options.host ?? "0.0.0.0";
  if (!isIpv4Literal(bindHost) && !isIpv6Literal(bindHost)) throw new InvalidOptionError(`listen(): host must be an IP address to bind ("0.0.0.0", "::", "127.0.0.1", "::1"), got ${JSON.stringify(bindHost)}`);
  const extra: Partial<EndpointConfig> = {};
  if (options.maxConnections !== undefined) extra.maxConnections = options.maxConnections;
  if (options.maxPendingHandshakes !== undefined) extra.maxPendingHandshakes = options.maxPendingHandshakes;
  if (options.handshakeRatePerAddress !== undefined) extra.handshakeRatePerAddress = options.handshakeRatePerAddress;
  if (options.maxConnectionsPerHost !== undefined) extra.maxConnectionsPerHost = options.maxConnectionsPerHost;
  if (options.maxTotalReceiveBufferBytes !== undefined) extra.maxTotalReceiveBufferBytes = options.maxTotalReceiveBufferBytes;
  if (options.maxPendingAccepts !== undefined) extra.maxPendingAccepts = options.maxPendingAccepts;
  if (options.acceptTimeoutMs !== undefined) extra.acceptTimeoutMs = options.acceptTimeoutMs;
  // An async accept decision came in: service the driver, which takes it (pollTimeout is due).
  let driver: Driver | undefined;
  extra.onAcceptSettled = () => driver?.requestService();
  let secure: SecureServerSocket | undefined;
  let server: Server | undefined;
  const accept = options.accept;
  if (accept !== undefined || options.secure !== undefined) {
    extra.accept = (request) => {
      // On a secure server every client is authenticated, so a handshake whose address has no
      // identity is refused: a token holder that moves its association off that address within
      // the same receive batch would otherwise be accepted with `identity` undefined, past a hook
      // that checks it.
      const identity = options.secure === undefined ? undefined : secure?.security.identityOf(request.address);
      if (options.secure !== undefined && identity === undefined) return false;
      if (accept === undefined) return true;
      try {
        // On a secure server the hook also sees who the token says the client is.
        const decision: unknown = accept(options.secure === undefined ? request : { ...request, identity });
        // An async hook: the endpoint waits for the decision (bounded in number and time).
        if (isThenable(decision)) {
          return Promise.resolve(decision).then(checkAcceptDecision).catch((error: unknown) => {
            server?._routeError(new ListenerError("accept", error));
            throw error;
          });
        }
        return checkAcceptDecision(decision);
      } catch (error) {
        // The hook runs inside the receive path: the error goes to the server's "error"
        // listeners, as a listener's does, and the endpoint refuses the client and counts it
        // (acceptHookErrors).
        server?._routeError(new ListenerError("accept", error));
        throw error;
      }
    };
  }
  const config = endpointConfig(options, true, extra);
  // Sizes first, so that a bad mtu is the same SecureConfigError as connect()'s.
  if (options.secure !== undefined) makeRoomForSeal(config, "listen()");
  const securityOptions = options.secure !== undefined ? serverSecurityOptions(options.secure, options.protocolId, config) : undefined;
  if (options.webrtc !== undefined) config.carrier = webrtcPeerCarrier;
  const endpoint = makeEndpoint(options, config);
  const udp = await adapter.openSocket({
    host: bindHost,
    port,
    receiveBufferBytes: options.receiveBufferBytes ?? DEFAULT_SOCKET_BUFFER,
    sendBufferBytes: options.sendBufferBytes ?? DEFAULT_SOCKET_BUFFER,
  });
  let webrtc: WebRtcJoinSocket | undefined;
  try {
    if (options.webrtc !== undefined) webrtc = await openWebRtcJoin(udp, options, config, adapter.name);
  } catch (error) {
    await udp.close();
    throw error;
  }
  const raw = webrtc ?? udp;
  if (securityOptions !== undefined) secure = new SecureServerSocket(raw, securityOptions);
  const socket = new RelayingSocket(secure ?? raw);
  driver = new Driver(endpoint, socket, (event) => server?._onEvent(event), { dropTest: options.dropTest, seed: options.seed });
  driver.channelNames = channelNames;
  if (options.highWaterMark !== undefined) driver.highWaterMark = options.highWaterMark;
  server = new Server(adapter, driver, socket, options.maxQueuedMessages ?? DEFAULT_MAX_QUEUED_MESSAGES, secure);
  if (webrtc !== undefined) attachWebRtc(server, webrtc);
  driver.service();
  return server;
}

async function connectWith(adapter: RuntimeAdapter, target: Target, options: ConnectOptions): Promise<Connection> {
  validateCommon(options, "connect()");
  const channelNames = channelNameIndex(options.channels);
  // Read before anything is opened: a token that cannot be used throws ConnectTokenError at once.
  const token = options.connectToken !== undefined ? parseConnectToken(options.connectToken, options.protocolId) : undefined;
  const local = localBind(options);
  const { peer, ip, port } = await resolvePeer(adapter, target, options.signal);
  const ipv6 = isIpv6Literal(ip);
  if (local.host !== undefined && isIpv6Literal(local.host) !== ipv6) {
    throw new InvalidOptionError(`connect(): localHost ${local.host} is ${ipv6 ? "IPv4" : "IPv6"} but the target ${peer} is ${ipv6 ? "IPv6" : "IPv4"}; bind an address of the target's family`);
  }
  const config = endpointConfig(options, false);
  if (token !== undefined) makeRoomForSeal(config, "connect()");
  const endpoint = makeEndpoint(options, config);
  const raw = await adapter.openSocket({
    host: local.host ?? (ipv6 ? "::" : "0.0.0.0"),
    port: local.port,
    peer: { host: ip, port },
    receiveBufferBytes: options.receiveBufferBytes ?? DEFAULT_SOCKET_BUFFER,
    sendBufferBytes: options.sendBufferBytes ?? DEFAULT_SOCKET_BUFFER,
  });
  const socket = token !== undefined ? new SecureClientSocket(raw, peer, token, wasmAead) : raw;
  let attempt: ConnectAttempt | undefined;
  const driver = new Driver(endpoint, socket, (event) => {
    if (event.type !== "punch") attempt?.dispatch(event);
  }, { dropTest: options.dropTest, seed: options.seed });
  driver.channelNames = channelNames;
  if (options.highWaterMark !== undefined) driver.highWaterMark = options.highWaterMark;
  attempt = new ConnectAttempt(driver, peer, options, options.maxQueuedMessages ?? DEFAULT_MAX_QUEUED_MESSAGES, {
    // A client owns its socket: once the last packet is out, close it.
    closed: () => host.queueMicrotask(() => void driver.close()),
    failed: () => {
      if (!driver.closed) {
        driver.service();
        void driver.close();
      }
    },
  });
  // A connected socket that hears "port unreachable" before the handshake ended: fail now
  // rather than at the timeout.
  raw.onPeerUnreachable?.(() => attempt?.refuse());
  if (attempt.start() >= 0) driver.service();
  return attempt.promise;
}

/** connect()'s localHost / localPort, checked. */
function localBind(options: ConnectOptions): { host: string | undefined; port: number } {
  const { localHost, localPort } = options;
  if (localHost !== undefined && !(typeof localHost === "string" && (isIpv4Literal(localHost) || isIpv6Literal(localHost)))) {
    throw new InvalidOptionError(`connect(): localHost must be an IP address of this machine to bind ("127.0.0.1", "0.0.0.0", "::1"...), got ${describeValue(localHost)}`);
  }
  if (localPort !== undefined && !(Number.isInteger(localPort) && localPort >= 0 && localPort <= 65535)) {
    throw new InvalidOptionError(`connect(): localPort must be an integer in 0..65535 (0 lets the OS pick), got ${String(localPort)}`);
  }
  return { host: localHost, port: localPort ?? 0 };
}
