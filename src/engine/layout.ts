/**
 * The engine's memory layout, computed once from the config and shared by both engines.
 * The WASM engine receives these numbers at init (written into the config area) and never
 * grows its memory, so JS views stay attached for the engine's lifetime.
 *
 *   0        reserved (64 KiB): AssemblyScript static data (CRC tables) and its stack
 *   config   256 B   prefix, sizes, offsets, channel kinds (CONFIG_* below)
 *   counters 64 B    u32 per DropReason
 *   scratch  1 KiB   parity offsets table
 *   rx arena         batchDatagrams * MAX_DATAGRAM_BYTES
 *   descriptors      i32[batchDatagrams * 4]
 *   records          i32[maxRecords * 8]
 *   tx arena         sendDatagrams * MAX_DATAGRAM_BYTES
 *   slots            maxSlots * slotStride (sub-layout SLOT_* below)
 */
import { AckwireError } from "../channels/errors.js";
import {
  CHANNEL_BYTES,
  ConfigField,
  PROTOCOL_MAGIC,
  COUNTER_BYTES,
  CONFIG_BYTES,
  DeliveryKind,
  DESCRIPTOR_INTS,
  FRAME_HEADER_BYTES,
  DATA_OVERHEAD_BYTES,
  MAX_CHANNELS,
  MAX_DATAGRAM_BYTES,
  MESSAGE_WINDOW,
  RECORD_INTS,
  RESERVED_LOW_BYTES,
  SCRATCH_BYTES,
  SlotField,
  type EngineConfig,
  type Layout,
} from "./abi.js";

export const PAGE_BYTES = 65536;

const align16 = (n: number): number => (n + 15) & ~15;

export function isOrdered(kind: DeliveryKind): boolean {
  return kind === DeliveryKind.ReliableOrdered;
}

/** Records one datagram may need at most, so processBatch can stop before overflowing. */
export function maxRecordsPerDatagram(orderedChannelCount: number): number {
  const maxFrames = Math.floor((MAX_DATAGRAM_BYTES - DATA_OVERHEAD_BYTES) / FRAME_HEADER_BYTES);
  // PacketReceived and 33 acks, a record per frame, the releases of every ordered channel's
  // held bits, and the releases and skips of the one GAP frame a datagram may hold (a window of
  // released bits, and a Skip between each two).
  const gapRecords = MESSAGE_WINDOW + MESSAGE_WINDOW / 2 + 1;
  return 34 + maxFrames + (MESSAGE_WINDOW - 1) * Math.min(maxFrames, orderedChannelCount) + gapRecords;
}

export function computeLayout(config: EngineConfig): Layout {
  const batch = config.batchDatagrams ?? 64;
  const sendDatagrams = config.sendDatagrams ?? 64;
  const ordered = config.channels.filter(isOrdered).length;
  const maxRecords = Math.max(config.maxRecords ?? 8192, maxRecordsPerDatagram(ordered) * 2);
  const configOffset = RESERVED_LOW_BYTES;
  const counterOffset = configOffset + CONFIG_BYTES;
  const scratchOffset = counterOffset + COUNTER_BYTES;
  const rxArenaOffset = scratchOffset + SCRATCH_BYTES;
  const rxArenaBytes = align16(batch * MAX_DATAGRAM_BYTES);
  const descriptorOffset = rxArenaOffset + rxArenaBytes;
  const recordOffset = descriptorOffset + align16(batch * DESCRIPTOR_INTS * 4);
  const txArenaOffset = recordOffset + maxRecords * RECORD_INTS * 4;
  const txArenaBytes = align16(sendDatagrams * MAX_DATAGRAM_BYTES);
  const slotOffset = txArenaOffset + txArenaBytes;
  const slotStride = align16(SlotField.Channels + config.channels.length * CHANNEL_BYTES);
  const totalBytes = slotOffset + config.maxSlots * slotStride;
  return {
    configOffset,
    counterOffset,
    rxArenaOffset,
    rxArenaBytes,
    descriptorOffset,
    recordOffset,
    maxRecords,
    txArenaOffset,
    txArenaBytes,
    slotOffset,
    slotStride,
    totalBytes,
  };
}

export function scratchOffsetOf(layout: Layout): number {
  return layout.counterOffset + COUNTER_BYTES;
}

export function memoryPages(layout: Layout): number {
  return Math.ceil(layout.totalBytes / PAGE_BYTES);
}

/** Validate a config: a typed error for anything the engine cannot hold. */
export function checkEngineConfig(config: EngineConfig): void {
  const fail = (msg: string): never => {
    throw new EngineConfigError(msg);
  };
  if (!Number.isInteger(config.protocolId) || config.protocolId < 0 || config.protocolId > 0xffffffff)
    fail(`protocolId must be a u32 integer (0..4294967295), got ${config.protocolId}`);
  if (!Number.isInteger(config.maxSlots) || config.maxSlots < 1 || config.maxSlots > 65536)
    fail(`maxSlots must be an integer in 1..65536, got ${config.maxSlots}`);
  if (config.channels.length < 1 || config.channels.length > MAX_CHANNELS)
    fail(`between 1 and ${MAX_CHANNELS} channels are supported, got ${config.channels.length}`);
  for (const k of config.channels)
    if (!Number.isInteger(k) || k < 0 || k > DeliveryKind.LatestState) fail(`unknown delivery kind ${k}`);
  const batch = config.batchDatagrams ?? 64;
  if (!Number.isInteger(batch) || batch < 1 || batch > 4096) fail(`batchDatagrams must be in 1..4096`);
  const send = config.sendDatagrams ?? 64;
  if (!Number.isInteger(send) || send < 1 || send > 4096) fail(`sendDatagrams must be in 1..4096`);
}

/** Engine limits out of range (`engineLimits`: batchDatagrams, sendDatagrams, slots, channels). */
export class EngineConfigError extends AckwireError {
  constructor(message: string) {
    super("ERR_ENGINE_CONFIG", message);
  }
}

/** Misuse of the engine by its caller (bad slot, offset outside an arena, ...). */
export class EngineUsageError extends AckwireError {
  constructor(message: string) {
    super("ERR_ENGINE_USAGE", message);
  }
}

/** keySlot's arguments, the same for both engines: a slot in range and a key of at most `maxKeyBytes`. */
export function checkKeySlot(slot: number, key: Uint8Array, maxSlots: number, maxKeyBytes: number): void {
  if (!(Number.isInteger(slot) && slot >= 0 && slot < maxSlots) || key.length > maxKeyBytes)
    throw new EngineUsageError(`keySlot(${slot}, ${key.length} bytes): slot must be in 0..${maxSlots - 1}, the key at most ${maxKeyBytes} bytes`);
}

/** Write the config area the engine reads at init (ConfigField; the host's half of the ABI). */
export function writeConfigArea(v: DataView, L: Layout, config: EngineConfig, ordered: number): void {
  const c = L.configOffset;
  v.setUint32(c + ConfigField.Magic, PROTOCOL_MAGIC, true);
  v.setUint32(c + ConfigField.ProtocolId, config.protocolId >>> 0, true);
  v.setUint32(c + ConfigField.MaxSlots, config.maxSlots, true);
  v.setUint32(c + ConfigField.ChannelCount, config.channels.length, true);
  v.setUint32(c + ConfigField.SlotStride, L.slotStride, true);
  v.setUint32(c + ConfigField.RxArenaOffset, L.rxArenaOffset, true);
  v.setUint32(c + ConfigField.DescriptorOffset, L.descriptorOffset, true);
  v.setUint32(c + ConfigField.RecordOffset, L.recordOffset, true);
  v.setUint32(c + ConfigField.MaxRecords, L.maxRecords, true);
  v.setUint32(c + ConfigField.TxArenaOffset, L.txArenaOffset, true);
  v.setUint32(c + ConfigField.SlotOffset, L.slotOffset, true);
  v.setUint32(c + ConfigField.CounterOffset, L.counterOffset, true);
  v.setUint32(c + ConfigField.ScratchOffset, scratchOffsetOf(L), true);
  v.setUint32(c + ConfigField.OrderedChannelCount, ordered, true);
  v.setUint32(c + ConfigField.RecordsPerDatagram, maxRecordsPerDatagram(ordered), true);
  for (let i = 0; i < config.channels.length; i++) v.setUint8(c + ConfigField.ChannelKinds + i, config.channels[i]);
}
