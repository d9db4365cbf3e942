/**
 * The session layer's public types: what an application (or a runtime adapter) configures,
 * commands and observes. The sans-IO `Endpoint` (src/session/endpoint.ts) implements
 * `SansIoNode<EndpointEvent>` from ./sans-io.ts plus the commands below.
 */
import type { ClientIdentity } from "../secure/server-security.js";
import type { TraceFactory } from "../trace/qlog.js";
import type { DeliveryKind } from "../engine/abi.js";
import type { CongestionConfig } from "../congestion/controller.js";
import type { Address } from "./sans-io.js";

export type { Address };

/** Delivery modes by name, as applications write them. */
export type DeliveryMode =
  | "unreliable"
  | "unreliable-sequenced"
  | "reliable-unordered"
  | "reliable-ordered"
  | "reliable-sequenced"
  | "latest-state";

export interface ChannelConfig {
  mode: DeliveryMode;
  /**
   * A name to send by: `send(bytes, { channel: "chat" })`. Names are local (not on the wire,
   * not in the channel hash): 1..64 characters, unique within the list.
   */
  name?: string;
  /** Largest message accepted by send() on this channel (bytes). Default 1 MiB for reliable
   *  modes, 64 KiB for unreliable ones. */
  maxMessageBytes?: number;
  /** Higher goes first when a datagram has room for only some channels. Default 0. */
  priority?: number;
  /** latest-state: most keys tracked per direction (same value on both peers). Default 4096. */
  maxKeys?: number;
  /** unreliable / unreliable-sequenced: every datagram that carries a new message of this
   *  channel also carries copies of up to this many previous messages (one-frame messages
   *  younger than 100 ms, if they fit), so a single lost datagram costs nothing.
   *  0..3, default 0 (off). Same value on both peers (not covered by the channel hash). */
  redundancy?: number;
  /** Reliable modes: room left in a datagram after all due data carries copies of this
   *  channel's most recently sent, still unacknowledged one-frame messages, each
   *  copied at most this many times and at most this many per datagram, while younger than
   *  100 ms; an acknowledged copy means the lost original is not resent. 0..3, default 0.
   *  Same value on both peers. */
  piggyback?: number;
  /**
   * Forward error correction (docs/CHANNELS.md, "Parity"): datagrams that carry this channel's
   * frames are grouped, and each group is followed by an XOR parity datagram from which the
   * receiver rebuilds one lost datagram of the group with no round trip. `true`: the group
   * size follows the measured loss (no parity while there is none); 1..16: that many
   * datagrams per parity. Default off. Configure both peers alike: the sender's setting decides
   * what is sent, and a receiver whose own channels use fec can rebuild from the first group on.
   */
  fec?: boolean | number;
  /**
   * unreliable / unreliable-sequenced: a message still unsent this long after send() is dropped
   * (counted in `stats().messagesExpired`; a receipt says lost). Late unreliable data is worse
   * than none: on a link slower than the stream, each message would otherwise wait longer than
   * the one before, seconds after a while. Default 250 ms; Infinity keeps every message.
   */
  maxQueueMs?: number;
}

/** Eight channels, one per common use, unless the application gives its own list. */
export const DEFAULT_CHANNELS: readonly ChannelConfig[] = [
  { mode: "reliable-ordered" }, // 0: chat, RPC, commands
  { mode: "unreliable-sequenced" }, // 1: movement / input stream
  { mode: "unreliable" }, // 2: fire-and-forget effects
  { mode: "reliable-unordered" }, // 3: events whose order does not matter
  { mode: "reliable-sequenced" }, // 4: newest-wins reliable (e.g. scoreboard)
  { mode: "latest-state" }, // 5: keyed entity state
  { mode: "reliable-ordered" }, // 6: bulk transfers (a second ordered stream)
  { mode: "unreliable" }, // 7: voice or other app use
];

/** What a carrier other than UDP does to each datagram (EndpointConfig.carrier). */
export interface DatagramCarrier {
  /**
   * Bytes it adds to each datagram on the way (inside the UDP payload). The congestion
   * controller, the bandwidth estimate and a connection's bytesSent/bytesReceived count them
   * with the datagram, so that what a connection sends is what the path carries.
   */
  readonly overheadBytes: number;
  /**
   * The largest datagram it carries as one unit. Path MTU discovery is off for such a peer when
   * this is not above `mtu`: the carrier, not the path, sets the size.
   */
  readonly maxDatagramBytes: number;
}

export interface EndpointConfig {
  protocolId: number;
  /** The application's own version; a mismatch is denied with VersionMismatch. Default 0. */
  appVersion?: number;
  channels?: readonly ChannelConfig[];
  /**
   * The MTU every path is assumed to carry: the largest UDP payload sent until path MTU
   * discovery finds more, and the size fragments are cut for. Default 1200.
   */
  mtu?: number;
  /**
   * Path MTU discovery (RFC 8899 style, padding-only probes) raises the datagram size up to
   * this many bytes where the path carries them, and falls back to `mtu` if large packets stop
   * getting through. Default 1452 (or `mtu` if larger); set it to `mtu` to turn discovery off.
   * At most 1500 (what a receiver accepts).
   */
  maxMtu?: number;
  /**
   * The carrier under the datagrams to `address`, where it is not plain UDP (a WebRTC data
   * channel): undefined for UDP. Asked once per connection.
   */
  carrier?: (address: Address) => DatagramCarrier | undefined;
  /** Server side: accept incoming connections. */
  server?: boolean;
  maxConnections?: number; // default 64
  maxPendingHandshakes?: number; // default 256 (client attempts on this endpoint)
  /** Server: accept decisions an async accept hook may have in progress at once; a handshake
   *  past it is denied "server-full" (counters.acceptsOverLimit). Default 256. */
  maxPendingAccepts?: number;
  /** Server: how long an async accept hook's promise may take; past it the client is denied
   *  "server-full" (counters.acceptTimeouts) and the late answer ignored. Default 3000 ms
   *  (below a client's default 5000 ms connect timeout, so the client hears the deny). */
  acceptTimeoutMs?: number;
  /** Called (outside any drive call) when an async accept hook's promise settled: drive the
   *  endpoint soon (its pollTimeout is then due). The API's driver requests a service. */
  onAcceptSettled?: () => void;
  /**
   * Handshake packets accepted per source host per second (a host: its IPv4 address or IPv6
   * /64, whatever its ports; burst the same number, at least 3). Default 10.
   */
  handshakeRatePerAddress?: number;
  /**
   * Server: most connections from one source host (as for handshakeRatePerAddress) at once; a
   * handshake beyond them is denied "server-full" (counted `hostFull`). Default no limit beyond
   * maxConnections: players behind one NAT share its address.
   */
  maxConnectionsPerHost?: number;
  /** No packet for this long -> timeout. Default 10_000 ms. */
  timeoutMs?: number;
  /** No packet for this long -> "unresponsive" event. Default timeoutMs / 2. */
  unresponsiveMs?: number;
  /** Send a keepalive after this long without sending. Default timeoutMs / 4. */
  keepaliveMs?: number;
  /** Client: CLOCK_REQUEST period once the clock has converged. Default 1000 ms. For the first
   *  5 s after connecting requests go out every 100 ms (or every clockSyncMs if smaller): the
   *  estimate's error is set by the smallest jitter seen each way, which needs many samples. */
  clockSyncMs?: number;
  /** How long a graceful close keeps resending DISCONNECT while waiting for DISCONNECT_ACK.
   *  Default 3000 ms (ENet waits about as long): enough for many peers closing at once to get
   *  through a small receive buffer. Resends back off by 1.25x with jitter. */
  closeTimeoutMs?: number;
  /** Longest a pure ack waits for data to piggyback on. Default 5 ms. */
  ackDelayMs?: number;
  /** Longest an owed ack may wait for this connection's own next message when the application
   *  sends at a steady cadence (predicted from the interval between its send() calls), so the
   *  ack rides on that data instead of leaving as a pure ack. 0 = never wait beyond ackDelayMs.
   *  Default 15 ms. */
  ackPiggybackMs?: number;
  /** Per-connection bound on held + partially reassembled received bytes. Default 8 MiB. */
  maxReceiveBufferBytes?: number;
  /**
   * Bound on what all connections hold together (as maxReceiveBufferBytes counts). Past it, a
   * connection evicts its oldest unreliable partial messages first, and then the connection
   * holding the most is ended ("receive-buffer-exceeded", counted `receiveBudgetCloses`).
   * Default 256 MiB.
   */
  maxTotalReceiveBufferBytes?: number;
  /**
   * Address migration (PROTOCOL §5). A client whose address changed under it (NAT rebinding,
   * a network switch) learns it from the server's NO_CONNECTION and moves its connection to
   * the new address instead of closing; a server lets its clients do so (the "migrate" event).
   * Default true. False: the client closes with "no-connection", the server refuses moves.
   */
  migration?: boolean;
  /**
   * Connection traces (qlog JSON-SEQ, src/trace/qlog.ts): called once per new connection; a
   * sink it returns receives that connection's trace as text, undefined leaves it untraced.
   * `qlogFiles(dir)` from ackwire/node writes one .sqlog file per connection. Default none.
   */
  trace?: TraceFactory;
  /** Congestion controller: "default" | "binary" | "fixed" | "none". */
  congestion?: string;
  /** Thresholds for the chosen controller (src/congestion: `default`, `binary`, `fixed`
   *  sections). The session fills in `mtu` and a per-connection `seed` unless given here. */
  congestionOptions?: Omit<CongestionConfig, "algorithm">;
  /**
   * Accept hook (server): sees the client's user data; return true, false or a deny, or a
   * promise of one (the handshake waits for it, within maxPendingAccepts and acceptTimeoutMs).
   */
  accept?: (request: ConnectRequestInfo) => AcceptDecision | PromiseLike<AcceptDecision>;
  /** Seed for the randomness that needs no secrecy (initial sequences, the congestion
   *  controllers' phases). Tests fix it; adapters pass a crypto-random one. */
  seed?: number;
  /**
   * At least 16 bytes of secret entropy: the key of everything an attacker must not predict
   * (the cookie secret, client salts, session ids, migration tokens), each drawn as SipHash
   * of a counter under it. Adapters pass 16 crypto-random bytes, and an Endpoint given
   * neither this nor `seed` draws them itself. With `seed` alone the key is derived from the
   * seed: repeatable, for tests and benchmarks, and no secret (a 32-bit seed can be guessed).
   */
  secret?: Uint8Array;
  /** Which engine: "wasm" (default) or "ts" (reference). */
  engine?: "wasm" | "ts";
  /** Advanced: engine arena sizes (datagrams per receive batch, record capacity, send arena
   *  datagrams). Defaults suit a server; many small client endpoints in one process (tests,
   *  benchmarks) can shrink them. */
  engineLimits?: { batchDatagrams?: number; maxRecords?: number; sendDatagrams?: number };
}

export interface ConnectRequestInfo {
  address: Address;
  userData: Uint8Array;
  appVersion: number;
  /**
   * Who a layer in front of the Endpoint authenticated this handshake's sender as (a secure
   * server: the connect token's client), carried with the datagram itself: present whatever
   * the layer learned about addresses since.
   */
  identity?: ClientIdentity;
}

export type AcceptDecision =
  | boolean
  | { accept: true; userData?: Uint8Array }
  | { accept: false; userData?: Uint8Array };

/** A connection as the application sees it: a small integer handle, stable until it closes. */
export type ConnectionId = number;

export type DisconnectReason =
  | "normal"
  | "timeout"
  | "protocol-violation"
  | "receive-buffer-exceeded"
  | "server-shutdown"
  | "kicked"
  | "no-connection"
  | "denied"
  | "connect-timeout"
  | "aborted"
  | { app: number };

export type DenyReason = "server-full" | "version-mismatch" | "channel-mismatch" | "refused" | "rate-limited";

export interface SendOptions {
  channel: number;
  /** Ask for a receipt event (delivered or lost) for this message. */
  receipt?: boolean;
  /** LatestState channels: the state key. */
  key?: number;
  /**
   * Hold the message until `now + delayMs` (e.g. to pace a large state transfer to a joining
   * player). It takes its message sequence when released, so later undelayed sends on the same
   * channel may overtake it; delayed messages leave in due order. Finite and >= 0, else
   * InvalidDelayError (`invalid-delay`). 0 or absent: at once.
   */
  delayMs?: number;
  /**
   * Give the message up if it is not delivered within `deadlineMs` of this send (counted from
   * the send, delayMs included): it leaves the send queue and is never resent, and its receipt
   * reports `false`. What each mode then promises (docs/CHANNELS.md, "Deadlines"):
   * - reliable-ordered: the receiver is told to skip its message sequences (a GAP frame), so
   *   later messages are not held behind it; it is delivered once or not at all;
   * - reliable-unordered, reliable-sequenced: delivered once or not at all;
   * - unreliable kinds: dropped if it has not left by then (a per-message maxQueueMs).
   * Not taken on latest-state channels (the key's current value is resent until replaced).
   * A finite number > 0, else InvalidDeadlineError (`ERR_INVALID_DEADLINE`).
   */
  deadlineMs?: number;
  /**
   * `data` is never written again, by anyone: the channels keep a reference instead of their
   * own copy. For one payload sent to many connections (the API's `server.broadcast()` copies
   * the caller's bytes once, into a buffer no one else holds, and shares it so).
   */
  shared?: boolean;
}

export type EndpointEvent =
  | {
      type: "connect";
      connection: ConnectionId;
      address: Address;
      userData: Uint8Array;
      /** Who a layer in front (the secure layer) authenticated the handshake's sender as, if any. */
      identity?: ClientIdentity;
    }
  | { type: "message"; connection: ConnectionId; channel: number; data: Uint8Array; key?: number }
  | { type: "unresponsive"; connection: ConnectionId; silentMs: number }
  | { type: "responsive"; connection: ConnectionId }
  | {
      type: "disconnect";
      connection: ConnectionId;
      reason: DisconnectReason;
      deny?: DenyReason;
      userData?: Uint8Array;
      /** The connection's final stats (the session Endpoint always sets them; after this
       *  event its stats() no longer answers). */
      stats?: ConnectionStats;
    }
  | { type: "receipt"; connection: ConnectionId; receipt: number; delivered: boolean }
  | { type: "bandwidth"; connection: ConnectionId; bitsPerSecond: number }
  /** Path MTU discovery found a black hole (docs/SESSION.md, "Path MTU discovery"): datagrams
   *  of the size in use vanished while smaller ones got through. `pathMtu` is the size it fell
   *  to: the base `mtu`, or below it (`belowBase`) down to the floor, 548 bytes. */
  | { type: "pathMtu"; connection: ConnectionId; pathMtu: number; belowBase: boolean }
  /** Server: the client's address changed (NAT rebinding, network switch) and the connection
   *  moved with it (PROTOCOL §5); `from` no longer reaches it. */
  | { type: "migrate"; connection: ConnectionId; from: Address; to: Address }
  /** A NAT_PUNCH with a token this endpoint is punching with arrived from `address` (PROTOCOL
   *  §7): that address reaches this endpoint through both NATs. No connection is involved. */
  | { type: "punch"; address: Address; token: Uint8Array };

/** ConnectionStats.fec: XOR parity, both directions of one connection. */
export interface FecStats {
  /** Parity datagrams sent, and their bytes (headers and CRC included). */
  paritySent: number;
  parityBytes: number;
  /** Datagrams sent that joined a parity group. */
  protectedSent: number;
  /** Datagrams the peer's parity rebuilt here (each one lost on the way, recovered with no resend). */
  rebuilt: number;
  /** Parities that came to groups missing two or more datagrams (resends recover those). */
  unrecoverable: number;
  /** Parities of groups that arrived whole, or that predate this side's copies. */
  parityUnneeded: number;
  /** Malformed parities, or ones that match no group received (also counted in `invalid`). */
  parityInvalid: number;
}

export interface ConnectionStats {
  /** Smoothed RTT (RFC 6298 SRTT, gain 1/8), ms; NaN before the first sample. */
  rttMs: number;
  /** An exponentially smoothed moving average of the RTT, moving 10% of the way toward
   *  each sample (the same samples as `rttMs`), ms; NaN before the first sample. */
  rttEwmaMs: number;
  rttVarMs: number;
  minRttMs: number;
  jitterMs: number;
  lossRate: number;
  linkPingMs: number;
  transmissionPingMs: number;
  /** The path's capacity as the congestion controller has seen it (bits/s of datagrams, with
   *  what their carrier adds): its model's bottleneck bandwidth, or what it measured when the
   *  network last limited this flow, if more (a light stream after a download keeps the
   *  download's figure). 0 before any. */
  bandwidthEstimateBps: number;
  /** Largest datagram the connection sends now: `mtu` until path MTU discovery finds more (or,
   *  on a path that does not carry `mtu`, less: down to 548). */
  pathMtu: number;
  /** Black holes path MTU discovery found ("pathMtu" events), below the base or above it. */
  pathMtuBlackHoles: number;
  /** Estimated server clock minus local clock (client side), and its error bound. */
  clockOffsetMs?: number;
  clockErrorMs?: number;
  packets: {
    dispatched: number;
    delivered: number;
    dropped: number;
    inFlight: number; // dispatched = delivered + dropped + inFlight
    received: number;
  };
  /** Datagram bytes, each datagram with what its carrier adds (EndpointConfig.carrier; 0 on UDP). */
  bytesSent: number;
  bytesReceived: number;
  resends: number;
  duplicates: number;
  stale: number;
  invalid: number;
  crcFailures: number;
  messagesSent: number[];
  messagesReceived: number[];
  /** Copies of messages sent on channels with `redundancy` or `piggyback`, and their bytes
   *  (docs/CHANNELS.md, "Copies: redundancy and piggyback"); never counted in `resends`. */
  copiesSent: number;
  copyBytes: number;
  /** Received copies discarded as already delivered (or late) on such channels: counted here,
   *  not in `duplicates` or `stale`. */
  copiesDropped: number;
  /** Parity (channels with `fec`, docs/CHANNELS.md "Parity"): present once either side used it. */
  fec?: FecStats;
  /** Bytes of application data the connection holds to send: queued, in flight or waiting to be
   *  resent, delayed sends included (back-pressure: a sender can hold off while it grows). */
  queuedBytes: number;
  /** Unreliable messages dropped unsent after their channel's `maxQueueMs`. */
  messagesExpired: number;
  /** Messages given up at their send's `deadlineMs` (SendOptions.deadlineMs). */
  deadlinesMissed: number;
}
