/**
 * The engine ABI: the one contract between the per-packet engine (WASM in `assembly/`, or the
 * TypeScript reference twin in `src/engine/ts-engine.ts`) and the session layer.
 *
 * The boundary rule (DESIGN.md): nothing crosses per field or per byte. Datagrams are copied
 * once into the receive arena, processed in a batch by one call, and the results come back as
 * fixed-size records in a shared Int32Array view. Outgoing packets are written into the send
 * arena by TypeScript and sealed (header + CRC) by one call per packet.
 *
 * Both engines expose the same `Engine` interface over the same memory layout, so the
 * differential tests compare their records and sealed bytes directly.
 * The wire format they implement is docs/PROTOCOL.md.
 */

/** Packet types (low nibble of byte 0). docs/PROTOCOL.md §1. */
export const enum PacketType {
  Data = 0,
  ConnectRequest = 1,
  Challenge = 2,
  ConnectResponse = 3,
  Accept = 4,
  Deny = 5,
  Disconnect = 6,
  DisconnectAck = 7,
  NoConnection = 8,
  Keepalive = 9,
  /** Client -> server from a new address: "this connection is mine now" (PROTOCOL §4, migration). */
  RebindRequest = 10,
  /** Server -> the new address: prove you are there (a random token). */
  RebindChallenge = 11,
  /** Client -> server from the new address: the token back; the connection moves. */
  RebindResponse = 12,
  /** Either way, between two endpoints behind NATs: opens the sender's NAT for the peer (PROTOCOL §7). */
  NatPunch = 13,
}
/** Body of the three REBIND packets: u32 sessionId, u32 token low, u32 token high, u32 proof. */
export const REBIND_BODY_BYTES = 16;
/** Body of NAT_PUNCH: the introducer's 8-byte token for the pair. */
export const PUNCH_BODY_BYTES = 8;

/** Delivery kinds (frame flags bits 0-2). docs/PROTOCOL.md §3. */
export const enum DeliveryKind {
  Unreliable = 0,
  UnreliableSequenced = 1,
  ReliableUnordered = 2,
  ReliableOrdered = 3,
  ReliableSequenced = 4,
  LatestState = 5,
}

export const SYSTEM_CHANNEL = 255;
export const FRAME_FLAG_FRAGMENT = 0x08;
export const DATA_HEADER_BYTES = 9;
export const CRC_BYTES = 4;
/** DATA header + CRC: the fixed per-datagram overhead. */
export const DATA_OVERHEAD_BYTES = DATA_HEADER_BYTES + CRC_BYTES;
export const FRAME_HEADER_BYTES = 6;
/**
 * A DATA packet whose frames area is exactly this long carries no frame but its ack delay
 * (PROTOCOL §2, version 6): a pure ack that says how long its `ack` waited. Not ack-eliciting.
 * No frames area of 1..5 bytes is otherwise valid, so this one is unambiguous.
 */
export const ACK_DELAY_TRAILER_BYTES = 2;
/** Ack delays on the wire (ACK_DELAY frames and pure acks' delays) count 0.1 ms: a u16 covers 6.5 s. */
export const ACK_DELAY_UNITS_PER_MS = 10;
/** Type byte bit 4 of DATA and KEEPALIVE: the ack fields mean something (PROTOCOL §2). */
export const ACKS_VALID = 0x10;
export const FRAGMENT_EXTRA_BYTES = 4;
export const LATEST_STATE_EXTRA_BYTES = 4;
export const CONNECT_REQUEST_BYTES = 256;
export const PROTOCOL_MAGIC = 0x776b6361; // "ackw" little-endian
export const WIRE_VERSION = 6;
/** Bytes of a connection key (PROTOCOL §1): clientSalt (u32), sessionId (u32). */
export const CONNECTION_KEY_BYTES = 8;
/** Longest key keySlot takes. */
export const MAX_KEY_BYTES = 64;
/** Packets remembered per direction for dedup and ack scan. Power of two. */
export const PACKET_WINDOW = 256;
/** Per-channel message window (reorder / dedup). Power of two, < 32768. */
export const MESSAGE_WINDOW = 1024;
export const MAX_DATAGRAM_BYTES = 1500;

/** Record types written by `processBatch`. */
export const enum RecordType {
  /** A datagram was dropped. a = DropReason, b = datagram index. slot may be -1. */
  DatagramDropped = 1,
  /** A DATA/KEEPALIVE packet was accepted. a = packet sequence, b = datagram index, c = packet type. */
  PacketReceived = 2,
  /** One of our packets was newly acknowledged. a = packet sequence. Exactly once per sequence. */
  PacketAcked = 3,
  /** A handshake/control packet passed CRC and length checks. a = PacketType, b = datagram index;
   *  offset/length = the body (after the type byte, before the CRC). slot may be -1. */
  Control = 4,
  /** Deliver now. a = channel, b = messageSeq, c = (fragIndex << 16) | fragCount (0 if not a
   *  fragment), d = LatestState key (0 otherwise); offset/length = payload in the receive arena. */
  Message = 5,
  /** A ReliableOrdered message arrived ahead of a gap: the host must copy the payload now and
   *  hold it by (channel, messageSeq) until a Release record names it. Fields as Message. */
  Hold = 6,
  /** Deliver the held message (channel a, messageSeq b): the gap before it has closed. */
  Release = 7,
  /** A frame in an accepted datagram was dropped. a = DropReason, b = channel, c = messageSeq. */
  FrameDropped = 8,
  /** DATA/KEEPALIVE (CRC not checked: there is no key to check it with) from an address with
   *  no slot: answer NO_CONNECTION. b = datagram index, c = its sequence, d = its CRC field. */
  UnknownPeer = 9,
}

export const enum DropReason {
  TooShort = 1,
  BadCrc = 2,
  UnknownType = 3,
  BadLength = 4,
  StalePacket = 5,
  DuplicatePacket = 6,
  MalformedFrame = 7,
  UnknownPeer = 8,
  StaleMessage = 9,
  DuplicateMessage = 10,
  TooFarAhead = 11,
}
export const DROP_REASON_COUNT = 12;

/** Record layout: 8 x i32. */
export const RECORD_INTS = 8;
export const enum RecordField {
  Type = 0,
  Slot = 1,
  A = 2,
  B = 3,
  C = 4,
  D = 5,
  Offset = 6,
  Length = 7,
}

/** Receive descriptor layout: 4 x i32 per datagram: offset, length, slot (-1 = unknown), 0. */
export const DESCRIPTOR_INTS = 4;

/** What the host chooses when creating an engine. The layout is derived from it. */
export interface EngineConfig {
  /** Application protocol id (u32), the second half of the CRC prefix. */
  protocolId: number;
  /** Connection slots (max connections + pending client attempts). */
  maxSlots: number;
  /** Delivery kind per channel; the same for every connection of this endpoint. 1..32. */
  channels: readonly DeliveryKind[];
  /** Datagrams per receive batch (default 64). */
  batchDatagrams?: number;
  /** Records capacity (default 8192). When full, processBatch stops early. */
  maxRecords?: number;
  /** Datagrams the send arena holds (default 64). */
  sendDatagrams?: number;
}

/**
 * Memory layout, all offsets in bytes from the start of linear memory, all 16-byte aligned.
 * Computed by `computeLayout` (src/engine/layout.ts) from the config, identically in both
 * engines (the WASM engine receives the numbers from TS at init and never grows memory).
 */
export interface Layout {
  /** Scratch/config area written at init (protocol prefix etc.). */
  configOffset: number;
  counterOffset: number; // u32[DROP_REASON_COUNT]
  rxArenaOffset: number; // batchDatagrams * MAX_DATAGRAM_BYTES
  rxArenaBytes: number;
  descriptorOffset: number; // i32[batchDatagrams * DESCRIPTOR_INTS]
  recordOffset: number; // i32[maxRecords * RECORD_INTS]
  maxRecords: number;
  txArenaOffset: number; // sendDatagrams * MAX_DATAGRAM_BYTES
  txArenaBytes: number;
  slotOffset: number; // maxSlots * slotStride
  slotStride: number;
  totalBytes: number;
}

/**
 * The engine interface. Both implementations own one memory buffer of `layout.totalBytes`
 * (rounded up to 64 KiB pages) that never grows, so `bytes`, `records`, `descriptors` stay
 * valid for the engine's lifetime.
 */
export interface Engine {
  readonly kind: "wasm" | "ts";
  readonly layout: Layout;
  /** The whole memory. Write datagrams at rxArenaOffset, frames in the tx arena. */
  readonly bytes: Uint8Array;
  readonly descriptors: Int32Array; // view at descriptorOffset
  readonly records: Int32Array; // view at recordOffset
  /**
   * Process `count` datagrams described in `descriptors`: verify CRC, parse header, update the
   * slot's receive window, scan acks, parse frames, apply channel rules; write records.
   * Returns the number of records written. If the record area could not hold a datagram's
   * records, processing stops before that datagram: `consumed()` tells how many were done.
   */
  processBatch(count: number): number;
  /** Datagrams fully processed by the last processBatch. */
  consumed(): number;
  /**
   * Seal a DATA (or KEEPALIVE, framesLength 0) packet for `slot` whose frames the host wrote
   * at `offset + DATA_HEADER_BYTES`: assign the next sequence, write ack + ackBits from the
   * receive window, append the CRC, remember the sequence as in flight. Returns the sequence;
   * the datagram is `offset .. offset + DATA_OVERHEAD_BYTES + framesLength`.
   */
  sealData(slot: number, offset: number, framesLength: number, type: PacketType): number;
  /** Append a CRC to the `length` bytes at `offset` (type byte + body). Returns the new length. */
  sealControl(offset: number, length: number): number;
  /** Clear all state of a slot; its first outgoing packet sequence is `initialSequence`. Its
   *  DATA/KEEPALIVE CRCs use the protocol prefix alone until keySlot. */
  resetSlot(slot: number, initialSequence: number): void;
  /** The slot's connection key (CONNECTION_KEY_BYTES or fewer bytes, at most 64): appended to
   *  the CRC prefix of its DATA and KEEPALIVE packets, sent and received (PROTOCOL §1). */
  keySlot(slot: number, key: Uint8Array): void;
  /** CRC of the newest packet the slot sealed whose sequence is `sequence` mod 256 (0 if none). */
  sentCrc(slot: number, sequence: number): number;
  /** Datagram-level + frame-level drop counters since creation, indexed by DropReason. */
  dropCount(reason: DropReason): number;
  /** CRC32C of `length` bytes at `offset` (no prefix). For tests and tools. */
  crc32c(offset: number, length: number): number;
  /** XOR `count` equal-length (`length`) blocks whose offsets are in `offsets` into `dest`. */
  parity(dest: number, offsets: readonly number[], length: number): void;
}
