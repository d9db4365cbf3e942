/**
 * The Endpoint: one per socket, sans-IO (quinn-proto's shape). It routes datagrams by address
 * to connection slots, batches them through the engine (one `processBatch` per burst), runs
 * the stateless server side of the handshake, owns the send arena and the timer heap, and
 * turns everything the application should know into events.
 *
 * Drive order (see sans-io.ts): handleDatagram* -> handleTimeout (if due) -> pollEvent* ->
 * pollTransmit* -> arm a timer for pollTimeout(). Datagrams given to handleDatagram are copied
 * into the engine's receive arena at once and processed at the next poll or handleTimeout call
 * (or when the arena is full). A Transmit's bytes are a view into the send arena, valid until
 * the next call into the endpoint.
 */
import {
  ACK_DELAY_TRAILER_BYTES,
  ACK_DELAY_UNITS_PER_MS,
  ACKS_VALID,
  DATA_HEADER_BYTES,
  DATA_OVERHEAD_BYTES,
  DESCRIPTOR_INTS,
  DropReason,
  MAX_DATAGRAM_BYTES,
  PacketType,
  PUNCH_BODY_BYTES,
  REBIND_BODY_BYTES,
  RECORD_INTS,
  RecordType,
  RecordHeader,
  ControlRecord,
  DatagramDroppedRecord,
  FrameDroppedRecord,
  MessageRecord,
  PacketAckedRecord,
  PacketReceivedRecord,
  UnknownPeerRecord,
  SYSTEM_CHANNEL,
  WIRE_VERSION,
  type Engine,
} from "../engine/abi.js";
import { createEngine } from "../engine/index.js";
import { isValidAddress, rateKeyOf } from "./address.js";
import { resolveConfig, type ResolvedConfig } from "./config.js";
import { Connection, ConnectionState, Role, checkConnectionConfig, reasonCode, reasonName } from "./connection.js";
import { sipHash64, type SipKey } from "./cookie.js";
import { DeadlineHeap } from "./deadline-heap.js";
import {
  AlreadyConnectedError,
  ConnectionClosedError,
  InvalidAddressError,
  InvalidReasonError,
  TooManyConnectionsError,
  TooManyHandshakesError,
  UnknownConnectionError,
  SessionConfigError,
  UserDataTooLargeError,
} from "./errors.js";
import {
  CookieJar,
  DenyCode,
  MAX_ACCEPT_USER_DATA,
  MAX_DENY_USER_DATA,
  MAX_DISCONNECT_USER_DATA,
  MAX_RESPONSE_USER_DATA,
  denyReasonName,
  encodeChallenge,
  encodeDeny,
  encodeDisconnect,
  encodeDisconnectAck,
  encodeNoConnection,
  parseAccept,
  parseChallenge,
  parseDeny,
  parseDisconnect,
  parseDisconnectAck,
  parseNoConnection,
  parseRequest,
  parseResponse,
  readU32,
  sameResponse,
  writeU32,
  type ResponseFields,
} from "./handshake.js";
import { encodeRebind, parseRebind, rebindProofValid, rebindTag, REBIND_COUNTER_LEAD, REBIND_WINDOW_MS } from "./rebind.js";
import { checkPunchArguments, encodePunch, PunchTokens } from "./punch.js";
import { isAckOnly } from "./late-ack.js";
import { ReceiveBudget } from "../channels/receive-budget.js";
import { AddressRateLimiter } from "./rate-limit.js";
import type { Address, SansIoNode, Transmit } from "./sans-io.js";
import type { ConnectionId, ConnectionStats, ConnectRequestInfo, DisconnectReason, EndpointConfig, EndpointEvent, SendOptions } from "./types.js";
import type { ClientIdentity } from "../secure/server-security.js";
import { isThenable, PendingAccepts, type PendingAccept, type PendingAcceptFields } from "./pending-accepts.js";

/** A stateless reply queued for an address that has no connection (or none for this packet). */
interface ControlReply {
  to: Address;
  type: PacketType;
  /** The client's salt; NO_CONNECTION: the echoed CRC; DISCONNECT: the reason code. */
  salt: number;
  /** CHALLENGE: the cookie (copied); DENY: user data; NAT_PUNCH: the token (copied). */
  bytes: Uint8Array | undefined;
  /** DENY reason, DISCONNECT(_ACK) session id, or NO_CONNECTION's echoed sequence. */
  value: number;
}

/** Endpoint-wide counters: what was dropped or refused, and why. */
export interface EndpointCounters {
  datagramsReceived: number;
  datagramsSent: number;
  bytesReceived: number;
  bytesSent: number;
  /** Per DropReason (index), datagram- and frame-level, as the engine reported them. */
  drops: number[];
  oversizeDatagrams: number;
  handshakeRateLimited: number;
  badCookies: number;
  challengesSent: number;
  deniesSent: number;
  noConnectionSent: number;
  noConnectionRateLimited: number;
  /** NO_CONNECTION that did not echo a packet of the connection (forged or stale): ignored. */
  unverifiedNoConnection: number;
  controlQueueOverflow: number;
  /** Handshake/control packets that made no sense in the current state (ignored). */
  unexpectedControl: number;
  /** Server: REBIND_CHALLENGEs sent to a client's new address (PROTOCOL §5). */
  rebindChallengesSent: number;
  /** Server: REBIND packets refused (bad proof, no such move pending, wrong token or address,
   *  address taken, migration off). */
  rebindsRefused: number;
  /** Server: connections moved to a new address. */
  migrations: number;
  /** Accepted connections moved to a new address by a repeat of their RESPONSE (PROTOCOL §4), before any packet of their session. */
  handshakeMoves: number;
  /** Server: handshakes refused because the accept hook threw, or its promise rejected or
   *  resolved to no decision (the API reports the error). */
  acceptHookErrors: number;
  /** Server: handshakes denied "server-full" because their host holds maxConnectionsPerHost connections. */
  hostFull: number;
  /** Connections ended ("receive-buffer-exceeded") to bring what all hold received under maxTotalReceiveBufferBytes. */
  receiveBudgetCloses: number;
  /** Server: handshakes whose accept hook answered with a promise (waited for). */
  acceptsDeferred: number;
  /** Server: of those, denied "server-full" because maxPendingAccepts decisions were pending. */
  acceptsOverLimit: number;
  /** Server: of those, denied "server-full" because no answer came within acceptTimeoutMs. */
  acceptTimeouts: number;
  /** NAT_PUNCH sent (punch()) and received with a token this endpoint punches with (PROTOCOL §7). */
  punchesSent: number;
  punchesReceived: number;
  /** NAT_PUNCH dropped: a token this endpoint is not punching with (or no longer), or past its
   *  per-token event limit. */
  punchesIgnored: number;
}

const CONTROL_QUEUE_LIMIT = 1024;
/** Most datagrams rebuilt from parity per receive batch (each parity rebuilds at most one). */
const REBUILT_LIMIT = 256;
/** Moves of an accepted connection by repeats of its RESPONSE (acceptedElsewhere), at most. */
const MAX_HANDSHAKE_MOVES = 4;
/** Datagrams per engine sub-batch; also the ack-burst threshold (well inside the 33-ack window). */
const ACK_CHUNK = 16;
const EMPTY = new Uint8Array(0);

/** A DISCONNECT owed to a connection already removed: its session, reason code, and until when. */
interface Goodbye {
  sessionId: number;
  code: number;
  until: number;
}
const GOODBYE_LIMIT = 1024;
/** Longest drained queue emptied in place rather than replaced (see emptied()). */
const REUSED_QUEUE_MAX = 64;

export interface ConnectOptions {
  /** Passed to the server's accept hook (<= 512 bytes). */
  userData?: Uint8Array;
  /**
   * Give the handshake up after this long ("connect-timeout"). Default min(timeoutMs, 5000); the
   * API's connectTimeoutMs sets it, so that a longer wait than 5 s is really waited for.
   */
  timeoutMs?: number;
}

/** An application's own reason is { app: 64..255 } (the codes below 64 are the protocol's). */
function checkReason(reason: DisconnectReason): void {
  if (typeof reason === "object" && !(Number.isInteger(reason.app) && reason.app >= 64 && reason.app <= 255)) {
    throw new InvalidReasonError(reason.app);
  }
}

export class Endpoint implements SansIoNode<EndpointEvent> {
  readonly config: ResolvedConfig;
  readonly engine: Engine;
  readonly counters: EndpointCounters;
  /** Each channel's largest message in bytes (its maxMessageBytes, the default resolved for the
   *  mtu); send() throws MessageTooLargeError above it. */
  readonly maxMessageBytes: readonly number[];

  private rngState: number;
  /** Key and counter of secureRandom(). */
  private readonly secretKey: SipKey;
  private prfCounter = 0;
  private readonly prfInput = new Uint8Array(8);
  private readonly prfOutput = new Uint8Array(8);
  private readonly cookies: CookieJar;
  /** Keyed by source host (rateKeyOf), not address: a sender picks its ports freely. */
  private readonly handshakeLimiter: AddressRateLimiter;
  /** What all connections hold received, together (maxTotalReceiveBufferBytes). */
  readonly receiveBudget: ReceiveBudget;
  /** Server connections per source host (rateKeyOf), for maxConnectionsPerHost; bounded by maxConnections. */
  private readonly perHost = new Map<string, number>();
  /** Connections the endpoint ended on its own (the receive budget) whose peers may not have
   *  heard the DISCONNECT yet, by address (at most GOODBYE_LIMIT, oldest first out). */
  private readonly goodbyes = new Map<Address, Goodbye>();
  private readonly punchTokens = new PunchTokens();
  private readonly noConnectionLimiter: AddressRateLimiter;
  /** Challenges to REBIND_REQUESTs with a valid proof, per address: a bucket of their own, so
   *  that refused requests (answered under handshakeLimiter) cannot spend a moving client's. */
  private readonly rebindLimiter: AddressRateLimiter;
  private readonly byAddress = new Map<Address, Connection>();
  /**
   * The last address handleDatagram looked up and its connection (undefined: none): a burst
   * comes from one peer, and the runtime adapters hand the same string for the same peer, so
   * the Map lookup (a hash and a probe per datagram) becomes one comparison. Cleared whenever
   * byAddress changes.
   */
  private lastFrom: Address | undefined = undefined;
  private lastFromConnection: Connection | undefined = undefined;
  private readonly byId = new Map<ConnectionId, Connection>();
  /** Server: connections by session id, for a client that migrates (its new address is unknown). */
  private readonly bySession = new Map<number, Connection>();
  /**
   * Server connections by their handshake's client salt, for a RESPONSE of the same attempt
   * from a new address (acceptedElsewhere). Each entry is a live connection (remove() takes it
   * out), so the map is bounded by maxConnections.
   */
  private readonly bySalt = new Map<number, Connection>();
  /**
   * The connection the last send() went to (NaN: none, it equals no id; ids are never reused):
   * an application answering a message, or a server looping over its peers per tick with
   * several messages each, names the same connection again, and the Map lookup becomes one
   * comparison. Cleared in remove(), the only place a connection leaves byId.
   */
  private lastSentId: ConnectionId = NaN;
  private lastSentConnection: Connection | undefined = undefined;
  private readonly slots: (Connection | undefined)[];
  private readonly freeSlots: number[] = [];
  /**
   * Slots freed while a batch's records are dispatched, returned to freeSlots after it: the
   * engine has already produced the batch's records under the old connection's slot and key,
   * and a new connection reusing that slot in the same batch (an address that restarted and
   * handshook again) would be handed the old one's messages.
   */
  private readonly slotsFreedInBatch: number[] = [];
  private dispatching = false;
  /** Datagrams rebuilt from parity during the batch being read: address, bytes, ... */
  private rebuilt: (Address | Uint8Array)[] = [];
  private readingRebuilt = false;
  private nextId = 1;
  /** Our own connection attempts still handshaking (the rest of byId are connections). */
  private pendingAttempts = 0;

  private events: EndpointEvent[] = [];
  /** Async accept decisions being waited for (server). */
  private readonly pendingAccepts: PendingAccepts;
  /** Closed connections whose "disconnect" event is still in the queue, with their final stats
   *  (stats() answers with them until the event is polled). */
  private readonly undelivered = new Map<ConnectionId, ConnectionStats>();
  private eventHead = 0;
  /** Deadlines by connection slot. */
  private readonly heap: DeadlineHeap;
  private ready: Connection[] = [];
  private readyHead = 0;
  private control: ControlReply[] = [];
  private controlHead = 0;
  private readonly touched: Connection[] = [];
  private readonly duePass: Connection[] = [];
  private immediate: { to: Address; offset: number; length: number }[] = [];
  private immediateHead = 0;

  // Receive batch: datagrams copied into the arena, not yet processed.
  private batchCount = 0;
  private readonly batchFrom: Address[];
  private readonly batchLength: Int32Array;
  /** Per queued datagram: who the layer in front authenticated its sender as (handleDatagram's `identity`). */
  private readonly batchIdentity: (ClientIdentity | undefined)[];
  private lastNow = 0;
  /** The engine memory under `engine.bytes` (Transmit views are made over it). */
  private readonly arenaBuffer: ArrayBufferLike;
  private readonly arenaByteOffset: number;
  /** Offset of tx arena slot 0 and its views by length (see slot0View). */
  private readonly txSlot0: number;
  private readonly slot0Views: (Uint8Array | undefined)[] = [];

  constructor(config: EndpointConfig) {
    this.config = resolveConfig(config);
    const c = this.config;
    this.maxMessageBytes = checkConnectionConfig(c);
    const maxSlots = Math.max(1, (c.server ? c.maxConnections : 0) + c.maxPendingHandshakes);
    this.engine = createEngine(
      { protocolId: c.protocolId, maxSlots, channels: c.kinds, ...(config.engineLimits ?? {}) },
      c.engine,
    );
    this.slots = new Array<Connection | undefined>(maxSlots).fill(undefined);
    this.heap = new DeadlineHeap(maxSlots);
    this.arenaBuffer = this.engine.bytes.buffer;
    this.arenaByteOffset = this.engine.bytes.byteOffset;
    this.txSlot0 = this.engine.layout.txArenaOffset;
    // One entry per possible length, pushed (a packed array: reads need no bounds or hole check).
    for (let i = 0; i <= MAX_DATAGRAM_BYTES; i++) this.slot0Views.push(undefined);
    for (let s = maxSlots - 1; s >= 0; s--) this.freeSlots.push(s);
    const batch = this.engine.layout.rxArenaBytes / MAX_DATAGRAM_BYTES;
    this.batchFrom = new Array<Address>(batch).fill("");
    this.batchLength = new Int32Array(batch);
    this.batchIdentity = new Array<ClientIdentity | undefined>(batch).fill(undefined);
    this.rngState = (c.seed ^ 0x9e3779b9) >>> 0 || 1;
    this.secretKey = secretKeyOf(c.secret, c.seed);
    const cookieSecret: SipKey = [this.secureRandom(), this.secureRandom(), this.secureRandom(), this.secureRandom()];
    this.cookies = new CookieJar(cookieSecret, c.cookieWindowMs);
    // Burst of 3 lets a client's request + response + one resend through at once.
    this.receiveBudget = new ReceiveBudget(c.maxTotalReceiveBufferBytes);
    this.handshakeLimiter = new AddressRateLimiter(c.handshakeRatePerAddress, Math.max(3, c.handshakeRatePerAddress), c.rateLimitEntries);
    this.pendingAccepts = new PendingAccepts(c.maxPendingAccepts, c.acceptTimeoutMs, config.onAcceptSettled);
    this.noConnectionLimiter = new AddressRateLimiter(c.noConnectionRatePerAddress, 2, c.rateLimitEntries);
    this.rebindLimiter = new AddressRateLimiter(c.handshakeRatePerAddress, Math.max(3, c.handshakeRatePerAddress), c.rateLimitEntries);
    this.counters = {
      datagramsReceived: 0,
      datagramsSent: 0,
      bytesReceived: 0,
      bytesSent: 0,
      drops: new Array<number>(16).fill(0),
      oversizeDatagrams: 0,
      handshakeRateLimited: 0,
      badCookies: 0,
      challengesSent: 0,
      deniesSent: 0,
      noConnectionSent: 0,
      unverifiedNoConnection: 0,
      noConnectionRateLimited: 0,
      controlQueueOverflow: 0,
      unexpectedControl: 0,
      rebindChallengesSent: 0,
      rebindsRefused: 0,
      migrations: 0,
      handshakeMoves: 0,
      acceptHookErrors: 0,
      hostFull: 0,
      receiveBudgetCloses: 0,
      acceptsDeferred: 0,
      acceptsOverLimit: 0,
      acceptTimeouts: 0,
      punchesSent: 0,
      punchesReceived: 0,
      punchesIgnored: 0,
    };
  }

  /**
   * Seeded xorshift32, for what needs no secrecy: initial sequences and the controllers' seeds.
   * Its output is its whole state, so anything an attacker sees of it predicts the rest: never
   * for keys, salts, session ids or tokens (secureRandom).
   */
  private random(): number {
    let x = this.rngState;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.rngState = x >>> 0;
    return this.rngState;
  }

  /**
   * SipHash-2-4 of a counter under the endpoint's secret (config.secret): unpredictable
   * without the secret, and seeing any number of outputs reveals nothing of the others. For
   * the cookie secret, client salts, session ids and migration tokens.
   */
  private secureRandom(): number {
    writeU32(this.prfInput, 0, ++this.prfCounter);
    sipHash64(this.secretKey, this.prfInput, 0, 8, this.prfOutput);
    return readU32(this.prfOutput, 0);
  }

  // ---- commands -------------------------------------------------------------------------------

  /** Start connecting to a server. The "connect" (or "disconnect") event tells how it went. */
  connect(now: number, address: Address, options: ConnectOptions = {}): ConnectionId {
    if (!isValidAddress(address)) throw new InvalidAddressError(address);
    const userData = options.userData ?? EMPTY;
    if (userData.length > MAX_RESPONSE_USER_DATA) throw new UserDataTooLargeError(userData.length, MAX_RESPONSE_USER_DATA);
    const timeoutMs = options.timeoutMs ?? this.config.connectTimeoutMs;
    if (!(timeoutMs > 0 && timeoutMs <= 3_600_000)) throw new SessionConfigError(`connect(): timeoutMs must be in (0, 3600000] ms, got ${String(options.timeoutMs)}`);
    const existing = this.byAddress.get(address);
    if (existing !== undefined) throw new AlreadyConnectedError(address);
    if (this.pendingAttempts >= this.config.maxPendingHandshakes || this.freeSlots.length === 0) {
      throw new TooManyHandshakesError(this.config.maxPendingHandshakes);
    }
    // A server's own connections count against maxConnections like its clients' (attempts
    // included: each becomes one), so they cannot take the slots its clients are promised.
    if (this.config.server && this.byId.size >= this.config.maxConnections) throw new TooManyConnectionsError(this.config.maxConnections);
    this.processPending();
    const conn = this.allocate(now, address, Role.Client, this.secureRandom());
    this.pendingAttempts++;
    conn.startAttempt(now, userData.slice(), timeoutMs);
    this.markReady(conn);
    this.reschedule(conn);
    return conn.id;
  }

  /**
   * Send one NAT_PUNCH to `address` (PROTOCOL §7, punch.ts): opens this side's NAT for packets
   * from there. `token` (8 bytes) is what the punch carries; for PUNCH_ACCEPT_MS from now,
   * punches carrying `acceptToken` (default: the same token) are reported as "punch" events.
   * An introducer that gives each peer its own token to send and the other's to accept keeps a
   * party that sees only one side's punches from answering as the other. Send it a few times
   * (the first ones are dropped by the peer's NAT until the peer has punched too).
   */
  punch(now: number, address: Address, token: Uint8Array, acceptToken: Uint8Array = token): void {
    checkPunchArguments(address, token, acceptToken);
    if (now > this.lastNow) this.lastNow = now;
    this.punchTokens.punching(now, acceptToken);
    this.counters.punchesSent++;
    this.queueControl({ to: address, type: PacketType.NatPunch, salt: 0, bytes: token.slice(), value: 0 });
  }

  /**
   * Queue a message. Returns a receipt id if `options.receipt` (see the "receipt" event), else 0.
   * `now` stamps the message (for its age and the pacer); without it the message carries the
   * time of the last handleDatagram/handleTimeout/poll call, so a caller that sends between drives should pass it
   * (an unreliable message's `maxQueueMs` wait then counts from the next write or pending check).
   * A connection that has closed but whose "disconnect" event has not been polled yet throws
   * ConnectionClosedError (ERR_CONNECTION_CLOSED), never UnknownConnectionError.
   */
  send(connection: ConnectionId, data: Uint8Array, options: SendOptions, now?: number): number {
    if (now !== undefined && now > this.lastNow) this.lastNow = now;
    const conn = connection === this.lastSentId ? (this.lastSentConnection as Connection) : this.sendTarget(connection);
    if (conn.state !== ConnectionState.Connected || conn.lingering) throw new ConnectionClosedError(connection, conn.lingering ? "closing" : stateName(conn.state));
    // Only a time the caller gave stamps an unreliable message's wait: lastNow may be long gone.
    const receipt = conn.send(this.lastNow, options.channel, data, options, now ?? NaN);
    // A delayed message or a deadline moves the connection's deadline (its DelayedSend timer)
    // earlier maybe.
    if ((options.delayMs !== undefined && options.delayMs > 0) || options.deadlineMs !== undefined) this.reschedule(conn);
    else this.markReady(conn);
    return receipt;
  }

  /**
   * Graceful close: DISCONNECT with the reason (and user data) until acknowledged, or the close
   * timeout. With `linger`, what was sent before is delivered (or given up) first, within the
   * same timeout (Connection.closeAfterDelivery); without, it is dropped (its receipts: false).
   * Sends are refused from the call on either way.
   */
  close(connection: ConnectionId, reason: DisconnectReason = "normal", userData: Uint8Array = EMPTY, now?: number, linger = false): void {
    checkReason(reason);
    if (now !== undefined && now > this.lastNow) this.lastNow = now;
    const conn = this.byId.get(connection);
    if (conn === undefined) return; // already gone: closing twice is harmless
    if (userData.length > MAX_DISCONNECT_USER_DATA) throw new UserDataTooLargeError(userData.length, MAX_DISCONNECT_USER_DATA, "disconnect");
    const wasConnecting = conn.state === ConnectionState.Connecting;
    if (linger) conn.closeAfterDelivery(this.lastNow, reason, userData.slice());
    else conn.close(this.lastNow, reason, userData.slice());
    if (wasConnecting || (conn.state as ConnectionState) === ConnectionState.Closed) this.remove(conn);
    else {
      this.markReady(conn);
      this.reschedule(conn);
    }
  }

  /**
   * Ends a connection at once, without telling the peer (ENet's peer reset): its "disconnect"
   * event follows with `reason`, its slot is free now, and unsent data is dropped (receipts:
   * false). For a peer that must not hold a slot through a close timeout, such as a connection
   * a newer one with the same connect token replaced (PROTOCOL §9). Unknown ids are ignored.
   */
  reset(connection: ConnectionId, reason: DisconnectReason = "kicked"): void {
    checkReason(reason);
    const conn = this.byId.get(connection);
    if (conn === undefined) return;
    conn.finish(reason);
    this.remove(conn);
  }

  stats(connection: ConnectionId): ConnectionStats {
    // Ended, its "disconnect" event not yet polled: the final figures the event carries.
    const final = this.byId.has(connection) ? undefined : this.undelivered.get(connection);
    if (final !== undefined) return final;
    return this.live(connection).stats(this.lastNow);
  }

  /** Bytes of application data the connection holds to send (stats().queuedBytes without the
   *  rest of the stats: cheap enough to read after every send); 0 once it is gone. */
  queuedBytes(connection: ConnectionId): number {
    return this.byId.get(connection)?.channels.queuedBytes() ?? 0;
  }

  /** Ids of the connections this endpoint holds (any state but closed). */
  connections(): ConnectionId[] {
    return [...this.byId.keys()];
  }

  /** The connection's peer address, or undefined if it is gone. */
  addressOf(connection: ConnectionId): Address | undefined {
    return this.byId.get(connection)?.address;
  }

  /** Client side: the estimated server clock at local time `now`, once synchronized. */
  serverTime(connection: ConnectionId, now: number): number | undefined {
    return this.live(connection).serverTime(now);
  }

  /** live(connection), remembered as the one-entry send cache (see lastSentId). */
  private sendTarget(connection: ConnectionId): Connection {
    const conn = this.live(connection);
    this.lastSentId = connection;
    this.lastSentConnection = conn;
    return conn;
  }

  private live(connection: ConnectionId): Connection {
    const conn = this.byId.get(connection);
    if (conn === undefined) {
      // Closed, but the application has not seen its "disconnect" event yet.
      if (this.undelivered.has(connection)) throw new ConnectionClosedError(connection, "closed");
      throw new UnknownConnectionError(connection);
    }
    return conn;
  }

  // ---- SansIoNode -----------------------------------------------------------------------------

  handleDatagram(now: number, from: Address, bytes: Uint8Array, identity?: ClientIdentity): void {
    if (now > this.lastNow) this.lastNow = now;
    this.counters.datagramsReceived++;
    this.counters.bytesReceived += bytes.length;
    if (bytes.length > MAX_DATAGRAM_BYTES) {
      this.counters.oversizeDatagrams++;
      return;
    }
    this.queueDatagram(from, bytes, identity, true);
  }

  /** Into the receive batch. `counted`: arrived on the wire (a rebuilt datagram did not). */
  private queueDatagram(from: Address, bytes: Uint8Array, identity: ClientIdentity | undefined, counted: boolean): void {
    if (this.batchCount === this.batchFrom.length) this.processPending();
    const engine = this.engine;
    const i = this.batchCount++;
    const offset = engine.layout.rxArenaOffset + i * MAX_DATAGRAM_BYTES;
    engine.bytes.set(bytes, offset);
    const conn = this.connectionFrom(from);
    if (conn !== undefined && counted) conn.onDatagramBytes(bytes.length);
    const d = i * DESCRIPTOR_INTS;
    engine.descriptors[d] = offset;
    engine.descriptors[d + 1] = bytes.length;
    // Only established connections get their slot: DATA racing ahead of a lost ACCEPT is not
    // acknowledged (the peer resends it) rather than accepted into a half-open connection.
    engine.descriptors[d + 2] = conn !== undefined && conn.acceptsData ? conn.slot : -1;
    engine.descriptors[d + 3] = 0;
    this.batchFrom[i] = from;
    this.batchIdentity[i] = identity;
    this.batchLength[i] = bytes.length;
  }

  handleTimeout(now: number): void {
    if (now > this.lastNow) this.lastNow = now;
    this.processPending();
    this.settleAccepts(now);
    // Pop everything due first, then fire each connection once: a connection whose send timer
    // stays due until pollTransmit runs must not be popped again in this same pass.
    const due = this.duePass;
    for (let slot = this.heap.popDue(now); slot >= 0; slot = this.heap.popDue(now)) {
      const conn = this.slots[slot] as Connection; // a slot's entry leaves the heap with its connection
      if (conn.state !== ConnectionState.Closed) due.push(conn);
    }
    for (const conn of due) {
      if (conn.onTimeout(now)) this.markReady(conn);
      if ((conn.state as ConnectionState) === ConnectionState.Closed) this.remove(conn);
      else this.reschedule(conn);
    }
    clearArray(due);
  }

  pollTimeout(): number | undefined {
    // Something is ready to send (a resend after a detected loss, an app send between drives):
    // the deadline is now, so a driver that only wakes on this timer still transmits at once.
    if (this.batchCount > 0 || this.readyHead < this.ready.length || this.immediateHead < this.immediate.length || this.controlHead < this.control.length) {
      return this.lastNow;
    }
    const next = this.heap.peekTime();
    if (this.pendingAccepts.size === 0) return next;
    const accepts = this.pendingAccepts.nextDeadline(this.lastNow);
    return next === undefined || (accepts !== undefined && accepts < next) ? accepts : next;
  }

  pollEvent(): EndpointEvent | undefined {
    this.processPending();
    if (this.eventHead === this.events.length) return undefined;
    const ev = this.events[this.eventHead++];
    if (ev.type === "disconnect") this.undelivered.delete(ev.connection);
    if (this.eventHead === this.events.length) {
      this.events = emptied(this.events);
      this.eventHead = 0;
    }
    return ev;
  }

  pollTransmit(now: number): Transmit | undefined {
    if (now > this.lastNow) this.lastNow = now;
    this.processPending();
    const engine = this.engine;
    const offset = engine.layout.txArenaOffset;
    // 0. Acks sealed between receive sub-batches (they live in tx arena slots 1..).
    if (this.immediateHead < this.immediate.length) {
      const a = this.immediate[this.immediateHead++];
      if (this.immediateHead === this.immediate.length) {
        this.immediate = emptied(this.immediate);
        this.immediateHead = 0;
      }
      return this.transmit(a.to, a.offset, a.length);
    }
    // 1. Stateless replies (challenges, denies, NO_CONNECTION, DISCONNECT_ACK).
    while (this.controlHead < this.control.length) {
      const reply = this.control[this.controlHead++];
      if (this.controlHead === this.control.length) {
        this.control = emptied(this.control);
        this.controlHead = 0;
      }
      const length = this.encodeControl(reply, offset);
      return this.transmit(reply.to, offset, length);
    }
    // 2. Connections, round-robin: one datagram each per turn.
    while (this.readyHead < this.ready.length) {
      const conn = this.ready[this.readyHead++];
      if (conn.state === ConnectionState.Closed) {
        conn.queued = false;
        continue;
      }
      const length = conn.writeDatagram(now, offset);
      if (length === 0) {
        conn.queued = false;
        this.reschedule(conn);
        continue;
      }
      // Back of the line only if it may have more: a connection that wrote its one datagram
      // would otherwise get a second, empty writeDatagram pass per turn.
      if (!conn.wantsToSend(now)) {
        conn.queued = false;
        this.reschedule(conn);
      }
      // Still in line, its heap deadline is refreshed when it leaves (above): meanwhile
      // pollTimeout answers "now" for the line, and handleTimeout firing it early is harmless.
      // Alone in the line (a bulk flow), it stays in the slot just taken rather than pushed
      // onto a queue array that grows by one entry per datagram.
      else if (this.readyHead === this.ready.length) this.readyHead--;
      else this.ready.push(conn);
      this.compactReady();
      return this.transmit(conn.address, offset, length);
    }
    // Most calls end here with an empty line (a driver polls until undefined): keep the array.
    if (this.ready.length > 0) this.ready = emptied(this.ready);
    this.readyHead = 0;
    return undefined;
  }

  /** byAddress.get(from), through the one-entry cache (see lastFrom). */
  private connectionFrom(from: Address): Connection | undefined {
    if (from === this.lastFrom) return this.lastFromConnection;
    const conn = this.byAddress.get(from);
    this.lastFrom = from;
    this.lastFromConnection = conn;
    return conn;
  }

  private transmit(to: Address, offset: number, length: number): Transmit {
    this.counters.datagramsSent++;
    this.counters.bytesSent += length;
    return { to, bytes: offset === this.txSlot0 ? this.slot0View(length) : this.view(offset, length) };
  }

  /**
   * A view made from the buffer directly: about half the cost of subarray(), which looks up
   * the species constructor each time (the engine memory never grows, so the buffer stays).
   */
  private view(offset: number, length: number): Uint8Array {
    return new Uint8Array(this.arenaBuffer, this.arenaByteOffset + offset, length);
  }

  /**
   * The view of tx arena slot 0 (every datagram pollTransmit writes itself) of `length` bytes,
   * made once per length and then reused: a Transmit's bytes are valid only until the next call
   * into the endpoint anyway (the slot is overwritten), and a bulk flow's datagrams are nearly
   * all one length, so this saves a typed-array allocation per datagram.
   */
  private slot0View(length: number): Uint8Array {
    const v = this.slot0Views[length];
    return v !== undefined ? v : (this.slot0Views[length] = this.view(this.txSlot0, length));
  }

  private compactReady(): void {
    if (this.readyHead > 1024 && this.readyHead * 2 > this.ready.length) {
      this.ready = this.ready.slice(this.readyHead);
      this.readyHead = 0;
    }
  }

  // ---- internals ------------------------------------------------------------------------------

  emit(event: EndpointEvent): void {
    this.events.push(event);
  }

  private markReady(conn: Connection): void {
    if (conn.queued) return;
    conn.queued = true;
    this.ready.push(conn);
  }

  private reschedule(conn: Connection): void {
    if (conn.state === ConnectionState.Closed) return;
    this.heap.schedule(conn.slot, conn.nextDeadline());
  }

  /**
   * All connections together hold more received than maxTotalReceiveBufferBytes (each evicted
   * its own unreliable partials first): the one holding the most is ended, and the next, until
   * the rest fit. Ended at once, its memory freed with it: a flood of many connections each
   * holding its own maximum must not outgrow the endpoint's bound while they close.
   */
  private enforceReceiveBudget(now: number): void {
    for (let left = this.byId.size; this.receiveBudget.over && left > 0; left--) {
      let largest: Connection | undefined;
      let most = 0;
      for (const conn of this.byId.values()) {
        const held = conn.channels.receiveBufferedBytes();
        if (held > most) {
          most = held;
          largest = conn;
        }
      }
      if (largest === undefined) return;
      this.counters.receiveBudgetCloses++;
      // The peer is told why, by a DISCONNECT (PROTOCOL §4), though the connection and what it
      // holds go at once: the DISCONNECT is not resent on a timer, but a packet of the session
      // arriving afterwards draws it again instead of NO_CONNECTION (replyNoConnection).
      // (A connection already closing, which still holds what it received, keeps its reason.)
      const closing = largest.state === ConnectionState.Disconnecting;
      if (closing || largest.state === ConnectionState.Connected) {
        const reason = closing ? (largest.closeReason ?? "receive-buffer-exceeded") : "receive-buffer-exceeded";
        const goodbye: Goodbye = { sessionId: largest.sessionId, code: reasonCode(reason), until: now + this.config.closeTimeoutMs };
        if (this.goodbyes.size >= GOODBYE_LIMIT) this.goodbyes.delete(this.goodbyes.keys().next().value as Address);
        this.goodbyes.set(largest.address, goodbye);
        this.queueGoodbye(largest.address, goodbye);
      }
      largest.finish("receive-buffer-exceeded");
      this.remove(largest);
    }
  }

  /** Server connections per source host (rateKeyOf): `delta` is +1 or -1. */
  private countHost(address: Address, delta: number): void {
    const host = rateKeyOf(address);
    const n = (this.perHost.get(host) ?? 0) + delta;
    if (n > 0) this.perHost.set(host, n);
    else this.perHost.delete(host);
  }

  private allocate(now: number, address: Address, role: Role, salt: number): Connection {
    const slot = this.freeSlots.pop() as number;
    this.engine.resetSlot(slot, this.random() & 0xffff); // a random initial sequence
    const conn = new Connection(this, this.nextId++, slot, address, role, now, salt, this.random());
    this.slots[slot] = conn;
    this.byAddress.set(address, conn);
    if (role === Role.Server) this.countHost(address, 1);
    this.lastFrom = undefined;
    this.byId.set(conn.id, conn);
    return conn;
  }

  /** Free a closed connection's slot and tell the application. */
  private remove(conn: Connection): void {
    if (conn.state !== ConnectionState.Closed) conn.finish(conn.closeReason ?? "aborted");
    if (this.byId.get(conn.id) !== conn) return;
    if (conn.role === Role.Client && conn.attempt !== undefined) this.pendingAttempts--;
    conn.dispose(this.lastNow);
    this.heap.remove(conn.slot);
    this.byId.delete(conn.id);
    if (this.lastSentId === conn.id) {
      this.lastSentId = NaN;
      this.lastSentConnection = undefined;
    }
    if (this.byAddress.get(conn.address) === conn) this.byAddress.delete(conn.address);
    if (conn.role === Role.Server) this.countHost(conn.address, -1);
    if (this.bySession.get(conn.sessionId) === conn) this.bySession.delete(conn.sessionId);
    if (this.bySalt.get(conn.salt) === conn) this.bySalt.delete(conn.salt);
    this.lastFrom = undefined;
    this.slots[conn.slot] = undefined;
    if (this.dispatching) this.slotsFreedInBatch.push(conn.slot);
    else this.freeSlots.push(conn.slot);
    // The final figures, after dispose() settled what was still in flight (as dropped).
    const stats = conn.stats(this.lastNow);
    const ev: EndpointEvent = { type: "disconnect", connection: conn.id, reason: conn.closeReason ?? "normal", stats };
    if (conn.closeDeny !== undefined) ev.deny = conn.closeDeny;
    if (conn.closeUserData !== undefined && conn.closeUserData.length > 0) ev.userData = conn.closeUserData;
    this.undelivered.set(conn.id, stats);
    this.emit(ev);
  }

  private queueGoodbye(to: Address, goodbye: Goodbye): void {
    this.queueControl({ to, type: PacketType.Disconnect, salt: goodbye.code, bytes: undefined, value: goodbye.sessionId });
  }

  private queueControl(reply: ControlReply): void {
    if (this.control.length - this.controlHead >= CONTROL_QUEUE_LIMIT) {
      this.counters.controlQueueOverflow++;
      return;
    }
    this.control.push(reply);
  }

  private encodeControl(reply: ControlReply, offset: number): number {
    const b = this.engine.bytes;
    let length: number;
    switch (reply.type) {
      case PacketType.Challenge:
        length = encodeChallenge(b, offset, reply.salt, reply.bytes as Uint8Array);
        break;
      case PacketType.Deny:
        length = encodeDeny(b, offset, reply.salt, reply.value as DenyCode, reply.bytes ?? EMPTY);
        break;
      case PacketType.DisconnectAck:
        length = encodeDisconnectAck(b, offset, reply.value);
        break;
      case PacketType.Disconnect:
        length = encodeDisconnect(b, offset, reply.value, reply.salt, EMPTY);
        break;
      case PacketType.NatPunch:
        length = encodePunch(b, offset, reply.bytes as Uint8Array);
        break;
      case PacketType.RebindChallenge: {
        // Encoded when queued (it carries the connection's proof): copied in here.
        const packet = reply.bytes as Uint8Array;
        b.set(packet, offset);
        length = packet.length;
        break;
      }
      default:
        length = encodeNoConnection(b, offset, reply.value, reply.salt);
    }
    return this.engine.sealControl(offset, length);
  }

  /** Run the engine over the queued datagrams, if any. Small enough to inline at every poll
   *  (most calls find nothing queued). */
  private processPending(): void {
    if (this.batchCount > 0) this.processBatches();
  }

  /** Run the engine over the queued datagrams (one processBatch per burst) and dispatch. */
  private processBatches(): void {
    const engine = this.engine;
    const now = this.lastNow;
    let base = 0;
    const total = this.batchCount;
    this.batchCount = 0; // re-entrancy guard: nothing below queues datagrams
    while (base < total) {
      // Sub-batches of ACK_CHUNK datagrams: between them, any connection that has received
      // ACK_CHUNK or more ack-eliciting packets since it last sent gets a pure ack sealed at
      // once, so a burst larger than the 33-packet ack window is still fully acknowledged.
      const count = Math.min(total - base, ACK_CHUNK);
      if (base > 0) {
        // Shift the unprocessed descriptors to the front (their arena offsets stay valid).
        engine.descriptors.copyWithin(0, base * DESCRIPTOR_INTS, total * DESCRIPTOR_INTS);
      }
      const n = engine.processBatch(count);
      this.dispatching = true;
      try {
        this.dispatchRecords(now, n, base);
      } finally {
        this.dispatching = false;
        while (this.slotsFreedInBatch.length > 0) this.freeSlots.push(this.slotsFreedInBatch.pop() as number);
      }
      // consumed 0 cannot happen (one always fits), and would advance by `count` anyway: so a
      // one-datagram batch (a ping, a light flow) advances by 1 without the call into the engine.
      const consumed = count === 1 ? 1 : engine.consumed();
      base += consumed > 0 ? consumed : count;
      this.sealImmediateAcks(now);
    }
    if (this.rebuilt.length > 0) this.readRebuilt();
    for (const conn of this.touched) {
      conn.touched = false;
      if (conn.state !== ConnectionState.Closed) conn.afterReceive(now);
      if (conn.state === ConnectionState.Closed) this.remove(conn);
      else {
        if (conn.wantsToSend(now)) this.markReady(conn);
        this.reschedule(conn);
      }
    }
    if (this.receiveBudget.over) this.enforceReceiveBudget(now);
    clearArray(this.touched);
  }

  /**
   * @internal A connection rebuilt a lost datagram from parity (src/fec) while this batch was read: held
   * as a copy (the receive arena still holds the batch), read after it as if it had just arrived.
   */
  injectDatagram(conn: Connection, bytes: Uint8Array): void {
    // One pass of rebuilt datagrams: a rebuilt one cannot rebuild another (the sender never puts
    // a parity in a group, so only a hostile peer would), and the list stays bounded.
    if (this.readingRebuilt || this.rebuilt.length >= REBUILT_LIMIT) return conn.onDropCounted("invalid");
    this.rebuilt.push(conn.address, bytes.slice());
  }

  private readRebuilt(): void {
    const list = this.rebuilt;
    this.rebuilt = [];
    this.readingRebuilt = true;
    try {
      for (let i = 0; i < list.length; i += 2) this.queueDatagram(list[i] as Address, list[i + 1] as Uint8Array, undefined, false);
      this.processBatches();
    } finally {
      this.readingRebuilt = false;
    }
  }

  private sealImmediateAcks(now: number): void {
    const engine = this.engine;
    const slotsInArena = engine.layout.txArenaBytes / MAX_DATAGRAM_BYTES;
    for (const conn of this.touched) {
      if (conn.unackedReceived < ACK_CHUNK / 2) continue;
      // Tx arena slot 0 is for pollTransmit; slots 1.. hold immediate acks until drained. An
      // entry keeps the slot of its position in the queue until the whole queue is drained (the
      // array is only emptied then), so a new ack takes the next position even when earlier
      // entries were already taken: counting from the head would reuse a slot a queued ack
      // still holds (test/session/immediate-ack-slots.test.ts).
      const index = 1 + this.immediate.length;
      if (index >= slotsInArena) return;
      const offset = engine.layout.txArenaOffset + index * MAX_DATAGRAM_BYTES;
      const length = conn.writeImmediateAck(now, offset);
      if (length > 0) this.immediate.push({ to: conn.address, offset, length });
    }
  }

  private touch(conn: Connection): void {
    if (!conn.touched) {
      conn.touched = true;
      this.touched.push(conn);
    }
  }

  /** A pure ack that reports its ack delay (PROTOCOL §2): read from the datagram in the arena. */
  private onAckDelayTrailer(now: number, conn: Connection, index: number, sequence: number): void {
    const bytes = this.engine.bytes;
    const at = this.engine.layout.rxArenaOffset + index * MAX_DATAGRAM_BYTES;
    // Without ACKS_VALID the header's `ack` names nothing, so neither does the delay.
    const ack = (bytes[at] & ACKS_VALID) !== 0 ? bytes[at + 3] | (bytes[at + 4] << 8) : -1;
    const delayMs = (bytes[at + DATA_HEADER_BYTES] | (bytes[at + DATA_HEADER_BYTES + 1] << 8)) / ACK_DELAY_UNITS_PER_MS;
    conn.onPacketReceived(now, false, sequence, ack, delayMs);
  }

  /** A DATA packet carrying only acks (late-ack.ts, isAckOnly): not ack-eliciting. */
  private isAckOnly(index: number, length: number): boolean {
    return isAckOnly(this.engine.bytes, this.engine.layout.rxArenaOffset + index * MAX_DATAGRAM_BYTES, length);
  }

  private dispatchRecords(now: number, n: number, base: number): void {
    const r = this.engine.records;
    const arena = this.engine.bytes;
    for (let i = 0; i < n; i++) {
      const p = i * RECORD_INTS;
      const type = r[p + RecordHeader.Type];
      const slot = r[p + RecordHeader.Slot];
      const conn = slot >= 0 ? this.slots[slot] : undefined;
      switch (type) {
        case RecordType.DatagramDropped: {
          const reason = r[p + DatagramDroppedRecord.Reason];
          this.counters.drops[reason]++;
          const c = conn ?? this.byAddress.get(this.batchFrom[base + r[p + DatagramDroppedRecord.Datagram]]);
          if (c !== undefined) {
            c.onDropCounted(
              reason === DropReason.BadCrc ? "crc" : reason === DropReason.DuplicatePacket ? "duplicate" : reason === DropReason.StalePacket ? "stale" : "invalid",
            );
            // A duplicate or stale packet still proves the peer alive.
            if (reason === DropReason.DuplicatePacket || reason === DropReason.StalePacket) c.onPeerAlive(now);
          }
          break;
        }
        case RecordType.PacketReceived:
          if (conn !== undefined) {
            const index = base + r[p + PacketReceivedRecord.Datagram];
            const length = this.batchLength[index];
            const data = r[p + PacketReceivedRecord.PacketType] === PacketType.Data;
            const sequence = r[p + PacketReceivedRecord.Sequence] & 0xffff;
            if (data && conn.parityReceiver !== undefined) conn.parityReceiver.remember(arena, this.engine.layout.rxArenaOffset + index * MAX_DATAGRAM_BYTES, length, sequence);
            if (data && length === DATA_OVERHEAD_BYTES + ACK_DELAY_TRAILER_BYTES) this.onAckDelayTrailer(now, conn, index, sequence);
            else conn.onPacketReceived(now, data && length > DATA_OVERHEAD_BYTES && !this.isAckOnly(index, length), sequence);
            this.touch(conn);
          }
          break;
        case RecordType.PacketAcked:
          if (conn !== undefined) conn.onPacketAcked(now, r[p + PacketAckedRecord.Sequence] & 0xffff);
          break;
        case RecordType.Control:
          this.onControl(
            now,
            this.batchFrom[base + r[p + ControlRecord.Datagram]],
            r[p + ControlRecord.PacketType],
            r[p + ControlRecord.Offset],
            r[p + ControlRecord.Length],
            this.batchIdentity[base + r[p + ControlRecord.Datagram]],
          );
          break;
        case RecordType.Message:
          if (conn === undefined) break;
          if (r[p + MessageRecord.Channel] === SYSTEM_CHANNEL) conn.onSystemMessage(now, arena, r[p + MessageRecord.Offset], r[p + MessageRecord.Length]);
          else conn.onChannelRecord(now, r, p, arena);
          break;
        case RecordType.Hold:
        case RecordType.Release:
        case RecordType.Skip:
        case RecordType.HoldGap:
        case RecordType.FrameDropped:
          if (conn !== undefined) conn.onChannelRecord(now, r, p, arena);
          if (type === RecordType.FrameDropped) this.counters.drops[r[p + FrameDroppedRecord.Reason]]++;
          break;
        case RecordType.UnknownPeer:
          this.counters.drops[DropReason.UnknownPeer]++;
          this.replyNoConnection(
            now,
            this.batchFrom[base + r[p + UnknownPeerRecord.Datagram]],
            r[p + UnknownPeerRecord.Sequence],
            r[p + UnknownPeerRecord.Crc],
          );
          break;
        default:
          break;
      }
    }
  }

  /**
   * NO_CONNECTION to `to`, echoing the `sequence` and `crc` of the packet it answers. `limited`:
   * through the per-address NO_CONNECTION limiter (an answer to a REBIND_REQUEST has passed the
   * handshake limiter already, and must not be starved by the answers to the data around it).
   */
  private replyNoConnection(now: number, to: Address, sequence: number, crc: number, limited = true): void {
    // A client still handshaking with this address ignores its early DATA silently.
    const conn = this.byAddress.get(to);
    if (conn !== undefined) return;
    if (limited && !this.noConnectionLimiter.allow(now, to)) {
      this.counters.noConnectionRateLimited++;
      return;
    }
    const goodbye = this.goodbyes.get(to);
    if (goodbye !== undefined) {
      if (goodbye.until > now) return this.queueGoodbye(to, goodbye);
      this.goodbyes.delete(to);
    }
    this.counters.noConnectionSent++;
    this.queueControl({ to, type: PacketType.NoConnection, salt: crc, bytes: undefined, value: sequence });
  }

  // ---- the handshake, server and client side (PROTOCOL §4; see handshake.ts) -----------------

  private onControl(now: number, from: Address, type: number, offset: number, length: number, identity: ClientIdentity | undefined): void {
    const b = this.engine.bytes;
    const conn = this.byAddress.get(from);
    switch (type) {
      case PacketType.ConnectRequest: {
        if (!this.config.server) return this.unexpected();
        if (!this.handshakeLimiter.allow(now, rateKeyOf(from))) {
          this.counters.handshakeRateLimited++;
          return;
        }
        const req = parseRequest(b, offset, length);
        if (req === undefined) return this.unexpected();
        if (req.wireVersion !== WIRE_VERSION || req.appVersion !== this.config.appVersion) {
          // Stateless and smaller than the 256-byte request.
          return this.deny(from, req.salt, DenyCode.VersionMismatch, EMPTY);
        }
        this.counters.challengesSent++;
        const cookie = this.cookies.mint(now, from, req.salt).slice();
        this.queueControl({ to: from, type: PacketType.Challenge, salt: req.salt, bytes: cookie, value: 0 });
        return;
      }
      case PacketType.ConnectResponse: {
        if (!this.config.server) return this.unexpected();
        if (!this.handshakeLimiter.allow(now, rateKeyOf(from))) {
          this.counters.handshakeRateLimited++;
          return;
        }
        const res = parseResponse(b, offset, length);
        if (res === undefined) return this.unexpected();
        if (!this.cookies.check(now, from, res.salt, b, res.cookieAt)) {
          this.counters.badCookies++;
          // Answered as a REQUEST is: with a cookie for the address the RESPONSE came from. A
          // client whose NAT gave it a new port mid-handshake, or whose RESPONSEs were lost until
          // its cookie aged out, would otherwise resend the stale cookie until its connect
          // timeout. Stateless, rate limited like a REQUEST, and smaller than the RESPONSE.
          this.counters.challengesSent++;
          const cookie = this.cookies.mint(now, from, res.salt).slice();
          this.queueControl({ to: from, type: PacketType.Challenge, salt: res.salt, bytes: cookie, value: 0 });
          return;
        }
        // From here on the address is validated: it received our challenge.
        if (conn !== undefined) {
          if (conn.role === Role.Server && conn.salt === res.salt) {
            // Our ACCEPT was lost: send it again. Also while closing a connection the client was
            // never heard on (closed from its "connect" event): it cannot read our DISCONNECT
            // before it has the ACCEPT.
            if (conn.state === ConnectionState.Connected || (conn.state === ConnectionState.Disconnecting && conn.acceptedResponse !== undefined)) {
              conn.acceptDue = true;
              this.markReady(conn);
            }
            return;
          }
          // A new attempt from an address we still hold (the peer restarted): the cookie proves
          // the address, so the old connection is replaced.
          conn.finish("aborted");
          this.remove(conn);
        } else if (this.acceptedElsewhere(now, from, res)) {
          return;
        }
        if (res.wireVersion !== WIRE_VERSION || res.appVersion !== this.config.appVersion) {
          return this.deny(from, res.salt, DenyCode.VersionMismatch, EMPTY);
        }
        if (res.channelHash !== this.config.channelHash) return this.deny(from, res.salt, DenyCode.ChannelMismatch, EMPTY);
        // Every connection counts, whoever opened it, our own attempts too (as in connect()):
        // each becomes a connection.
        if (this.byId.size >= this.config.maxConnections || this.freeSlots.length === 0) {
          return this.deny(from, res.salt, DenyCode.ServerFull, EMPTY);
        }
        // One host completing handshakes from many source ports must not fill every slot.
        if ((this.perHost.get(rateKeyOf(from)) ?? 0) >= this.config.maxConnectionsPerHost) {
          this.counters.hostFull++;
          return this.deny(from, res.salt, DenyCode.ServerFull, EMPTY);
        }
        let acceptData: Uint8Array = EMPTY;
        const hook = this.config.accept;
        if (hook !== undefined) {
          // A repeat of a RESPONSE whose decision is still being made (an async hook), or was
          // a deny after such a wait: not asked again.
          if (this.pendingAccepts.has(from, res.salt)) return;
          const again = this.pendingAccepts.deniedBefore(now, from, res.salt);
          if (again !== undefined) return this.deny(from, res.salt, again.code, again.userData);
          let decision: { accepted: boolean; data: Uint8Array } | undefined;
          try {
            const request: ConnectRequestInfo = { address: from, userData: res.userData, appVersion: res.appVersion };
            if (identity !== undefined) request.identity = identity;
            const answer: unknown = hook(request);
            if (isThenable(answer)) return this.deferAccept(now, from, { ...res, identity }, answer);
            decision = readAcceptDecision(answer);
          } catch {
            decision = undefined;
          }
          if (decision === undefined) {
            // The application's code, called in the middle of a receive batch: a throw (or an
            // answer that is not a decision) must not leave the rest of the batch (other
            // connections' data, already acknowledged by the engine) unprocessed. The client is
            // refused; the API wraps its hook and reports the error itself.
            this.counters.acceptHookErrors++;
            return this.deny(from, res.salt, DenyCode.Refused, EMPTY);
          }
          if (!decision.accepted) return this.deny(from, res.salt, DenyCode.Refused, decision.data.subarray(0, MAX_DENY_USER_DATA).slice());
          acceptData = decision.data.subarray(0, MAX_ACCEPT_USER_DATA).slice();
        }
        return this.admit(now, from, { ...res, identity }, acceptData);
      }
      case PacketType.Challenge: {
        const fields = parseChallenge(b, offset, length);
        if (conn === undefined || fields === undefined || !conn.onChallenge(now, fields)) return this.unexpected();
        this.markReady(conn);
        this.reschedule(conn);
        return;
      }
      case PacketType.Accept: {
        const fields = parseAccept(b, offset, length);
        if (conn === undefined || fields === undefined) return this.unexpected();
        const wasAttempt = conn.attempt !== undefined;
        if (!conn.onAccept(now, fields)) return this.unexpected();
        if (wasAttempt) this.pendingAttempts--;
        this.touch(conn);
        return;
      }
      case PacketType.Deny: {
        const fields = parseDeny(b, offset, length);
        if (conn === undefined || fields === undefined || conn.state !== ConnectionState.Connecting || fields.salt !== conn.salt) {
          return this.unexpected();
        }
        conn.finish("denied", denyReasonName(fields.reason), fields.userData);
        this.remove(conn);
        return;
      }
      case PacketType.Disconnect: {
        const fields = parseDisconnect(b, offset, length);
        if (fields === undefined) return this.unexpected();
        // Always acknowledged, even when the connection is already gone (PROTOCOL §4). The ack
        // (9 bytes) is smaller than any DISCONNECT (>= 12), and rate limited per address.
        if (this.noConnectionLimiter.allow(now, from)) {
          this.queueControl({ to: from, type: PacketType.DisconnectAck, salt: 0, bytes: undefined, value: fields.sessionId });
        }
        // Only at the connection's own address. A client whose NAT moved as it closed sends its
        // goodbye from an address the server never saw: acknowledged above, and the connection
        // times out. Taking it for the session it names, from anywhere, would make the session
        // id its only credential, and live ids can be told from dead ones (PROTOCOL §4,
        // "DISCONNECT").
        if (conn !== undefined && conn.acceptsData && conn.sessionId === fields.sessionId) {
          conn.finish(reasonName(fields.reason), undefined, fields.userData);
          this.remove(conn);
        }
        return;
      }
      case PacketType.DisconnectAck: {
        const sessionId = parseDisconnectAck(b, offset, length);
        if (conn === undefined && this.goodbyes.get(from)?.sessionId === sessionId) {
          this.goodbyes.delete(from);
          return;
        }
        if (conn === undefined || sessionId !== conn.sessionId) return this.unexpected();
        conn.onDisconnectAck();
        if (conn.state === ConnectionState.Closed) this.remove(conn);
        return;
      }
      case PacketType.NoConnection: {
        if (conn === undefined || conn.state !== ConnectionState.Connected) return this.unexpected();
        // Genuine only if it echoes a packet we sent (its sequence and CRC, which carry the
        // connection key): anyone can send NO_CONNECTION from our peer's address. A CRC of 0
        // never counts: it is what the ring holds where no packet was sealed yet.
        const echo = parseNoConnection(b, offset, length);
        if (echo === undefined || echo.crc === 0) {
          this.counters.unverifiedNoConnection++;
          return;
        }
        const rebind = conn.rebind;
        if (rebind !== undefined && echo.crc === rebind.requestCrc) {
          // The server holds no session of ours at all: it was dropped, not moved.
          conn.finish("no-connection");
          this.remove(conn);
          return;
        }
        if (this.engine.sentCrc(conn.slot, echo.sequence) !== echo.crc) {
          this.counters.unverifiedNoConnection++;
          return;
        }
        // An answer to data sent before our last move completed: that move took care of it.
        if (conn.answersBeforeLastMove(echo.sequence)) return;
        if (conn.role === Role.Client && this.config.migration) {
          // Our address may have changed under us (PROTOCOL §5): ask the server to move.
          conn.startRebind(now);
          this.markReady(conn);
          this.reschedule(conn);
          return;
        }
        conn.finish("no-connection");
        this.remove(conn);
        return;
      }
      case PacketType.RebindRequest:
      case PacketType.RebindResponse:
        return this.onRebind(now, from, type, offset, length);
      case PacketType.NatPunch:
        // Never answered (PROTOCOL §7): reported only for a token this endpoint punches with.
        if (!this.punchTokens.accept(now, b, offset)) {
          this.counters.punchesIgnored++;
          return;
        }
        this.counters.punchesReceived++;
        this.emit({ type: "punch", address: from, token: b.slice(offset, offset + PUNCH_BODY_BYTES) });
        return;
      case PacketType.RebindChallenge: {
        const fields = parseRebind(b, offset, length);
        if (
          conn === undefined ||
          fields === undefined ||
          conn.role !== Role.Client ||
          conn.state !== ConnectionState.Connected ||
          fields.sessionId !== conn.sessionId ||
          !conn.asksRebindChallenge(fields.tokenHigh) ||
          !rebindProofValid(b, offset, fields, this.config.protocolId, conn.salt) ||
          !conn.onRebindChallenge(fields.tokenLow, fields.tokenHigh)
        ) {
          return this.unexpected();
        }
        this.markReady(conn);
        this.reschedule(conn);
        return;
      }
      default:
        return this.unexpected();
    }
  }

  /**
   * Server: a client asks to move its connection to `from` (REBIND_REQUEST) or proves it
   * receives there (REBIND_RESPONSE). PROTOCOL §5, rebind.ts. Nothing is stored per request:
   * the challenge's tag is a keyed hash of (session, counter, address, time window), checked
   * when the response comes back, so no request can displace another's. The proof is checked
   * before anything costs a reply or rate-limit budget: forged packets spoofed from the
   * client's new address cannot use up the budget of its real request.
   */
  private onRebind(now: number, from: Address, type: PacketType, offset: number, length: number): void {
    const b = this.engine.bytes;
    if (!this.config.server) return this.unexpected();
    const fields = parseRebind(b, offset, length);
    if (fields === undefined) return this.unexpected();
    const conn = this.bySession.get(fields.sessionId);
    const holder = this.byAddress.get(from);
    if (
      conn === undefined ||
      conn.state !== ConnectionState.Connected ||
      !this.config.migration ||
      !rebindProofValid(b, offset, fields, this.config.protocolId, conn.salt) ||
      (holder !== undefined && holder !== conn)
    ) {
      // No such session (the server restarted or timed the client out), or none this request
      // may move: say so, echoing the request's CRC, so the client stops asking. One answer for
      // all of them: a silence for a live session's id with a bad proof, against NO_CONNECTION
      // for an unknown one, would tell a sender which ids are live (a DISCONNECT spoofed from a
      // player's address needs only that). Never for a response: requests come
      // first. Valid requests have a bucket of their own (rebindLimiter): forged ones spoofed
      // from a moving client's new address spend only this one.
      this.counters.rebindsRefused++;
      if (type !== PacketType.RebindRequest) return;
      if (!this.handshakeLimiter.allow(now, rateKeyOf(from))) this.counters.handshakeRateLimited++;
      else this.replyNoConnection(now, from, 0, readU32(b, offset + length), false);
      return;
    }
    const window = Math.floor(now / REBIND_WINDOW_MS);
    if (type === PacketType.RebindRequest) {
      // Fresh: at least the highest counter seen (the same one again is a retransmission, or
      // an observer's copy racing it: each address gets its own challenge). Older: a replay.
      const counter = fields.tokenLow;
      // Never far ahead either: a client sends 4 requests per move, so a jump past
      // REBIND_COUNTER_LEAD is no client's (it would lock the real client's requests out).
      // (rebindCounter >= rebindDoneCounter always: a move completes at the highest seen.)
      if (counter < conn.rebindCounter || counter <= conn.rebindDoneCounter || counter > conn.rebindCounter + REBIND_COUNTER_LEAD) {
        this.counters.rebindsRefused++;
        return;
      }
      // A valid proof, but possibly a copy replayed from a spoofed address: at most the
      // handshake rate per address, so the server reflects no more than it would a handshake.
      if (!this.rebindLimiter.allow(now, from)) {
        this.counters.handshakeRateLimited++;
        return;
      }
      conn.rebindCounter = counter;
      const packet = new Uint8Array(1 + REBIND_BODY_BYTES);
      const tag = rebindTag(this.secretKey, conn.sessionId, counter, from, window);
      encodeRebind(packet, 0, PacketType.RebindChallenge, this.config.protocolId, conn.salt, conn.sessionId, tag, counter);
      this.counters.rebindChallengesSent++;
      this.queueControl({ to: from, type: PacketType.RebindChallenge, salt: 0, bytes: packet, value: 0 });
      return;
    }
    // A response: the tag must be the one this server made for this address and counter, in
    // this time window or the previous one, for a counter above the last completed move.
    const counter = fields.tokenHigh;
    const tag = fields.tokenLow;
    if (
      counter <= conn.rebindDoneCounter ||
      (tag !== rebindTag(this.secretKey, conn.sessionId, counter, from, window) &&
        tag !== rebindTag(this.secretKey, conn.sessionId, counter, from, window - 1))
    ) {
      this.counters.rebindsRefused++;
      return;
    }
    // Every request of this move is spent, not only the one answered (on a slow path the
    // server has seen later ones too): a replay of any of them gets no reply. (A valid tag is
    // only ever made for a counter the server accepted, so counter <= rebindCounter.)
    conn.rebindDoneCounter = conn.rebindCounter;
    const old = conn.address;
    // Already there (the client asked again for data sent before the move).
    if (old === from) return;
    this.counters.migrations++;
    this.moveConnection(now, conn, from);
  }

  /** `conn` now lives at `to` (its address checked by the caller): routes, path, the "migrate" event. */
  private moveConnection(now: number, conn: Connection, to: Address): void {
    const from = conn.address;
    if (this.byAddress.get(from) === conn) this.byAddress.delete(from);
    this.byAddress.set(to, conn);
    // A connection that moves keeps its slot even onto a host at its limit (refusing the move
    // would end it); the count follows it, so new handshakes from there wait.
    if (conn.role === Role.Server) {
      this.countHost(from, -1);
      this.countHost(to, 1);
    }
    this.lastFrom = undefined;
    conn.moveTo(now, to);
    this.emit({ type: "migrate", connection: conn.id, from, to });
    this.markReady(conn);
    this.reschedule(conn);
  }

  /**
   * A valid RESPONSE from `from` that repeats one this server accepted at another address, and
   * whose connection has received nothing of its session since: the client's NAT gave it a
   * new port after its RESPONSE left, and the ACCEPT went to the old one. The cookie proves the
   * new address, so the connection moves there (a "migrate" event) and the ACCEPT is sent
   * again: one connection, not a second one beside a ghost that would time out.
   * - Only the same attempt moves it: the same salt, versions, channel hash and user data
   *   (a RESPONSE that differs is another client's, which happens to share the salt).
   * - Never back to an address it was moved from (a late or replayed copy of the first
   *   RESPONSE is dropped), and at most MAX_HANDSHAKE_MOVES times.
   * - Not on a server with migration off: there the RESPONSE opens a connection of its own.
   * - A connection that has received anything of its session moves only by PROTOCOL §5.
   * Returns true if the RESPONSE was handled here (moved, or dropped as a stale copy).
   */
  private acceptedElsewhere(now: number, from: Address, res: ResponseFields): boolean {
    const conn = this.bySalt.get(res.salt);
    const accepted = conn?.acceptedResponse;
    // Disconnecting too: closed from its "connect" event before its ACCEPT reached the client,
    // the connection must still reach it (ACCEPT, then DISCONNECT) rather than open a second one.
    if (conn === undefined || accepted === undefined || (conn.state !== ConnectionState.Connected && conn.state !== ConnectionState.Disconnecting) || conn.address === from) return false;
    if (res.wireVersion !== WIRE_VERSION || !sameResponse(accepted, res) || !this.config.migration) return false;
    if (accepted.left.includes(from) || accepted.left.length >= MAX_HANDSHAKE_MOVES) return true;
    accepted.left.push(conn.address);
    this.counters.handshakeMoves++;
    conn.acceptDue = true;
    this.moveConnection(now, conn, from);
    return true;
  }

  /** A validated handshake the server accepts: its connection, told ACCEPT. */
  private admit(now: number, from: Address, res: PendingAcceptFields, acceptData: Uint8Array): void {
    const created = this.allocate(now, from, Role.Server, res.salt);
    // Unique among this server's sessions: a migrating client is found by it.
    let sessionId = this.secureRandom() || 1;
    while (this.bySession.has(sessionId)) sessionId = this.secureRandom() || 1;
    created.startSession(sessionId);
    this.bySession.set(sessionId, created);
    this.bySalt.set(res.salt, created);
    created.acceptedResponse = { appVersion: res.appVersion, channelHash: res.channelHash, userData: res.userData.slice(), left: [] };
    created.acceptDue = true;
    created.acceptUserData = acceptData;
    const identity = res.identity;
    this.emit(identity === undefined ? { type: "connect", connection: created.id, address: from, userData: res.userData } : { type: "connect", connection: created.id, address: from, userData: res.userData, identity });
    this.markReady(created);
    this.reschedule(created);
  }

  /**
   * The accept hook answered with a promise: the handshake waits for it (at most
   * maxPendingAccepts at once, each at most acceptTimeoutMs), holding no connection. Past the
   * bound the client is denied "server-full" at once (it may retry).
   */
  private deferAccept(now: number, from: Address, res: PendingAcceptFields, answer: PromiseLike<unknown>): void {
    if (this.pendingAccepts.full) {
      this.counters.acceptsOverLimit++;
      // Its answer no longer matters; a rejection must not go unhandled.
      try {
        answer.then(undefined, () => {});
      } catch {
        // a thenable whose then() throws: nothing to wait for
      }
      return this.deny(from, res.salt, DenyCode.ServerFull, EMPTY);
    }
    this.counters.acceptsDeferred++;
    this.pendingAccepts.add(now, from, res, answer);
  }

  /** Async accept decisions that came in, and those past acceptTimeoutMs (handleTimeout). */
  private settleAccepts(now: number): void {
    const pending = this.pendingAccepts;
    if (pending.size === 0) return;
    const denyAfterWait = (entry: PendingAccept, code: DenyCode, userData: Uint8Array): void => {
      pending.denied(now, entry, code, userData);
      this.deny(entry.from, entry.salt, code, userData);
    };
    for (const entry of pending.takeSettled()) {
      const decision = entry.state === "fulfilled" ? readAcceptDecision(entry.value) : undefined;
      if (decision === undefined) {
        // Rejected, or resolved to something that is not a decision: the API reports it.
        this.counters.acceptHookErrors++;
        denyAfterWait(entry, DenyCode.Refused, EMPTY);
        continue;
      }
      if (!decision.accepted) {
        denyAfterWait(entry, DenyCode.Refused, decision.data.subarray(0, MAX_DENY_USER_DATA).slice());
        continue;
      }
      // What was checked before the wait may have changed during it.
      if (this.byAddress.has(entry.from)) continue;
      if (this.byId.size >= this.config.maxConnections || this.freeSlots.length === 0) {
        denyAfterWait(entry, DenyCode.ServerFull, EMPTY);
        continue;
      }
      this.admit(now, entry.from, entry, decision.data.subarray(0, MAX_ACCEPT_USER_DATA).slice());
    }
    for (const entry of pending.takeExpired(now)) {
      this.counters.acceptTimeouts++;
      denyAfterWait(entry, DenyCode.ServerFull, EMPTY);
    }
  }

  private deny(to: Address, salt: number, reason: DenyCode, userData: Uint8Array): void {
    this.counters.deniesSent++;
    this.queueControl({ to, type: PacketType.Deny, salt, bytes: userData, value: reason });
  }

  private unexpected(): void {
    this.counters.unexpectedControl++;
  }

  /** Number of connection objects held (all states): for tests of "allocates nothing". */
  get connectionCount(): number {
    return this.byId.size;
  }
}

/**
 * The key of secureRandom(): the secret's 16 bytes, or (tests: a seed and no secret) two
 * SipHash outputs of the seed under a fixed key. Not the seeded generator's outputs: those
 * show on the wire (initial sequences), and would give the key away with the seed. A 32-bit
 * seed is no secret either way: a seed without a secret is for repeatable tests.
 */
function secretKeyOf(secret: Uint8Array | undefined, seed: number): SipKey {
  if (secret !== undefined) return [readU32(secret, 0), readU32(secret, 4), readU32(secret, 8), readU32(secret, 12)];
  const input = new Uint8Array(8);
  const out = new Uint8Array(16);
  writeU32(input, 0, seed);
  writeU32(input, 4, 1);
  sipHash64(SEED_KEY, input, 0, 8, out, 0);
  writeU32(input, 4, 2);
  sipHash64(SEED_KEY, input, 0, 8, out, 8);
  return [readU32(out, 0), readU32(out, 4), readU32(out, 8), readU32(out, 12)];
}
/** "ackwire seedkey!" as four little-endian words. */
const SEED_KEY: SipKey = [0x6b636161, 0x65726977, 0x65657320, 0x21796b64];

/**
 * Empty `a`, keeping its storage. Not `a.length = 0`: that is a call into the runtime each time
 * (a visible share of a ping-pong's receive), where pop() is inlined; these arrays hold a few
 * entries (the connections of one batch or one timer pass).
 */
function clearArray(a: unknown[]): void {
  while (a.length > 0) a.pop();
}

/**
 * A drained queue, emptied for reuse: a fresh `[]` per drain was an array plus, at its first
 * push, a 17-slot backing store, for every event batch and every pollTransmit that found the
 * ready line drained (several per ping-pong round trip). A long queue (a burst) is replaced
 * instead, so popping stays short and a burst's backing store is not kept.
 */
function emptied<T>(a: T[]): T[] {
  if (a.length > REUSED_QUEUE_MAX) return [];
  clearArray(a);
  return a;
}

/** An accept hook's answer (true, false, or { accept, userData? } with userData a Uint8Array),
 *  or undefined if it is none of those. */
export function readAcceptDecision(decision: unknown): { accepted: boolean; data: Uint8Array } | undefined {
  if (typeof decision === "boolean") return { accepted: decision, data: EMPTY };
  if (typeof decision !== "object" || decision === null) return undefined;
  const { accept, userData } = decision as { accept?: unknown; userData?: unknown };
  if (typeof accept !== "boolean" || (userData !== undefined && !(userData instanceof Uint8Array))) return undefined;
  return { accepted: accept, data: userData ?? EMPTY };
}

function stateName(state: ConnectionState): string {
  switch (state) {
    case ConnectionState.Connecting:
      return "still connecting";
    case ConnectionState.Disconnecting:
      return "disconnecting";
    case ConnectionState.Closed:
      return "closed";
    default:
      return "connected";
  }
}
