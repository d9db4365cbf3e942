/**
 * One connection's state machine (connecting -> connected -> disconnecting -> closed) and its
 * packet-level reliability: sent-packet records, acks, loss detection, RTO, congestion gating,
 * ack delay, keepalive, unresponsive/timeout, graceful disconnect and clock sync.
 *
 * The Endpoint owns the socket-level concerns (routing, the engine batch, the send arena, the
 * timer heap); a Connection is driven by it through a handful of methods and never sees an
 * address other than its own. Timers: see `Timer`; `nextDeadline()` is the earliest of them.
 */
import type { ReceiveBudget } from "../channels/receive-budget.js";
import { DATA_HEADER_BYTES, ACK_DELAY_TRAILER_BYTES, CRC_BYTES, DATA_OVERHEAD_BYTES, PACKET_WINDOW, PacketType, SettleOutcome, type Engine } from "../engine/abi.js";
import { ChannelSet, PacketContents, type DeliveryHandler } from "../channels/index.js";
import {
  AckSummary,
  createController,
  type CongestionAlgorithm,
  type CongestionConfig,
  type CongestionController,
  type SentPacket,
} from "../congestion/controller.js";
import { RttEstimator } from "../congestion/rtt.js";
import { OWNER_BASE, OWNER_SLOTS, newStateArray } from "../congestion/state-layout.js";
import { QlogTracer, type TraceFactory } from "../trace/qlog.js";
import { LossRecovery } from "../recovery/loss-recovery.js";
import { sequenceGreaterThan } from "../engine/sequence.js";
import { PingTracker, pingTrackerOnAck } from "../congestion/ping.js";
import { BandwidthChangeDetector } from "../congestion/bandwidth-events.js";
import { NetworkClock, unwrapU32 } from "../clock/network-clock.js";
import type { ResolvedConfig } from "./config.js";
import { PathMtu } from "./path-mtu.js";
import { ParityOutcome, ParityReceiver, ParitySender, fecOption } from "../fec/index.js";
import { AckFrequency } from "./ack-frequency.js";
import { LATE_BEHIND, LateAckReader } from "./late-ack.js";
import { LateArrivals } from "./late-arrivals.js";
import { ClientRebind, encodeRebind, REBIND_ATTEMPTS, RebindCounters } from "./rebind.js";
import { AttemptPhase, ClientAttempt } from "./handshake.js";
import type { AcceptedResponse } from "./server-handshake.js";
import { connectionKey, encodeDisconnect, type AcceptFields, type ChallengeFields } from "../wire/control.js";
import { encodeAccept } from "../wire/control-server.js";
import { readF64, readU16, readU32 } from "../wire/bytes.js";
import { carriesChannel } from "../wire/frame.js";
import { readCrc, writeAckDelayTrailer } from "../wire/datagram.js";
import {
  ACK_DELAY_DELAY_AT,
  ACK_DELAY_FRAME,
  ACK_DELAY_LENGTH,
  ACK_DELAY_SEQUENCE_AT,
  ACK_FREQUENCY_FRAME,
  ACK_FREQUENCY_LENGTH,
  ACK_FREQUENCY_REQUEST_SEQ_AT,
  ACK_FREQUENCY_THRESHOLD_AT,
  ackDelayMs,
  CLOCK_REPLY_ECHO_AT,
  CLOCK_REPLY_FRAME,
  CLOCK_REPLY_LENGTH,
  CLOCK_REPLY_SERVER_TIME_AT,
  CLOCK_REQUEST_FRAME,
  CLOCK_REQUEST_LENGTH,
  CLOCK_REQUEST_SEND_TIME_AT,
  encodeAckDelay,
  encodeAckFrequency,
  encodeClockReply,
  encodeClockRequest,
  encodePadding,
  encodeReceiveTime,
  RECEIVE_TIME_FRAME,
  RECEIVE_TIME_LENGTH,
  RECEIVE_TIME_MICROS_AT,
  RECEIVE_TIME_SEQUENCE_AT,
  SYSTEM_ACK_DELAY,
  SYSTEM_ACK_FREQUENCY,
  SYSTEM_CLOCK_REPLY,
  SYSTEM_CLOCK_REQUEST,
  SYSTEM_LATE_ACK,
  SYSTEM_PADDING,
  SYSTEM_PARITY,
  SYSTEM_RECEIVE_TIME,
  writeSystemFrameHeader,
} from "../wire/system.js";
import type { Address, ConnectionId, ConnectionStats, DenyReason, DisconnectReason, EndpointEvent } from "./types.js";

export const enum ConnectionState {
  Connecting = 0,
  Connected = 1,
  Disconnecting = 2,
  Closed = 3,
}

/**
 * The connection's timers: one table, one enum, one dispatch. Each entry is an absolute
 * deadline on the endpoint's clock (Infinity: not armed), stored at its enum value in the
 * connection's state array (`num`, congestion/state-layout.ts), so the per-datagram ones share
 * cache lines with the rest of what a datagram touches. `nextDeadline()` is the earliest entry;
 * `onTimeout()` handles the due ones in enum order (the order matters: a connect or close
 * timeout ends the connection before anything else is considered).
 */
export const enum Timer {
  /** Client: give up connecting. */
  ConnectTimeout = 64,
  /** Disconnecting: give up waiting for DISCONNECT_ACK. */
  CloseTimeout,
  /** Nothing received for timeoutMs (armed while connected or disconnecting). */
  Idle,
  /** Nothing received for unresponsiveMs: the "unresponsive" event (once per silence). */
  Unresponsive,
  /**
   * Loss detection, RFC 9002 §6.2.1 shape: the earlier of the time threshold for the oldest
   * ack-eliciting packet sent before the newest acknowledged one, and the RTO (with backoff)
   * of the oldest ack-eliciting packet in flight, always measured from the oldest packet so a
   * steady stream of acks cannot push it back.
   */
  Retransmit,
  /** The channels' timers (ChannelSet.nextTimerAt): a delayed send is due, or a message's
   *  deadline passed. */
  DelayedSend,
  /** Client: send the next CLOCK_REQUEST. */
  ClockSync,
  /** Client: next CONNECT_REQUEST / CONNECT_RESPONSE resend. */
  Handshake,
  /** Disconnecting: resend DISCONNECT. */
  DisconnectResend,
  /** Lingering (close with linger): stop waiting for what was sent to be delivered. */
  Linger,
  /** Client, migrating (rebind.ts): the next REBIND_REQUEST, or give up. */
  Rebind,
  /** A pure ack is owed: sent then unless data carried it first. */
  AckDelay,
  /** Nothing sent for keepaliveMs while connected: a KEEPALIVE goes. */
  Keepalive,
  /** Data waits for the pacer. */
  Pacing,
  /** One past the last timer: the rest of `num` starts here. */
  End,
}

/**
 * The numbers every datagram reads or writes that are not small integers (times, timers, the
 * pending RTT sample, rates), in one packed array of doubles. As fields each would be a separate
 * heap box (V8 keeps non-integer fields as boxed doubles), i.e. one more cold cache line per
 * field with a thousand connections; here they are three lines. Read and written as
 * `this.num[Num.X]` directly: getters of the same names were not always inlined into the large
 * send and receive functions (V8's inlining budget), and each call showed in profiles.
 */
const enum Num {
  /** After the timer table (Timer), in the owner region of the state array. */
  LastReceivedAt = Timer.End,
  /** When the newest received packet (ACK_DELAY, receiver side) arrived. */
  NewestReceivedAt,
  /** Time of the application's last send() with a new `now`, and its EWMA period (0 = none). */
  LastAppSendAt,
  SendPeriodMs,
  /** The held RTT sample (rttPendingSeq): sent, acknowledged, the peer's reported ack delay. */
  RttPendingSentAt,
  RttPendingAckedAt,
  RttPendingAckDelayMs,
  /** The estimate last passed to `bandwidth` (-1: none yet). */
  BandwidthSeenBps,
  /** The ack delay a pure ack reported for its `ack` (trailerAckSeq), ms. */
  TrailerAckDelayMs,
  Count,
}

export const enum Role {
  Client = 0,
  Server = 1,
}

const REASON_CODES: Record<string, number> = {
  normal: 0,
  timeout: 1,
  "protocol-violation": 2,
  "receive-buffer-exceeded": 3,
  "server-shutdown": 4,
  kicked: 5,
};
const REASON_NAMES: DisconnectReason[] = ["normal", "timeout", "protocol-violation", "receive-buffer-exceeded", "server-shutdown", "kicked"];

export function reasonCode(reason: DisconnectReason): number {
  if (typeof reason === "object") return reason.app;
  return REASON_CODES[reason] ?? 0;
}
export function reasonName(code: number): DisconnectReason {
  if (code >= 64) return { app: code };
  return REASON_NAMES[code] ?? "protocol-violation";
}

/** Unanswered CLOCK_REQUESTs a client remembers (their replies are the only ones it takes). */
const CLOCK_REQUESTS_TRACKED = 64;
/** Shorter waits are not reported: below the timer granularity they do not move an RTO. */
const ACK_DELAY_MIN_MS = 1;
const RING = PACKET_WINDOW;
/** How far behind the newest received packet an arrival is acked at once (of the 32 the
 *  ack bits cover: the next ack may come up to an ack threshold, 16 at most, later). */
const REORDERED_ACK_NOW_BEHIND = 16;
/** Eliciting packets received since our last send at which an ack leaves without delay. */
const ACK_NOW_PACKETS = 8;
/** How long after the predicted send an ack waiting for it leaves on its own. */
const ACK_PIGGYBACK_GRACE_MS = 0.25;
/** Longest gap between application sends still read as a steady cadence (ack policy). */
const SEND_CADENCE_MAX_MS = 250;
/**
 * Acknowledged controller records, shared by every connection in the process (records are
 * interchangeable): the next send, of any connection, takes the record an ack released last,
 * still in cache, where a pool per connection handed back one untouched since that
 * connection's previous ack. Beyond MAX_IDLE_SENT_RECORDS, acked records are left to GC.
 */
const idleSentRecords: SentPacket[] = [];
const MAX_IDLE_SENT_RECORDS = 4096;
/** Packets of the ring kept free for pure acks and keepalives. */
const RING_HEADROOM = 16;

/** What a connection needs from its endpoint. */
export interface ConnectionHost {
  readonly config: ResolvedConfig;
  readonly engine: Engine;
  /** What every connection of the endpoint may hold received, together. */
  readonly receiveBudget?: ReceiveBudget;
  emit(event: EndpointEvent): void;
  /** A datagram rebuilt from parity (src/fec): read it as one that has just arrived. */
  injectDatagram?(conn: Connection, bytes: Uint8Array): void;
}

export class Connection implements DeliveryHandler<PacketContents, SentPacket> {
  // Field order is memory order (V8 lays fields out as declared): the fields a datagram reads
  // or writes come first, together, so a connection that is cold in cache when its packet
  // arrives costs a few cache lines, not one per scattered field. Rarely used state follows.
  state: ConnectionState;
  /** The per-datagram numbers (timers, times, RTT sample, rates): see `Num`. The connection's
   *  state array (congestion/state-layout.ts), which also holds the controller's, the RTT
   *  estimator's and the ping tracker's numbers: an ack touches one array, not four. */
  private readonly num: number[] = newNumTable();
  /** Touched by the endpoint's current receive batch (joinBatch). */
  private touched = false;
  /** In the endpoint's ready-to-send queue (joinReadyQueue). */
  private queued = false;
  // Counters as plain fields (one object less per connection).
  private bytesReceived = 0;
  private received = 0;
  /** A server connection's accepted RESPONSE, until the first packet of its session arrives
   *  (then its ACCEPT got through, and the connection moves only by PROTOCOL §5). */
  private accepted: AcceptedResponse | undefined = undefined;
  /**
   * Sender side: the RTT sample of the newest first-transmission packet acknowledged by the
   * datagram being dispatched (RFC 9002 §5.3 samples only the largest newly acknowledged
   * packet), held until the datagram's frames are read, because its ACK_DELAY frame comes after
   * the acks (PROTOCOL §3). -1 = none pending.
   */
  private rttPendingSeq = -1;
  /**
   * Receiver side of ACK_DELAY: the newest packet sequence received (the `ack` field of our next
   * packet; -1 before any), when it arrived, and whether it was ack-eliciting and not yet
   * acknowledged by any packet of ours (only then is its wait worth reporting).
   */
  private newestReceivedSeq = -1;
  private newestReceivedUnreported = false;
  /** Sender side of a pure ack's ack delay (PROTOCOL §2): the `ack` of the datagram being read
   *  if it was such a pure ack, else -1; its delay is Num.TrailerAckDelayMs. */
  private trailerAckSeq = -1;
  /** Receiver: a packet newer than the last RECEIVE_TIME reported has arrived. */
  private receiveTimeUnreported = false;
  /** Sender: the newest of our packets the datagram being read newly acknowledged (-1: none),
   *  which a RECEIVE_TIME in the same datagram must name to be used. */
  private newestAckedInDatagram = -1;
  /** Receiver: arrivals too far behind the newest for a header to ack (LATE_ACK), if any yet. */
  private lateArrivals: LateArrivals | undefined = undefined;
  /** Sender: reads the peer's LATE_ACK frames (created at the first). */
  private lateAckReader: LateAckReader | undefined = undefined;
  /** Sender: the peer's receive clock, unwrapped from its u32 microseconds (NaN: no report yet). */
  private peerClockWire = -1;
  private peerClockMs = NaN;
  /** Idle (lastReceivedAt + timeoutMs) and Unresponsive (lastReceivedAt + unresponsiveMs) armed. */
  private unresponsive = false;
  private ackOwed = false;
  private receivedSinceAck = 0;
  private ccInFlightBytes = 0;
  /** The acks of the datagram being read, for the controller (flushAcks). */
  private readonly acks = new AckSummary();
  /** Bytes the carrier adds to each datagram (config.carrier), counted with it everywhere. */
  private readonly carrierOverhead: number;
  /** Server: an ACCEPT is due (first, or again for a repeated CONNECT_RESPONSE). */
  private acceptDue = false;
  private clockRequestDue = false;
  /** clockEchoes is not empty: read per datagram instead of the array, one object less. */
  private clockEchoDue = false;
  private bytesSent = 0;
  /** The sent window, loss detection and the RTO (recovery/loss-recovery.ts). */
  private readonly recovery: LossRecovery;
  /** recovery.sent: every packet in flight. */
  private readonly delivery: LossRecovery["sent"];
  readonly channels: ChannelSet;
  /** XOR parity (src/fec): the sender's groups if a channel asks for parity, and the receiver's
   *  copies once the peer has sent a parity. */
  private readonly paritySender: ParitySender | undefined;
  parityReceiver: ParityReceiver | undefined = undefined;
  private readonly cc: CongestionController;
  /** Ack-frequency requests, both ways (ack-frequency.ts). */
  private readonly ackFrequency = new AckFrequency(ACK_NOW_PACKETS);
  /** Path MTU discovery (undefined when maxMtu = mtu). */
  private pathMtu: PathMtu | undefined;
  /** Size of a path MTU probe to send after the datagram just written (0 = none). */
  private probeQueued = 0;
  /** The largest datagram now (pathMtu.current, or mtu without discovery), read per datagram. */
  private datagramMtu: number;
  /** When to ask pathMtu for a probe (Infinity: no discovery, or a probe in flight): one compare
   *  per datagram instead of a call. */
  private probeCheckAt = Infinity;
  /** An ack of ours gave an RTT sample (the handshake's does not count): path MTU probes wait
   *  for it, so that a connection's first datagrams are not probes. */
  private ackSampled = false;
  /** Packets above this size feed the black-hole detector (Infinity without discovery). */
  private largeFrom = Infinity;
  /** After a black hole: the next acknowledgement tells pathMtu the path works again. */
  private mtuAwaitsAck = false;
  /** Black holes reported in "pathMtu" events (and stats), and the current PathMtu's count. */
  private blackHolesReported = 0;
  private blackHolesSeen = 0;
  private readonly rtt = new RttEstimator(undefined, this.num);
  /** Its numbers are in `num`; a sample goes in through pingTrackerOnAck(this.num, ...). */
  private readonly ping = new PingTracker(undefined, this.num);
  /** Server: CLOCK_REQUEST times to echo (bounded). */
  private clockEchoes: number[] = [];
  /**
   * Client: the send times (u32 ms, as on the wire) of the last CLOCK_REQUESTs not yet
   * answered, oldest first. A CLOCK_REPLY counts only if it echoes one of them, and only once:
   * each accepted sample re-sorts up to 256 samples, and a peer sending replies unasked (76 fit
   * in a datagram) would make that milliseconds of CPU per datagram.
   */
  private clockRequestsOut: number[] | undefined;

  // ---- rarely used ----
  sessionId = 0;
  /** Client: the handshake in progress. */
  attempt: ClientAttempt | undefined;
  /** Salt of the handshake that created this connection (server: to answer repeated responses). */
  salt: number;
  /** Server: the user data of its ACCEPT, from the accept hook. */
  private acceptUserData: Uint8Array = new Uint8Array(0);
  /** Set when the connection closes; the endpoint removes it. */
  closeReason: DisconnectReason | undefined;
  closeDeny: DenyReason | undefined;
  closeUserData: Uint8Array | undefined;
  /** Closed with linger (closeAfterDelivery), not yet saying goodbye (sends are refused). The
   *  close was asked at the Linger timer less half the close timeout. */
  lingering = false;
  /** Turns the controller's moving estimate into sparse "bandwidth" events (> 20 % change). */
  private readonly bandwidth = new BandwidthChangeDetector();
  private clock: NetworkClock | undefined;
  private connectedAt: number;
  /** The connection's qlog trace (EndpointConfig.trace), or undefined: one check per event. */
  private trace: QlogTracer | undefined;
  private disconnectCode = 0;
  /** DISCONNECTs sent so far in this close, for the resend backoff. */
  private disconnectAttempts = 0;
  private disconnectUserData: Uint8Array = new Uint8Array(0);
  private duplicates = 0;
  private stale = 0;
  private invalid = 0;
  private crcFailures = 0;
  /** Client: moving this connection to our new address (rebind.ts). */
  rebind: ClientRebind | undefined;
  /** Client: packets dispatched when our last move completed (-1: none). A NO_CONNECTION
   *  answering a packet sent before that is about the old address: ignored. A count, not a
   *  16-bit sequence, so no wrap can make a fresh answer look old. */
  private rebindDoneAt = -1;
  /** REBIND counters: the client's requests, the server's freshness checks (rebind.ts). */
  readonly rebindCounters = new RebindCounters();

  constructor(
    private readonly host: ConnectionHost,
    readonly id: ConnectionId,
    readonly slot: number,
    /** The peer's address; a server's connection moves when its client migrates (moveTo). */
    public address: Address,
    readonly role: Role,
    now: number,
    salt: number,
    /** Seeds the controller's random choices: flows sharing a link start in different phases. */
    ccSeed = 0,
  ) {
    const config = host.config;
    this.salt = salt;
    this.state = role === Role.Client ? ConnectionState.Connecting : ConnectionState.Connected;
    this.channels = new ChannelSet({ channels: config.channels, mtu: config.mtu, maxReceiveBufferBytes: config.maxReceiveBufferBytes, budget: host.receiveBudget });
    const fec = config.channels.some((ch) => ch.fec !== undefined && ch.fec !== false && ch.fec !== 0) ? config.channels.map((ch, i) => fecOption(i, ch.fec)) : undefined;
    this.paritySender = fec !== undefined ? new ParitySender(fec) : undefined;
    if (fec !== undefined) this.parityReceiver = new ParityReceiver(-1);
    this.datagramMtu = config.mtu;
    const carrier = config.carrier?.(address);
    this.carrierOverhead = carrier?.overheadBytes ?? 0;
    const maxMtu = Math.min(config.maxMtu, carrier?.maxDatagramBytes ?? Infinity);
    if (maxMtu > config.mtu) {
      this.pathMtu = new PathMtu(config.mtu, maxMtu);
      this.probeCheckAt = 0;
      this.largeFrom = this.pathMtu.largeFrom;
    }
    this.cc = createController(controllerConfig(config, ccSeed, this.carrierOverhead), this.num);
    // The connection is its own delivery handler (no closure pair per connection).
    this.recovery = new LossRecovery(this, this.num, Timer.Retransmit, this.rtt, this.cc, config.ackDelayMs, host.engine, slot);
    this.delivery = this.recovery.sent;
    if (config.trace !== undefined) this.startTrace(config.trace, now);
    this.num[Num.LastReceivedAt] = now;
    this.connectedAt = now;
    if (role === Role.Server) this.startConnected(now);
  }

  // ---- handshake -----------------------------------------------------------------------------

  /** Client: begin the handshake; give it up after `timeoutMs`. */
  startAttempt(now: number, userData: Uint8Array, timeoutMs: number): void {
    const c = this.host.config;
    this.attempt = new ClientAttempt(this.salt, userData, now, c.handshakeResendMs, c.handshakeResendMaxMs);
    this.setTimer(Timer.Handshake, now);
    this.setTimer(Timer.ConnectTimeout, now + timeoutMs);
  }

  onChallenge(now: number, fields: ChallengeFields): boolean {
    if (this.state !== ConnectionState.Connecting || this.attempt === undefined) return false;
    if (!this.attempt.onChallenge(now, fields)) return false;
    this.setTimer(Timer.Handshake, now);
    return true;
  }

  onAccept(now: number, fields: AcceptFields): boolean {
    if (this.state !== ConnectionState.Connecting || this.attempt === undefined || fields.salt !== this.salt) return false;
    if (this.attempt.phase !== AttemptPhase.Response) return false;
    const handshakeRtt = this.attempt.rttSampleOnAccept(now);
    this.startSession(fields.sessionId);
    this.attempt = undefined;
    // The first RTT sample (and link ping), so that the first data's loss timers run on the
    // path's round trip rather than the 1 s initial RTO, and stats() has it at "connect".
    if (handshakeRtt >= 0) {
      this.rtt.onSample(now, handshakeRtt);
      this.recovery.rttChanged();
      pingTrackerOnAck(this.num, now, now - handshakeRtt, 1);
    }
    this.setTimer(Timer.Handshake, Infinity);
    this.setTimer(Timer.ConnectTimeout, Infinity);
    this.startConnected(now);
    this.host.emit({ type: "connect", connection: this.id, address: this.address, userData: fields.userData });
    return true;
  }

  /**
   * The session id is known (chosen by the server, or read from its ACCEPT): from here on the
   * slot's DATA and KEEPALIVE carry the connection key in their CRC (PROTOCOL §1).
   */
  startSession(sessionId: number): void {
    this.sessionId = sessionId;
    this.host.engine.keySlot(this.slot, connectionKey(this.salt, sessionId));
  }

  /** Server: the handshake accepted `res`; its ACCEPT, carrying `userData`, is due. */
  acceptFor(res: AcceptedResponse, userData: Uint8Array): void {
    this.accepted = res;
    this.acceptUserData = userData;
    this.acceptDue = true;
  }

  /** Server: the RESPONSE this connection was accepted for, until its session's first packet. */
  get acceptedResponse(): AcceptedResponse | undefined {
    return this.accepted;
  }

  /** Server: the client sent its RESPONSE again (our ACCEPT was lost): the ACCEPT goes again. */
  resendAccept(): void {
    this.acceptDue = true;
  }

  /**
   * Server: the client moved before its session started (its RESPONSE came again from another
   * address): the address this connection leaves never gets it back, and the ACCEPT goes
   * again, to the new address the endpoint moves it to.
   */
  followHandshakeMove(): void {
    (this.accepted as AcceptedResponse).leave(this.address);
    this.acceptDue = true;
  }

  /** The endpoint's receive batch touched this connection: true the first time per batch. */
  joinBatch(): boolean {
    if (this.touched) return false;
    this.touched = true;
    return true;
  }

  /** The endpoint's receive batch is over. */
  leaveBatch(): void {
    this.touched = false;
  }

  /** Joins the endpoint's ready-to-send queue: true if it was not in it. */
  joinReadyQueue(): boolean {
    if (this.queued) return false;
    this.queued = true;
    return true;
  }

  /** Leaves the endpoint's ready-to-send queue. */
  leaveReadyQueue(): void {
    this.queued = false;
  }

  private startConnected(now: number): void {
    const c = this.host.config;
    this.state = ConnectionState.Connected;
    this.connectedAt = now;
    this.num[Num.LastReceivedAt] = now;
    this.num[Timer.Keepalive] = now + c.keepaliveMs;
    this.num[Timer.Idle] = now + c.timeoutMs;
    this.num[Timer.Unresponsive] = now + c.unresponsiveMs;
    if (this.role === Role.Client) {
      this.clock = new NetworkClock();
      this.setTimer(Timer.ClockSync, now);
    }
  }

  /** The endpoint routes DATA to this connection's slot only once it is established. */
  get acceptsData(): boolean {
    return this.state === ConnectionState.Connected || this.state === ConnectionState.Disconnecting;
  }

  // ---- receive path --------------------------------------------------------------------------

  onDatagramBytes(bytes: number): void {
    this.bytesReceived += bytes + this.carrierOverhead;
  }

  onDropCounted(kind: "crc" | "duplicate" | "stale" | "invalid"): void {
    if (kind === "crc") this.crcFailures++;
    else if (kind === "duplicate") this.duplicates++;
    else if (kind === "stale") this.stale++;
    else this.invalid++;
  }

  /** Any authenticated-by-CRC packet from the peer proves it alive. */
  onPeerAlive(now: number): void {
    this.num[Num.LastReceivedAt] = now;
    if (this.state === ConnectionState.Connected || this.state === ConnectionState.Disconnecting) {
      const c = this.host.config;
      this.num[Timer.Idle] = now + c.timeoutMs;
      this.num[Timer.Unresponsive] = now + c.unresponsiveMs;
    }
    if (this.unresponsive) {
      this.unresponsive = false;
      this.host.emit({ type: "responsive", connection: this.id });
    }
  }

  /**
   * Engine PacketReceived. `elicits`: a DATA packet with frames (needs an ack). `trailerAck`:
   * for a pure ack that reports its ack delay (PROTOCOL §2), the `ack` it names, with the delay
   * in ms; -1 otherwise.
   */
  onPacketReceived(now: number, elicits: boolean, sequence: number, trailerAck = -1, trailerDelayMs = 0): void {
    // The previous datagram's acks and frames are all read: its acks go to the controller and
    // its RTT sample is final.
    this.flushAcks(now);
    if (this.rttPendingSeq >= 0) this.commitRttSample();
    this.recovery.onDatagramRead(now);
    // Applied once this datagram's acks have named its RTT sample (commitRttSample).
    this.trailerAckSeq = trailerAck;
    if (trailerAck >= 0) this.num[Num.TrailerAckDelayMs] = trailerDelayMs;
    this.received++;
    if (this.trace !== undefined) this.trace.packetReceived(now, sequence, elicits);
    if (this.accepted !== undefined) this.accepted = undefined;
    this.newestAckedInDatagram = -1;
    if (this.lateAckReader !== undefined) this.lateAckReader.startDatagram();
    let behindNewest = 0;
    if (this.newestReceivedSeq < 0 || sequenceGreaterThan(sequence, this.newestReceivedSeq)) {
      this.newestReceivedSeq = sequence;
      this.num[Num.NewestReceivedAt] = now;
      this.newestReceivedUnreported = elicits;
      this.receiveTimeUnreported = true;
    } else {
      behindNewest = (this.newestReceivedSeq - sequence) & 0xffff;
    }
    this.onPeerAlive(now);
    // Only a connected side acks: a closing one sends nothing but DISCONNECT, and an ack timer
    // armed there would fall due with nothing to clear it (the endpoint would spin on it).
    if (!elicits || this.state !== ConnectionState.Connected) return;
    this.receivedSinceAck++;
    if (!this.ackOwed) {
      this.ackOwed = true;
      this.num[Timer.AckDelay] = this.ackDeadline(now);
    }
    // Many unacknowledged packets across batches (a fast flow, a quiet receiver): ack now, well
    // before they could fall out of the peer's 33-packet ack window and be declared lost.
    if (this.receivedSinceAck >= this.ackFrequency.threshold) this.num[Timer.AckDelay] = now;
    // A packet that arrived behind newer ones (a reordering path) is acked at once when it is
    // far enough behind to leave the 33-packet ack window before the next ack would: otherwise
    // its arrival is never reported and the sender declares it lost (RFC 9000 §13.2.1 acks
    // every out-of-order packet at once; this acks only those at risk).
    if (behindNewest >= REORDERED_ACK_NOW_BEHIND) this.num[Timer.AckDelay] = now;
    // Too far behind for any header's ack bits: reported in LATE_ACK frames (late-ack.ts).
    if (behindNewest >= LATE_BEHIND) (this.lateArrivals ??= new LateArrivals()).add(sequence);
  }

  /**
   * When an ack owed since `now` leaves if no data carries it first. Normally after ackDelayMs;
   * but when the application sends at a steady cadence (a game's 30 Hz tick) and its next
   * message is predicted within ackPiggybackMs, the ack waits for it: two unsynchronized 30 Hz
   * streams otherwise send about one pure ack per data packet, doubling the datagrams. The wait
   * shows up in the peer's RTT samples (as any ack delay does), so its RTO grows with it.
   */
  private ackDeadline(now: number): number {
    const c = this.host.config;
    const at = now + c.ackDelayMs;
    const period = this.num[Num.SendPeriodMs];
    if (period <= 0) return at;
    // Just after the predicted send: a driver that fires timers before its application's tick
    // at the same instant would otherwise send the pure ack right ahead of the data.
    const predicted = this.num[Num.LastAppSendAt] + period + ACK_PIGGYBACK_GRACE_MS;
    if (predicted > at && predicted <= now + c.ackPiggybackMs) return predicted;
    return at;
  }

  /** An engine Settled record, or a LATE_ACK frame's ack (see LossRecovery.onSettled). */
  onSettled(now: number, sequence: number, outcome: SettleOutcome, largestAcked: number): void {
    this.recovery.onSettled(now, sequence, outcome, largestAcked);
    if (this.paritySender !== undefined) this.paritySender.onAcked(sequence); // src/fec: a late ack of a parity
  }

  onChannelRecord(now: number, records: Int32Array, index: number, arena: Uint8Array): void {
    // A closing connection takes no more data: nobody will read it (the application closed,
    // and a closing side acks nothing, so the peer resends it all anyway), and the receive
    // bound is not checked there, so a peer ignoring our DISCONNECTs could make us hold
    // fragments until the close timeout (gigabytes within seconds).
    if (this.state !== ConnectionState.Connected) return;
    this.channels.onRecord(now, records, index, arena);
  }

  /** A system-channel (255) message: clock sync. */
  onSystemMessage(now: number, arena: Uint8Array, offset: number, length: number): void {
    if (length < 1) return this.onDropCounted("invalid");
    const type = arena[offset];
    if (type === SYSTEM_PADDING) return; // a path MTU probe: its arrival (and ack) is the point
    if (type === SYSTEM_CLOCK_REQUEST && length === CLOCK_REQUEST_LENGTH) {
      if (this.clockEchoes.length < 8) this.clockEchoes.push(readU32(arena, offset + CLOCK_REQUEST_SEND_TIME_AT));
      this.clockEchoDue = true;
    } else if (type === SYSTEM_ACK_DELAY && length === ACK_DELAY_LENGTH) {
      // Applies only to the packet this datagram newly acknowledged as its newest (a report for
      // an older or already-sampled packet is ignored), capped at the longest wait the peer's
      // ack policy allows (the peer runs the same defaults as we do).
      const sequence = readU16(arena, offset + ACK_DELAY_SEQUENCE_AT);
      const delayMs = ackDelayMs(readU16(arena, offset + ACK_DELAY_DELAY_AT));
      if (this.rttPendingSeq === sequence) this.takePeerAckDelay(delayMs);
      else if (this.recovery.lateAckedSeq === sequence) this.recovery.onLateAckDelay(this.cappedPeerAckDelay(delayMs));
    } else if (type === SYSTEM_ACK_FREQUENCY && length === ACK_FREQUENCY_LENGTH) {
      if (!this.ackFrequency.onRequest(arena[offset + ACK_FREQUENCY_REQUEST_SEQ_AT], arena[offset + ACK_FREQUENCY_THRESHOLD_AT])) return this.onDropCounted("invalid");
      // Packets already received may now be enough for an ack at once (only a connected side acks).
      // (ackOwed is false unless connected: close() clears it and only a connected side sets it.)
      if (this.ackOwed && this.receivedSinceAck >= this.ackFrequency.threshold) this.num[Timer.AckDelay] = now;
    } else if (type === SYSTEM_RECEIVE_TIME && length === RECEIVE_TIME_LENGTH) {
      this.onReceiveTime(now, readU16(arena, offset + RECEIVE_TIME_SEQUENCE_AT), readU32(arena, offset + RECEIVE_TIME_MICROS_AT));
    } else if (type === SYSTEM_PARITY) {
      this.onParity(arena, offset, length);
    } else if (type === SYSTEM_LATE_ACK) {
      const reader = (this.lateAckReader ??= new LateAckReader());
      const n = reader.read(arena, offset, length, this.delivery.newestDispatched);
      if (n < 0) return this.onDropCounted("invalid");
      for (let i = 0; i < n; i++) {
        const sequence = reader.named[i];
        const outcome = this.delivery.acknowledge(sequence);
        if (outcome !== SettleOutcome.None) this.onSettled(now, sequence, outcome, this.delivery.largestAckedSequence);
      }
    } else if (type === SYSTEM_CLOCK_REPLY && length === CLOCK_REPLY_LENGTH && this.clock !== undefined) {
      const echo = readU32(arena, offset + CLOCK_REPLY_ECHO_AT);
      const out = this.clockRequestsOut;
      const at = out === undefined ? -1 : out.indexOf(echo);
      if (at < 0) return this.onDropCounted("invalid");
      out!.splice(at, 1);
      this.clock.onSample(unwrapU32(now, echo), readF64(arena, offset + CLOCK_REPLY_SERVER_TIME_AT), now, 0);
    } else {
      this.onDropCounted("invalid");
    }
  }

  /** A PARITY message (src/fec): rebuild the one datagram of its group that did not arrive. */
  private onParity(arena: Uint8Array, offset: number, length: number): void {
    // Copies start with the first parity: the groups it and earlier ones name predate them.
    const receiver = (this.parityReceiver ??= new ParityReceiver((this.newestReceivedSeq + 1) & 0xffff));
    const outcome = receiver.onParity(arena, offset, length);
    if (outcome === ParityOutcome.Invalid) this.onDropCounted("invalid");
    else if (outcome === ParityOutcome.Rebuilt && this.host.injectDatagram !== undefined) this.host.injectDatagram(this, receiver.rebuilt());
  }

  /**
   * RECEIVE_TIME: the peer received our packet `sequence` at `micros` on its clock (u32
   * microseconds, wrapping every 71 minutes). Unwrapped into a running clock (only differences
   * count, and reports are milliseconds apart), and handed to the controller when it names the
   * newest packet this datagram newly acknowledged: the one whose delivery it times.
   */
  private onReceiveTime(now: number, sequence: number, micros: number): void {
    if (this.peerClockWire < 0) this.peerClockMs = 0;
    else this.peerClockMs += ((micros - this.peerClockWire) | 0) / 1000;
    this.peerClockWire = micros;
    // Only reports we asked for: a peer sending them unasked is not trusted to time anything.
    if (sequence === this.newestAckedInDatagram && this.ackFrequency.asksTimes && this.cc.onReceiveTime !== undefined) {
      // The report times the acks before it (they come first in the datagram).
      this.flushAcks(now);
      this.cc.onReceiveTime(now, this.peerClockMs);
    }
  }

  /** After a receive batch: losses, receive-buffer bound, messages and receipts to events. */
  afterReceive(now: number): void {
    this.flushAcks(now);
    if (this.rttPendingSeq >= 0) this.commitRttSample();
    this.recovery.afterAcks(now);
    this.drainToEvents();
    this.ackFrequency.update(this.cc, now);
    // The detector answers the same for an unchanged estimate (it moves only at a report), so
    // it is consulted only when the estimate moved: the estimate changes once per round trip
    // at most, and the detector is one more cold object per receive batch.
    const bps = this.cc.bandwidthEstimateBps();
    if (bps !== this.num[Num.BandwidthSeenBps]) {
      this.num[Num.BandwidthSeenBps] = bps;
      const change = this.bandwidth.update(now, bps);
      if (change !== undefined) this.host.emit({ type: "bandwidth", connection: this.id, bitsPerSecond: change.bps });
    }
    if (this.state === ConnectionState.Connected && this.channels.receiveBufferedBytes() > this.host.config.maxReceiveBufferBytes) {
      this.close(now, "receive-buffer-exceeded", new Uint8Array(0));
    }
  }

  /** Sequences from the oldest ack-eliciting packet in flight to the newest sent, inclusive
   *  (0 if none is in flight). */
  private inFlightSpan(): number {
    const d = this.delivery;
    if (d.inFlight === 0) return 0;
    const oldest = d.oldestRecordedSequence();
    return oldest < 0 ? d.inFlight : ((d.newestDispatched - oldest) & 0xffff) + 1;
  }

  private drainToEvents(): void {
    this.channels.takeMessages(this);
    for (let r = this.channels.pollReceipt(); r !== undefined; r = this.channels.pollReceipt()) {
      this.host.emit({ type: "receipt", connection: this.id, receipt: r.receipt, delivered: r.delivered });
    }
  }

  /** MessageSink: called by this connection's ChannelSet from drainToEvents only. */
  onReceivedMessage(channel: number, data: Uint8Array, key: number | undefined): void {
    const ev: EndpointEvent = key === undefined
      ? { type: "message", connection: this.id, channel, data }
      : { type: "message", connection: this.id, channel, data, key };
    this.host.emit(ev);
  }

  // ---- packet-level delivery feedback (the sent ring's DeliveryHandler) ----------------------

  /** DeliveryHandler: called by the notification manager only. */
  onDelivered(sequence: number, contents: PacketContents, sentTime: number, now: number, record: SentPacket | undefined): void {
    this.ackFrequency.onAcked(sequence, this.cc);
    if (contents === NO_FRAMES && this.paritySender !== undefined) this.paritySender.onOutcome(sequence, false); // src/fec
    if (contents === PROBE) {
      (this.pathMtu as PathMtu).onProbeAcked(sequence, now);
      return this.pathMtuChanged();
    }
    if (record !== undefined) {
      this.ccInFlightBytes -= record.bytes;
      if (record.bytes > this.largeFrom) (this.pathMtu as PathMtu).onAcked(record.bytes, sentTime);
      if (this.mtuAwaitsAck) {
        (this.pathMtu as PathMtu).onPathAlive(now);
        this.pathMtuChanged();
      }
      // Karn (RFC 6298 §3): a packet that carried resent data still has a unique sequence, but
      // only first transmissions are link-ping (and RTT) samples; the transmission ping of a
      // resent message runs from its first send to this ack.
      if (contents.resends === 0) {
        // The RTT and link-ping sample waits for this datagram's ACK_DELAY (commitRttSample).
        if (this.rttPendingSeq < 0 || sequenceGreaterThan(sequence, this.rttPendingSeq)) {
          this.rttPendingSeq = sequence;
          this.num[Num.RttPendingSentAt] = sentTime;
          this.num[Num.RttPendingAckedAt] = now;
          this.num[Num.RttPendingAckDelayMs] = 0;
        }
      } else {
        // From the resent messages' first send, not this packet's: what the application waited.
        pingTrackerOnAck(this.num, now, Math.min(sentTime, contents.firstSentAt), 2);
      }
      this.recovery.countDelivered();
      // To the controller once the datagram's acks are read (flushAcks). Acks come oldest
      // first: the last packet added is the newest (a pure ack, keepalive or probe has no
      // record and is not it).
      this.acks.add(record);
      this.newestAckedInDatagram = sequence;
    }
    if (contents === NO_FRAMES) return;
    this.channels.onDelivered(now, contents);
    this.channels.releaseContents(contents);
  }

  /**
   * Take the held RTT sample less the peer's reported ack delay, but never below the minimum
   * RTT seen (RFC 9002 §5.3: a delay report must not make a sample look shorter than the path
   * has been). Unlike QUIC's min_rtt, the minimum here is over adjusted samples: game acks
   * nearly all wait for data, so raw samples would almost never show the path's RTT.
   */
  private commitRttSample(): void {
    // A pure ack's reported delay, if it names this sample's packet (as an ACK_DELAY must).
    if (this.trailerAckSeq >= 0) {
      // Not tracked for the RTO: a pure ack waits at most ackDelayMs, which the RTO always
      // allows for; its short waits must not pull down the longer ones data acks report
      // (the RTO would fall below the piggyback waits and fire spuriously).
      if (this.trailerAckSeq === this.rttPendingSeq) this.takePeerAckDelay(this.num[Num.TrailerAckDelayMs], false);
      this.trailerAckSeq = -1;
    }
    const at = this.num[Num.RttPendingAckedAt];
    const sentAt = this.num[Num.RttPendingSentAt];
    const latest = at - sentAt;
    const delay = this.num[Num.RttPendingAckDelayMs];
    const rtt = this.rtt;
    const adjusted = latest - delay;
    const sample = rtt.sampleCount === 0 || adjusted >= rtt.minMs ? adjusted : Math.min(latest, rtt.minMs);
    this.rttPendingSeq = -1;
    this.ackSampled = true;
    rtt.onSample(at, sample);
    this.recovery.rttChanged();
    pingTrackerOnAck(this.num, at, at - sample, 1);
    if (this.trace !== undefined) this.traceMetrics(at);
  }

  /** The acks read since the last call, if any, to the controller in one summary (AckSummary). */
  private flushAcks(now: number): void {
    const acks = this.acks;
    if (acks.packets.length === 0) return;
    this.cc.onAcks(now, acks, this.ccInFlightBytes);
    const records = acks.packets;
    for (let i = 0; i < records.length && idleSentRecords.length < MAX_IDLE_SENT_RECORDS; i++) idleSentRecords.push(records[i]!);
    acks.clear();
  }

  /**
   * The peer's reported wait before acknowledging the held sample's packet (an ACK_DELAY frame
   * or a pure ack's delay), capped at the longest wait the peer's ack policy allows (the peer
   * runs the same defaults as we do): taken out of the sample, and (`track`) followed for the RTO.
   */
  private takePeerAckDelay(delayMs: number, track = true): void {
    const capped = this.cappedPeerAckDelay(delayMs);
    this.num[Num.RttPendingAckDelayMs] = capped;
    if (track) this.recovery.onPeerAckDelay(capped);
  }

  private cappedPeerAckDelay(delayMs: number): number {
    const c = this.host.config;
    return Math.min(delayMs, Math.max(c.ackDelayMs, c.ackPiggybackMs + ACK_PIGGYBACK_GRACE_MS));
  }

  /** DeliveryHandler: called by the notification manager only. */
  onDropped(sequence: number, contents: PacketContents, sentTime: number, now: number, record: SentPacket | undefined): void {
    if (this.trace !== undefined) this.trace.packetLost(now, sequence, record !== undefined ? record.bytes : 0);
    this.ackFrequency.onLost(sequence);
    if (contents === NO_FRAMES && this.paritySender !== undefined) this.paritySender.onOutcome(sequence, true); // src/fec
    if (contents === PROBE) {
      (this.pathMtu as PathMtu).onProbeLost(sequence, now);
      return this.pathMtuChanged();
    }
    if (record !== undefined) {
      this.flushAcks(now);
      this.ccInFlightBytes -= record.bytes;
      if (record.bytes > this.largeFrom && (this.pathMtu as PathMtu).onLost(record.bytes, sentTime, now, this.recovery.lossRate)) this.pathMtuChanged();
      this.recovery.onLost(sequence, record);
      this.cc.onLoss(now, record, this.ccInFlightBytes);
    }
    // Lost reliable contents go back to their channels and leave again in NEW packets.
    if (contents === NO_FRAMES) return;
    this.channels.onLost(now, contents);
    this.channels.releaseContents(contents);
  }

  // ---- timers ---------------------------------------------------------------------------------

  nextDeadline(): number {
    const t = this.num;
    let min = t[Timer.ConnectTimeout];
    for (let timer = Timer.ConnectTimeout + 1; timer < Timer.End; timer++) if (t[timer] < min) min = t[timer];
    return min;
  }

  /** Arm (or disarm, Infinity) a timer. */
  private setTimer(timer: Timer, at: number): void {
    this.num[timer] = at;
  }

  /** Disarm every timer. */
  private clearTimers(): void {
    this.num.fill(Infinity, Timer.ConnectTimeout, Timer.End);
  }

  /**
   * Fire every due timer, in enum order. Returns true if the connection may now have something
   * to send. Calling it early does nothing.
   */
  onTimeout(now: number): boolean {
    const t = this.num;
    let wantsSend = false;
    for (let timer = Timer.ConnectTimeout; timer < Timer.End; timer++) {
      if (t[timer] > now) continue;
      switch (timer as Timer) {
        case Timer.ConnectTimeout:
          this.finish("connect-timeout");
          return false;
        case Timer.CloseTimeout:
          this.finish(this.closeReason ?? "normal");
          return false;
        case Timer.Idle:
          if (this.state === ConnectionState.Connected) {
            this.finish("timeout");
            return false;
          }
          // Closing: the close timeout ends it. Disarmed here, or nextDeadline() would keep
          // returning this past time (a packet arriving after close() re-arms it: onPeerAlive).
          t[Timer.Idle] = Infinity;
          break;
        case Timer.Unresponsive:
          t[Timer.Unresponsive] = Infinity;
          if (!this.unresponsive && this.state === ConnectionState.Connected) {
            this.unresponsive = true;
            this.host.emit({ type: "unresponsive", connection: this.id, silentMs: now - t[Num.LastReceivedAt] });
          }
          break;
        case Timer.Retransmit:
          if (this.onRetransmitTimer(now)) wantsSend = true;
          break;
        case Timer.DelayedSend:
          this.channels.runTimers(now);
          t[Timer.DelayedSend] = this.channels.nextTimerAt();
          wantsSend = true;
          break;
        case Timer.ClockSync: {
          // Fast start: 10 requests/s for the first 5 s, then the configured period.
          const c = this.host.config;
          const fast = now - this.connectedAt < c.clockSyncFastPhaseMs;
          t[Timer.ClockSync] = now + (fast ? Math.min(c.clockSyncFastMs, c.clockSyncMs) : c.clockSyncMs);
          this.clockRequestDue = true;
          wantsSend = true;
          break;
        }
        case Timer.Rebind:
          if (this.rebind === undefined) {
            this.finish("no-connection");
            return false;
          }
          // No challenge yet: the path may be dark (an outage right after the rebinding). Keep
          // asking until the idle timeout; a server that dropped us says so (NO_CONNECTION
          // echoing the request), so silence is not taken as an answer.
          wantsSend = true;
          break;
        case Timer.Pacing:
          t[Timer.Pacing] = Infinity;
          wantsSend = true;
          break;
        default:
          // Handshake, DisconnectResend, Linger, AckDelay, Keepalive: writeDatagram sends what
          // is due and re-arms them.
          wantsSend = true;
      }
    }
    return wantsSend;
  }

  /** The Retransmit timer (recovery's): returns true if packets were declared lost. */
  private onRetransmitTimer(now: number): boolean {
    const lost = this.recovery.onRetransmitTimer(now);
    this.drainToEvents();
    return lost;
  }

  // ---- send path ------------------------------------------------------------------------------

  /** `sentAt`: the caller's own time of this send, if it gave one (else NaN; see SendChannel.enqueue). */
  send(
    now: number,
    channel: number,
    data: Uint8Array,
    options: { receipt?: boolean; key?: number; delayMs?: number; deadlineMs?: number; shared?: boolean },
    sentAt = NaN,
  ): number {
    const receipt = this.channels.send(now, channel, data, options, sentAt);
    if ((options.delayMs !== undefined && options.delayMs > 0) || options.deadlineMs !== undefined) {
      this.setTimer(Timer.DelayedSend, this.channels.nextTimerAt());
    }
    // The application's send cadence (several messages in one tick count once), for the ack
    // policy: an EWMA of the gaps, gain 1/4; a gap over 250 ms means no steady cadence.
    const gap = now - this.num[Num.LastAppSendAt];
    if (gap > 0) {
      if (gap > SEND_CADENCE_MAX_MS) this.num[Num.SendPeriodMs] = 0;
      else this.num[Num.SendPeriodMs] = this.num[Num.SendPeriodMs] === 0 ? gap : this.num[Num.SendPeriodMs] + (gap - this.num[Num.SendPeriodMs]) / 4;
      this.num[Num.LastAppSendAt] = now;
    }
    return receipt;
  }

  /**
   * Write the next datagram due at `now` into `bytes` at `offset` (capacity = mtu) and seal
   * it. Returns its length, or 0 if nothing is due now (a timer then says when).
   */
  writeDatagram(now: number, offset: number): number {
    const engine = this.host.engine;
    const bytes = engine.bytes;
    const c = this.host.config;
    let length = 0;
    switch (this.state) {
      case ConnectionState.Connecting: {
        const attempt = this.attempt;
        if (attempt === undefined || attempt.nextSendAt > now) return 0;
        length = engine.sealControl(offset, attempt.encode(bytes, offset, c.appVersion, c.channelHash));
        attempt.onSent(now);
        this.setTimer(Timer.Handshake, attempt.nextSendAt);
        break;
      }
      case ConnectionState.Disconnecting: {
        // Closed before its ACCEPT left (from the application's "connect" event, or its ACCEPT
        // was lost and the client asked again): the client learns of the session first, or it
        // could not read the DISCONNECT and would keep asking.
        if (this.acceptDue) {
          this.acceptDue = false;
          length = engine.sealControl(offset, encodeAccept(bytes, offset, this.salt, this.sessionId, this.acceptUserData));
          break;
        }
        if (this.num[Timer.DisconnectResend] > now) return 0;
        length = engine.sealControl(offset, encodeDisconnect(bytes, offset, this.sessionId, this.disconnectCode, this.disconnectUserData));
        this.setTimer(Timer.DisconnectResend, now + this.disconnectResendInterval());
        break;
      }
      case ConnectionState.Connected:
        if (this.lingering && this.lingerDone(now)) {
          // closeAfterDelivery() set both.
          this.close(now, this.closeReason!, this.closeUserData!);
          return this.writeDatagram(now, offset);
        }
        if (this.rebind !== undefined) {
          length = this.writeRebind(now, offset);
          if (length > 0) break;
        }
        if (this.acceptDue) {
          this.acceptDue = false;
          length = engine.sealControl(offset, encodeAccept(bytes, offset, this.salt, this.sessionId, this.acceptUserData));
          break;
        }
        length = this.writeData(now, offset);
        if (length === 0) return 0;
        break;
      default:
        return 0;
    }
    this.bytesSent += length + this.carrierOverhead;
    return length;
  }

  private writeData(now: number, offset: number): number {
    const engine = this.host.engine;
    const bytes = engine.bytes;
    const c = this.host.config;
    // On a slow path (CongestionController.slowPath) a datagram above the base size costs more
    // delay than it saves: the base size it is (fragments are cut for it anyway).
    const mtu = this.datagramMtu > c.mtu && this.cc.slowPath?.() === true ? c.mtu : this.datagramMtu;
    const room = mtu - DATA_OVERHEAD_BYTES;
    const framesAt = offset + DATA_HEADER_BYTES;
    const systemDue = this.clockRequestDue || this.clockEchoDue;
    const channelsDue = this.channels.hasPending(now);
    const dataDue = systemDue || channelsDue || this.ackFrequency.due;
    let allowed = false;
    // The engine remembers the last PACKET_WINDOW sent sequences (and the notification ring is
    // that size): more packets in flight could not be acknowledged, so they cap the window
    // whatever the congestion controller allows; past the cap the ring reports the oldest lost
    // to make room. Where packets are acked from LATE_BEHIND or further behind the newest
    // acked, that oldest one is most likely late, not lost: there the span from the oldest in
    // flight is the cap, and sending waits for it (elsewhere that wait would hold the window
    // on every real loss until its time threshold).
    const windowRoom = this.recovery.reordersFar ? this.inFlightSpan() < RING - RING_HEADROOM : this.delivery.inFlight < RING - RING_HEADROOM;
    // A due parity follows its group's last datagram at once (what it protects cannot wait).
    if (this.paritySender !== undefined && this.paritySender.due && windowRoom) {
      const length = this.writeParity(now, offset);
      if (length > 0) return length;
    }
    // A path MTU probe queued behind the previous datagram (see below) goes now.
    if (this.probeQueued > 0) {
      const size = this.probeQueued;
      this.probeQueued = 0;
      if (windowRoom) return this.writeProbe(now, offset, size);
    }
    if (!dataDue) {
      // Nothing queued although the window may allow more: delivery-rate samples from here on
      // are application-limited (the controller must not read them as the path's capacity).
      if (windowRoom && this.cc.canSend(this.ccInFlightBytes, mtu)) this.cc.onAppLimited(now, this.ccInFlightBytes);
    } else if (windowRoom) {
      // Only session messages to send (a clock request, an ack-frequency request), no data: the
      // application limits the flow as much as when nothing is due, so the sample this packet
      // gives is app-limited too. (An ack-frequency request sent alone while idle was read as
      // the path's capacity: a 4 Mbit/s estimate fell to 4 kbit/s.)
      allowed = this.cc.canSend(this.ccInFlightBytes, mtu);
      if (allowed && !channelsDue) this.cc.onAppLimited(now, this.ccInFlightBytes);
      if (allowed) {
        const at = this.cc.nextSendTime(now);
        if (at > now) {
          allowed = false;
          this.num[Timer.Pacing] = at;
        }
      }
    }
    // Messages wait for the window or the pacer: the network limits this flow (ack-frequency.ts).
    if (channelsDue && !allowed) this.ackFrequency.blockedAt = now;
    let framesLength = 0;
    let contents: PacketContents | undefined;
    let queueEmptied = false;
    let requestWritten = false;
    if (allowed) {
      contents = this.channels.acquireContents();
      // An ack-frequency request goes first: after the channels' frames a fragment may have
      // filled the packet to the byte, and a long transfer would hold the request back.
      if (this.ackFrequency.due) {
        framesLength = this.writeAckFrequency(bytes, framesAt, room);
        requestWritten = framesLength > 0;
      }
      // The peer asked for receive times (its flow is network-limited): ahead of the channels'
      // frames too, so a full packet does not crowd it out; only when data goes in this packet.
      if (this.ackFrequency.reportTimes && this.receiveTimeUnreported && channelsDue) {
        framesLength += this.writeReceiveTime(bytes, framesAt + framesLength, room - framesLength);
      }
      // Late arrivals' acks: ahead of the channels' frames too (they are few bytes, and a
      // sender declares the packets lost if they wait).
      if (this.lateArrivals !== undefined && this.lateArrivals.pending) {
        framesLength += this.lateArrivals.write(bytes, framesAt + framesLength, room - framesLength, this.newestReceivedSeq);
      }
      framesLength += this.channels.writeFrames(now, bytes, framesAt + framesLength, room - framesLength, contents);
      // Both writers are called only when they have something to write: neither is inlined
      // into this function, and the call was a visible share of a bulk packet's cost.
      if (systemDue) framesLength += this.writeSystemFrames(now, bytes, framesAt + framesLength, room - framesLength);
      if (framesLength > 0 && this.newestReceivedUnreported) {
        framesLength += this.writeAckDelay(now, bytes, framesAt + framesLength, room - framesLength);
      }
      if (framesLength === 0) {
        this.channels.releaseContents(contents);
        contents = undefined;
        this.cc.onAppLimited(now, this.ccInFlightBytes);
      } else {
        queueEmptied = !this.channels.hasPending(now);
      }
    }
    let type: PacketType = PacketType.Data;
    if (framesLength === 0) {
      if (this.delivery.inFlight >= RING - 1) return 0; // wait for acks (the RTO timer is armed)
      // Nothing to carry: a pure ack if one is owed and its delay is up, else a keepalive if
      // we have been quiet, else nothing.
      if (this.ackOwed && this.num[Timer.AckDelay] <= now) {
        type = PacketType.Data;
        if (this.lateArrivals !== undefined && this.lateArrivals.pending) {
          // An ack with late arrivals' acks: the delay goes in a frame beside them (§2's
          // two-byte form is for a packet with no frame). Not in flight here (seal).
          framesLength = this.lateArrivals.write(bytes, framesAt, room, this.newestReceivedSeq);
          framesLength += this.writeAckDelay(now, bytes, framesAt + framesLength, room - framesLength);
        } else framesLength = this.writeAckDelayTrailer(now, bytes, framesAt);
      } else if (this.num[Timer.Keepalive] <= now) type = PacketType.Keepalive;
      else return 0;
    }
    // Path MTU probes (rare: a few per search) never go ahead of what is due: one due now
    // follows this datagram. Not in its place either: a probe may be too big to arrive, and
    // an ack or keepalive riding on it would be lost with it.
    if (now >= this.probeCheckAt && windowRoom && this.ackSampled && this.cc.slowPath?.() !== true) {
      const pathMtu = this.pathMtu as PathMtu;
      this.probeQueued = pathMtu.probeDue(now);
      if (this.probeQueued === 0) this.probeCheckAt = pathMtu.nextCheckAt();
    }
    const length = this.seal(now, offset, framesLength, type, contents);
    if (requestWritten) this.ackFrequency.onSent(this.delivery.newestDispatched);
    // This packet emptied the send queue: the application limits the flow right now. A light
    // flow does this with every packet, so the default controller keeps its pacing floor and
    // asks the peer for no other ack threshold (DefaultController.networkLimited()).
    if (queueEmptied && this.cc.onSendQueueEmpty !== undefined) this.cc.onSendQueueEmpty(now);
    return length;
  }

  /**
   * Acks are owed for many packets at once (a burst bigger than the 33-packet ack window is
   * arriving): send a pure ack now, between engine sub-batches, so no received packet falls
   * out of the window unacknowledged (the sender would declare it lost). Returns the length.
   */
  writeImmediateAck(now: number, offset: number): number {
    if (this.state !== ConnectionState.Connected || this.delivery.inFlight >= RING - 1) return 0;
    const length = this.seal(now, offset, 0, PacketType.Data, undefined);
    this.bytesSent += length + this.carrierOverhead;
    return length;
  }

  /** Eliciting packets received since our last packet (which carried acks for them). */
  get unackedReceived(): number {
    return this.receivedSinceAck;
  }

  /**
   * A path MTU probe of `size` bytes: one padding frame (PROTOCOL §3), ack-eliciting, carrying
   * no data. Its outcome goes to the PathMtu, never to the congestion controller: a probe too
   * big for the path is not congestion (RFC 8899 §4.4).
   */
  private writeProbe(now: number, offset: number, size: number): number {
    const bytes = this.host.engine.bytes;
    const at = offset + DATA_HEADER_BYTES;
    const framesLength = size - DATA_OVERHEAD_BYTES;
    encodePadding(bytes, at, framesLength);
    const length = this.seal(now, offset, framesLength, PacketType.Data, PROBE);
    (this.pathMtu as PathMtu).onProbeSent(this.delivery.newestDispatched, size);
    this.probeCheckAt = Infinity; // until the probe is acknowledged or lost
    return length;
  }

  /**
   * The due PARITY datagram (src/fec): a DATA packet whose one frame is the parity, ack-eliciting
   * and in the congestion window like data (its loss is a loss; nothing in it is resent). 0 if
   * the window or the pacer holds it back.
   */
  private writeParity(now: number, offset: number): number {
    const sender = this.paritySender as ParitySender;
    if (!this.cc.canSend(this.ccInFlightBytes, this.datagramMtu)) return 0;
    const at = this.cc.nextSendTime(now);
    if (at > now) {
      this.num[Timer.Pacing] = at;
      return 0;
    }
    const bytes = this.host.engine.bytes;
    const framesAt = offset + DATA_HEADER_BYTES;
    const n = sender.writeMessage(bytes, framesAt + 6, this.datagramMtu - DATA_OVERHEAD_BYTES - 6);
    if (n === 0) return 0;
    writeSystemFrameHeader(bytes, framesAt, n);
    const length = this.seal(now, offset, 6 + n, PacketType.Data, undefined);
    sender.parityBytes += length;
    sender.onParitySent(this.delivery.newestDispatched, this.recovery.lossRate);
    return length;
  }

  /** After PathMtu changed its size or its next probe time. */
  private pathMtuChanged(): void {
    const pathMtu = this.pathMtu as PathMtu;
    this.datagramMtu = pathMtu.current;
    this.largeFrom = pathMtu.largeFrom;
    // Below the base, messages are cut for the size in use (ChannelSet.fitTo).
    this.channels.fitTo(pathMtu.current, pathMtu.shrinkConfirmed);
    // (A new path starts a new PathMtu, counting from 0.)
    if (pathMtu.blackHoles > this.blackHolesSeen) {
      this.blackHolesReported += pathMtu.blackHoles - this.blackHolesSeen;
      this.host.emit({ type: "pathMtu", connection: this.id, pathMtu: pathMtu.current, belowBase: pathMtu.belowBase });
    }
    this.blackHolesSeen = pathMtu.blackHoles;
    if (this.trace !== undefined) this.trace.mtu(NaN, pathMtu.current);
    this.probeCheckAt = pathMtu.nextCheckAt();
    this.mtuAwaitsAck = pathMtu.awaitingAck;
    this.probeQueued = 0; // chosen before this change: choose again
  }

  private seal(now: number, offset: number, framesLength: number, type: PacketType, contents: PacketContents | undefined): number {
    const engine = this.host.engine;
    const length = DATA_OVERHEAD_BYTES + framesLength;
    // A pure ack's ack delay is no frame: such a packet stays non-eliciting. So does an ack
    // whose frames are only acks (LATE_ACK, ACK_DELAY: no contents): the peer acks it, but
    // nothing in it needs to arrive, so it is neither in flight nor resent.
    const eliciting = framesLength > ACK_DELAY_TRAILER_BYTES && contents !== PROBE && contents !== undefined;
    // The controller counts what the path carries: the datagram and what its carrier adds.
    const pathBytes = length + this.carrierOverhead;
    const record = eliciting ? this.cc.onSent(now, pathBytes, this.ccInFlightBytes, idleSentRecords.pop()) : undefined;
    // The ring overflows here only where writeData's window cap lets it: the packet RING
    // sequences back, if still in flight, is then reported lost (onDropped).
    this.delivery.makeRoom(now);
    const sequence = engine.sealData(this.slot, offset, framesLength, type, now, record !== undefined);
    this.recovery.onSent(now, sequence, contents ?? NO_FRAMES, record);
    if (this.paritySender !== undefined && contents !== undefined && contents !== PROBE) this.protect(offset, framesLength, length, sequence);
    if (this.trace !== undefined) this.trace.packetSent(now, sequence, length, eliciting);
    if (eliciting) {
      this.ccInFlightBytes += pathBytes;
    }
    this.ackOwed = false;
    this.newestReceivedUnreported = false;
    this.receivedSinceAck = 0;
    this.num[Timer.AckDelay] = Infinity;
    if (this.state === ConnectionState.Connected) this.num[Timer.Keepalive] = now + this.host.config.keepaliveMs;
    return length;
  }

  /** A sealed DATA datagram joins a parity group if it carries a frame of an fec channel. */
  private protect(offset: number, framesLength: number, length: number, sequence: number): void {
    const sender = this.paritySender as ParitySender;
    const bytes = this.host.engine.bytes;
    const framesAt = offset + DATA_HEADER_BYTES;
    if (carriesChannel(bytes, framesAt, framesAt + framesLength, sender.channels)) sender.onSealed(bytes, offset, length, sequence, this.recovery.lossRate, this.datagramMtu);
  }

  /** Clock frames on the system channel (PROTOCOL §3): requests (client), replies (server). */
  private writeSystemFrames(now: number, bytes: Uint8Array, at: number, room: number): number {
    let written = 0;
    if (this.clockEchoDue) {
      const echoes = this.clockEchoes;
      while (echoes.length > 0 && room - written >= CLOCK_REPLY_FRAME) {
        written += encodeClockReply(bytes, at + written, echoes.shift() as number, now);
      }
      this.clockEchoDue = echoes.length > 0;
    }
    if (this.clockRequestDue && room - written >= CLOCK_REQUEST_FRAME) {
      const sentAt = Math.floor(now) >>> 0;
      written += encodeClockRequest(bytes, at + written, sentAt);
      this.clockRequestDue = false;
      const out = (this.clockRequestsOut ??= []);
      // 64 cover a reply 6.4 s late at the fast start's 10/s (640 ms at the fastest clockSyncMs,
      // 10 ms); older requests are let go.
      if (out.length >= CLOCK_REQUESTS_TRACKED) out.shift();
      out.push(sentAt);
    }
    return written;
  }

  /** An ACK_FREQUENCY request (PROTOCOL §3, ack-frequency.ts), room permitting. */
  private writeAckFrequency(bytes: Uint8Array, at: number, room: number): number {
    if (room < ACK_FREQUENCY_FRAME) return 0;
    const af = this.ackFrequency;
    return encodeAckFrequency(bytes, at, af.requestSequence, af.requestThreshold);
  }

  /** RECEIVE_TIME (PROTOCOL §3): when the newest packet received arrived, in microseconds. */
  private writeReceiveTime(bytes: Uint8Array, at: number, room: number): number {
    if (room < RECEIVE_TIME_FRAME) return 0;
    this.receiveTimeUnreported = false;
    return encodeReceiveTime(bytes, at, this.newestReceivedSeq, this.num[Num.NewestReceivedAt]);
  }

  /**
   * ACK_DELAY (PROTOCOL §3): how long the packet this one acknowledges as newest waited here,
   * when it was ack-eliciting, no packet of ours has acknowledged it yet, and the wait reached
   * ACK_DELAY_MIN_MS. Only added to a packet that carries frames anyway: a pure ack is sent
   * after at most ackDelayMs (which the peer's RTO allows for) and must stay non-eliciting.
   */
  private writeAckDelay(now: number, bytes: Uint8Array, at: number, room: number): number {
    if (!this.newestReceivedUnreported || room < ACK_DELAY_FRAME) return 0;
    const waitedMs = now - this.num[Num.NewestReceivedAt];
    if (waitedMs < ACK_DELAY_MIN_MS) return 0;
    return encodeAckDelay(bytes, at, this.newestReceivedSeq, waitedMs);
  }

  /**
   * A pure ack's ack delay (PROTOCOL §2, version 6): two bytes where frames would be, the wait
   * of the packet its header's `ack` names, under the same conditions as an ACK_DELAY frame.
   * Without it a one-way stream's sender, acked only by pure acks, had the ack delay in every RTT
   * sample. Returns the bytes written (0 or ACK_DELAY_TRAILER_BYTES).
   */
  private writeAckDelayTrailer(now: number, bytes: Uint8Array, at: number): number {
    if (!this.newestReceivedUnreported) return 0;
    const waitedMs = now - this.num[Num.NewestReceivedAt];
    if (waitedMs < ACK_DELAY_MIN_MS) return 0;
    return writeAckDelayTrailer(bytes, at, waitedMs);
  }

  /** True if a datagram could be due right now (used to keep the ready queue short). */
  wantsToSend(now: number): boolean {
    switch (this.state) {
      case ConnectionState.Connecting:
        return this.attempt !== undefined && this.attempt.nextSendAt <= now;
      case ConnectionState.Disconnecting:
        return this.acceptDue || this.num[Timer.DisconnectResend] <= now;
      case ConnectionState.Connected:
        return (
          this.acceptDue ||
          (this.lingering && this.lingerDone(now)) ||
          (this.rebind !== undefined && (this.rebind.responseDue || this.rebind.nextSendAt <= now)) ||
          this.clockRequestDue ||
          this.clockEchoDue ||
          this.ackFrequency.due ||
          (this.ackOwed && this.num[Timer.AckDelay] <= now) ||
          this.probeQueued > 0 ||
          (this.paritySender !== undefined && this.paritySender.due) ||
          this.num[Timer.Keepalive] <= now ||
          this.channels.hasPending(now)
        );
      default:
        return false;
    }
  }

  // ---- address migration (rebind.ts, PROTOCOL §5) ---------------------------------------------

  /**
   * Client: the server answered NO_CONNECTION to a packet of ours, so it no longer knows the
   * address we send from. Ask it to move the connection here. Data keeps flowing meanwhile
   * (what the server drops is declared lost and resent once the move is done).
   */
  startRebind(now: number): void {
    if (this.rebind !== undefined) return;
    this.rebind = new ClientRebind(now);
    this.setTimer(Timer.Rebind, now);
    if (this.trace !== undefined) this.trace.rebind(now, "started");
  }

  /**
   * Client: a NO_CONNECTION answering packet `sequence` (verified as ours) came after our last
   * move completed, yet the packet was sent before it: the answer is about the old address.
   * Judged by the packet's place in the count of packets sent, never by 16-bit sequence.
   */
  answersBeforeLastMove(sequence: number): boolean {
    if (this.rebindDoneAt < 0) return false;
    // The echoed packet is among the last PACKET_WINDOW sent (its CRC was found): its index in
    // the count of packets dispatched follows from its distance to the newest.
    const d = this.delivery;
    const index = d.dispatched - 1 - ((d.newestDispatched - sequence) & 0xffff);
    return index < this.rebindDoneAt;
  }

  /** Client: is `counter` one of the requests of the move in progress? */
  asksRebindChallenge(counter: number): boolean {
    const rebind = this.rebind;
    // This move's requests carried the connection's counters counter - attempts + 1 .. counter.
    return rebind !== undefined && counter > rebind.counter - Math.min(rebind.attempts, REBIND_ATTEMPTS) && counter <= rebind.counter;
  }

  /** Client: the server's challenge for our request; the response carries its token back. */
  onRebindChallenge(tokenLow: number, tokenHigh: number): boolean {
    const rebind = this.rebind;
    if (rebind === undefined) return false;
    rebind.responseDue = true;
    rebind.tokenLow = tokenLow;
    rebind.tokenHigh = tokenHigh;
    return true;
  }

  /** Client: a REBIND_REQUEST or REBIND_RESPONSE if one is due (0 if not). */
  private writeRebind(now: number, offset: number): number {
    const rebind = this.rebind as ClientRebind;
    const engine = this.host.engine;
    const c = this.host.config;
    if (rebind.responseDue) {
      const length = engine.sealControl(
        offset,
        encodeRebind(engine.bytes, offset, PacketType.RebindResponse, c.protocolId, this.salt, this.sessionId, rebind.tokenLow, rebind.tokenHigh),
      );
      // Done, as far as we can tell: if the response is lost, our next data gets another
      // NO_CONNECTION and the move starts over.
      this.rebind = undefined;
      this.rebindDoneAt = this.delivery.dispatched;
      if (this.trace !== undefined) this.trace.rebind(NaN, "answered");
      this.restartPathMtu();
      this.setTimer(Timer.Rebind, Infinity);
      return length;
    }
    if (rebind.nextSendAt > now) return 0;
    // Past REBIND_ATTEMPTS the newest request is repeated (same counter: still fresh at the
    // server, and never more than REBIND_COUNTER_LEAD ahead of what it saw).
    if (!rebind.exhausted) rebind.counter = this.rebindCounters.next();
    const length = engine.sealControl(
      offset,
      encodeRebind(engine.bytes, offset, PacketType.RebindRequest, c.protocolId, this.salt, this.sessionId, rebind.counter, 0),
    );
    rebind.requestCrc = readCrc(engine.bytes, offset + length - CRC_BYTES);
    // Not the RTO: the data lost while the address was unknown has backed it off. Twice the
    // path's RTT, 100 ms to 1 s, doubling per request up to 1 s.
    const rtt = this.rtt.sampleCount > 0 ? this.rtt.smoothedMs : c.handshakeResendMs;
    rebind.onRequestSent(now, Math.min(Math.max(2 * rtt, c.handshakeResendMs), c.handshakeResendMaxMs), c.handshakeResendMaxMs);
    this.setTimer(Timer.Rebind, rebind.nextSendAt);
    return length;
  }

  /**
   * Server: the client proved it now sends from `to`. The connection's packets go there from
   * now on; an ack leaves at once, so the client hears from us within one trip. Path MTU
   * discovery starts over on both ends (a new path may carry less); the congestion state is
   * kept (a NAT rebinding keeps the path; a network switch corrects it through loss and RTT),
   * but the reported estimate forgets the old path's measured capacity (onPathChange).
   */
  moveTo(now: number, to: Address): void {
    if (this.trace !== undefined) this.trace.migration(now, this.address, to);
    this.address = to;
    // Closing (moved by a repeated RESPONSE, acceptedElsewhere): the goodbye goes to the new
    // address right after the ACCEPT, not at the next resend. Closing sends no acks.
    if (this.state === ConnectionState.Disconnecting) return this.setTimer(Timer.DisconnectResend, now);
    this.ackOwed = true;
    this.num[Timer.AckDelay] = now;
    this.restartPathMtu();
    this.cc.onPathChange?.(now);
  }

  /**
   * A new path (after a move) may carry less than the old: search again from the base (RFC
   * 9000 §9 validates a new path's PMTU too). The black-hole detector would also bring the size
   * down (in migration.test.ts the data lost during the move itself trips it, with the same
   * result), but a move that lost nothing would first lose full datagrams to find out.
   */
  private restartPathMtu(): void {
    if (this.pathMtu === undefined) return;
    // A probe of the old path still in flight is unknown to the new search and ignored.
    this.pathMtu = new PathMtu(this.pathMtu.base, this.pathMtu.max);
    this.pathMtuChanged();
  }

  // ---- close ----------------------------------------------------------------------------------

  /**
   * Close with linger: the connection stays connected (acks, resends, the peer's messages) but
   * takes no more sends, until everything already sent has been delivered or given up, and only
   * then says goodbye (close()). Both halves share the close timeout: at most half of it
   * lingering, the rest for the DISCONNECT. Nothing to deliver: close() at once. Again while
   * lingering: nothing changes.
   */
  closeAfterDelivery(now: number, reason: DisconnectReason, userData: Uint8Array): void {
    if (this.lingering) return; // already lingering: a close without linger ends it (close())
    if (this.state !== ConnectionState.Connected || this.delivered(now)) return this.close(now, reason, userData);
    this.lingering = true;
    this.closeReason = reason;
    this.closeUserData = userData;
    this.setTimer(Timer.Linger, now + this.host.config.closeTimeoutMs / 2);
  }

  /** True once nothing sent is waiting to leave or for its fate: no queued, delayed or resent
   *  message, and no packet carrying a message in flight. (Not "no ack-eliciting packet": a
   *  client's clock-sync requests leave every 100 ms at first, so on a path over 100 ms one is
   *  always in flight, and the linger would run to its timer.) */
  private delivered(now: number): boolean {
    return !this.channels.hasPending(now) && this.channels.nextDelayedDue() === Infinity && !this.delivery.someInFlight(carriesMessages);
  }

  /** Lingering, and done (delivered, or out of time): the DISCONNECT goes now. */
  private lingerDone(now: number): boolean {
    return this.lingering && (this.num[Timer.Linger] <= now || this.delivered(now));
  }

  /** Graceful close: DISCONNECT is resent until acknowledged or the close timeout. */
  close(now: number, reason: DisconnectReason, userData: Uint8Array): void {
    if (this.state === ConnectionState.Closed || this.state === ConnectionState.Disconnecting) return;
    if (this.state === ConnectionState.Connecting) {
      this.finish("aborted");
      return;
    }
    // A close after a close with linger: at once, but the timeout still counts from the first.
    const since = this.lingering ? this.num[Timer.Linger] - this.host.config.closeTimeoutMs / 2 : now;
    this.lingering = false;
    this.setTimer(Timer.Linger, Infinity);
    this.state = ConnectionState.Disconnecting;
    this.closeReason = reason;
    this.closeUserData = userData;
    this.disconnectCode = reasonCode(reason);
    this.disconnectUserData = userData;
    this.clearTimers();
    // No more acks from here (onPacketReceived): nothing owed may re-arm the ack timer.
    this.ackOwed = false;
    this.receivedSinceAck = 0;
    this.setTimer(Timer.DisconnectResend, now);
    this.setTimer(Timer.CloseTimeout, since + this.host.config.closeTimeoutMs);
    this.disconnectAttempts = 0;
  }

  /**
   * Next DISCONNECT resend: max(100 ms, RTO) growing 1.25x per attempt, times a jitter in
   * [0.75, 1.25) derived from the session id and attempt. Many peers closing at the same moment
   * (a server shutting down, a test ending) would otherwise resend in lockstep and overflow a
   * small receive buffer (Bun's holds ~92 datagrams) on every round.
   */
  private disconnectResendInterval(): number {
    const attempt = this.disconnectAttempts++;
    const base = Math.max(100, this.rtt.rtoMs()) * Math.pow(1.25, Math.min(attempt, 10));
    const h = Math.imul((this.sessionId ^ (attempt * 0x9e3779b9)) >>> 0, 0x85ebca6b) >>> 0;
    return base * (0.75 + (h >>> 8) / (1 << 25));
  }

  /** The peer's DISCONNECT_ACK arrived. */
  onDisconnectAck(): void {
    if (this.state === ConnectionState.Disconnecting) this.finish(this.closeReason ?? "normal");
  }

  /** Move to Closed now, with the reason the application will see. */
  finish(reason: DisconnectReason, deny?: DenyReason, userData?: Uint8Array): void {
    if (this.state === ConnectionState.Closed) return;
    this.state = ConnectionState.Closed;
    this.closeReason = reason;
    this.closeDeny = deny;
    if (userData !== undefined) this.closeUserData = userData;
    this.clearTimers();
    if (this.trace !== undefined) this.trace.closed(NaN, typeof reason === "object" ? `app ${reason.app}` : reason);
  }

  /** Release everything (called once by the endpoint after finish()). */
  dispose(now: number): void {
    this.recovery.dropAll(now);
    this.channels.failAll(now);
    this.channels.releaseBudget();
    this.drainToEvents();
  }

  // ---- trace ----------------------------------------------------------------------------------

  private startTrace(factory: TraceFactory, now: number): void {
    const vantage = this.role === Role.Client ? "client" : "server";
    let sink;
    try {
      sink = factory({ connection: this.id, vantage, now, peer: this.address });
    } catch {
      return; // an application's factory that throws leaves the connection untraced
    }
    if (sink === undefined || sink === null || typeof sink.write !== "function") return;
    this.trace = new QlogTracer(sink, { vantage, referenceTime: now, title: `ackwire ${vantage} connection ${this.id}`, peer: this.address });
    this.recovery.trace = this.trace;
    this.trace.mtu(now, this.datagramMtu);
  }

  /** RTT and congestion figures after an RTT sample (the tracer writes only changes). */
  private traceMetrics(now: number): void {
    const rtt = this.rtt;
    (this.trace as QlogTracer).metrics(now, {
      minRttMs: rtt.minMs,
      smoothedRttMs: rtt.smoothedMs,
      latestRttMs: rtt.latestMs,
      rttVarMs: rtt.rttVarMs,
      congestionWindowBytes: this.cc.windowBytes(),
      bytesInFlight: this.ccInFlightBytes,
      pacingRateBps: this.cc.pacingRateBytesPerSec() * 8,
    });
  }

  // ---- stats ----------------------------------------------------------------------------------

  stats(now: number): ConnectionStats {
    const ch = this.channels.stats();
    const d = this.delivery;
    const clock = this.clock;
    const s: ConnectionStats = {
      rttMs: this.rtt.smoothedMs,
      rttEwmaMs: this.rtt.ewma10Ms,
      rttVarMs: this.rtt.rttVarMs,
      minRttMs: this.rtt.minMs,
      jitterMs: this.rtt.jitterMs,
      lossRate: this.recovery.lossRate,
      linkPingMs: this.ping.linkPingMs(),
      transmissionPingMs: this.ping.transmissionPingMs(),
      bandwidthEstimateBps: this.cc.bandwidthEstimateBps(),
      pathMtu: this.datagramMtu,
      pathMtuBlackHoles: this.blackHolesReported,
      packets: {
        dispatched: d.dispatched,
        delivered: d.delivered,
        dropped: d.dropped,
        inFlight: d.inFlight,
        received: this.received,
      },
      bytesSent: this.bytesSent,
      bytesReceived: this.bytesReceived,
      resends: ch.resends,
      duplicates: this.duplicates + ch.duplicates,
      stale: this.stale + ch.stale,
      invalid: this.invalid + ch.invalid,
      crcFailures: this.crcFailures,
      messagesSent: ch.messagesSent,
      messagesReceived: ch.messagesReceived,
      copiesSent: ch.copiesSent,
      copyBytes: ch.copyBytes,
      copiesDropped: ch.copiesDropped,
      queuedBytes: ch.queuedBytes,
      messagesExpired: ch.expired,
      deadlinesMissed: ch.deadlinesMissed,
    };
    const ps = this.paritySender;
    const pr = this.parityReceiver;
    if (ps !== undefined || pr !== undefined) {
      s.fec = {
        paritySent: ps?.paritySent ?? 0,
        parityBytes: ps?.parityBytes ?? 0,
        protectedSent: ps?.members ?? 0,
        rebuilt: pr?.rebuiltCount ?? 0,
        unrecoverable: pr?.unrecoverable ?? 0,
        parityUnneeded: (pr?.complete ?? 0) + (pr?.tooOld ?? 0),
        parityInvalid: pr?.invalid ?? 0,
      };
    }
    if (clock !== undefined && clock.synchronized) {
      s.clockOffsetMs = clock.offsetMs(now);
      s.clockErrorMs = clock.errorBoundMs(now);
    }
    return s;
  }

  /** Client: the server clock estimate, if synchronized. */
  serverTime(now: number): number | undefined {
    return this.clock !== undefined && this.clock.synchronized ? this.clock.serverTime(now) : undefined;
  }
}

/**
 * The contents of every packet without channel frames (pure acks, keepalives): shared and never
 * written, so such a packet takes no record from the pool nor hands one back when it settles.
 */
const NO_FRAMES = new PacketContents();
/** Whether a packet's contents hold any channel frame (for Connection.delivered). */
const carriesMessages = (contents: PacketContents): boolean => contents.count > 0;
/** The contents of every path MTU probe (padding only): shared, like NO_FRAMES. */
const PROBE = new PacketContents();

if ((Timer.ConnectTimeout as number) !== OWNER_BASE || (Num.Count as number) > OWNER_BASE + OWNER_SLOTS) {
  throw new Error("congestion/state-layout.ts: the owner region does not match Num");
}

/** The initial `num` table: timers unarmed, no send cadence, no bandwidth estimate seen. */
function newNumTable(): number[] {
  const t = newStateArray();
  t.fill(Infinity, Timer.ConnectTimeout, Timer.End);
  t[Num.LastAppSendAt] = -Infinity;
  t[Num.BandwidthSeenBps] = -1;
  return t;
}

/** The controller config for one connection: the endpoint's options, plus its mtu and a seed. */
/**
 * Throws what opening a connection with `config` would throw (ChannelConfigError,
 * CongestionConfigError): a server checks at construction, not at its first client's handshake,
 * where the error would come out of the receive path. Returns each channel's largest message
 * (the same for every connection of the endpoint).
 */
export function checkConnectionConfig(config: ResolvedConfig): number[] {
  const channels = new ChannelSet({ channels: config.channels, mtu: config.mtu, maxReceiveBufferBytes: config.maxReceiveBufferBytes });
  createController(controllerConfig(config, 0));
  return channels.maxMessageBytes();
}

function controllerConfig(config: ResolvedConfig, seed: number, carrierOverhead = 0): CongestionConfig {
  const o = config.congestionOptions;
  return {
    algorithm: config.congestion as CongestionAlgorithm,
    default: { mtu: config.mtu + carrierOverhead, seed, ...o.default },
    binary: o.binary,
    fixed: o.fixed,
  };
}
