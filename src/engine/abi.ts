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
 * The wire format they implement is docs/PROTOCOL.md. The constants, enums, structure offsets
 * and record types are generated, with the WASM side's, from one definition:
 * ./abi.definition.mjs (scripts/abi.mjs writes ./abi.generated.ts).
 */

export * from "./abi.generated.js";
import type { DeliveryKind, DropReason, PacketType, SettleOutcome } from "./abi.generated.js";

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
  /** The whole memory as u32s and f64s: the host reads a slot's sent-ring fields (SlotField)
   *  through them, at (slot base + field) / 4 and / 8. */
  readonly u32: Uint32Array;
  readonly f64: Float64Array;
  /** The sequences the last detectLosses, dropAll or evictNext declared lost, oldest first
   *  (in the scratch area: read them before the next engine call). */
  readonly lost: Int32Array;
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
   * receive window, append the CRC, and enter the packet in the slot's sent ring as in flight,
   * sent at `now`, ack-eliciting if `eliciting` (assembly/sent-ring.ts). Returns the sequence;
   * the datagram is `offset .. offset + DATA_OVERHEAD_BYTES + framesLength`. A packet still in
   * flight PACKET_WINDOW packets back is declared lost silently to make room: a host that keeps
   * what packets carried calls evictNext first.
   */
  sealData(slot: number, offset: number, framesLength: number, type: PacketType, now?: number, eliciting?: boolean): number;
  /** Settle `sequence` as acknowledged by something other than a header's ack fields (a
   *  LATE_ACK frame), as the ack scan settles those: Acked, LateAck or None. */
  acknowledge(slot: number, sequence: number): SettleOutcome;
  /**
   * Declare lost, oldest first, the packets in flight that the packet threshold, the time
   * threshold (`timeThresholdMs`, Infinity while unknown) or the RTO (`timeoutMs`) say are lost
   * at `now` (RFC 9002 §6.1, §6.2). Returns how many; their sequences are in `lost`. A
   * `timeoutMs` of -Infinity declares every packet in flight lost (the connection closed).
   */
  detectLosses(slot: number, now: number, timeoutMs: number, timeThresholdMs: number, packetThreshold: number): number;
  /** If the entry the next sealed packet takes still holds a packet in flight (PACKET_WINDOW
   *  packets old), declare it lost: its sequence (also lost[0]), else -1. */
  evictNext(slot: number): number;
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
