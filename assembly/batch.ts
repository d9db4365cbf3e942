// The exported entry points: one call per batch of received datagrams, one per sealed packet.
// Nothing here allocates, traps or throws on wire input: every datagram ends as exactly one of
// PacketReceived, Control, UnknownPeer or DatagramDropped (docs/PROTOCOL.md §6).

import {
  channelBase, channelCount, channelKind, configOffset, descriptorOffset, maxRecords, maxSlots,
  readLayout, rxEnd, rxStart, scratchOffset, slotBase, slotBytesNeeded, slotStride,
  txEnd, txStart,
} from "./layout";
import {
  storeControlRecord, storeDatagramDroppedRecord, storePacketReceivedRecord, storeUnknownPeerRecord, ACKS_VALID,
  ACK_DELAY_TRAILER_BYTES, CHANNEL_BASE, CONFIG_CONSUMED, CONFIG_MAGIC, CONFIG_RECORDS_PER_DATAGRAM, CONFIG_PROTOCOL_ID, CRC_BYTES,
  DATA_HEADER_BYTES, DROP_BAD_CRC, DROP_BAD_LENGTH, DROP_MALFORMED_FRAME, DROP_TOO_SHORT,
  DROP_UNKNOWN_PEER, DROP_UNKNOWN_TYPE, FRAME_FLAG_FRAGMENT, FRAME_FLAG_GAP, FRAME_FLAG_KIND_MASK,
  INIT_BAD_CHANNEL_COUNT, INIT_OK, INIT_SLOT_STRIDE_TOO_SMALL, INIT_STATIC_DATA_OVERLAPS, KIND_LATEST_STATE,
  KIND_RELIABLE_UNORDERED, MAX_CHANNELS, MAX_DATAGRAM_BYTES, MAX_KEY_BYTES, MAX_PARITY_BLOCKS,
  MIN_DATAGRAM_BYTES, PACKET_WINDOW, SLOT_CRC_STATE, SLOT_NEXT_SEND_SEQUENCE, SLOT_SENT_CRCS, SYSTEM_CHANNEL,
  TYPE_DATA, TYPE_KEEPALIVE,
} from "./abi.generated";
import { crc32c as crc32cPlain, crcFrom, crcInit, crcWithPrefix, prefixStateWith, protocolPrefixState } from "./crc32c";
import { lengthIsValid, packetType, readAck, readAckBits, readSequence, writeDataHeader } from "./header";
import { frameHeaderBytes, validateFrames } from "./frame";
import { ackBits, hasReceived, mostRecentReceived, receiveCheck, receiveRecord, ACCEPT } from "./received-window";
import { detectLosses as detectSlotLosses, evictNext as evictSlotNext, rememberSent, scanAcks, settleAck } from "./sent-ring";
import { applyFrame } from "./channel-rules";
import { applyOrderedGap } from "./reorder";
import { countDrop, nextRecord, recordCount, resetRecords } from "./records";
import { parityXor } from "./parity";


/** Records one datagram may need at most: the host computes it (src/engine/layout.ts
 *  maxRecordsPerDatagram) and writes it into the config area. */
let recordsPerDatagram: u32 = 0;

/** End of the module's static data: the host layout must start at or above it. */
export function dataEnd(): i32 {
  return <i32>__heap_base;
}

/** Read the layout from the config area the host wrote at `config`, build the CRC tables. */
export function init(config: i32): i32 {
  if (<usize>config < __heap_base) return INIT_STATIC_DATA_OVERLAPS;
  readLayout(<usize>config);
  if (channelCount < 1 || channelCount > MAX_CHANNELS) return INIT_BAD_CHANNEL_COUNT;
  if (slotStride < slotBytesNeeded(channelCount)) return INIT_SLOT_STRIDE_TOO_SMALL;
  recordsPerDatagram = load<u32>(<usize>config + CONFIG_RECORDS_PER_DATAGRAM);
  crcInit(load<u32>(<usize>config + CONFIG_MAGIC), load<u32>(<usize>config + CONFIG_PROTOCOL_ID));
  return INIT_OK;
}

/** Clear every piece of a slot's state; its first outgoing sequence is `initialSequence`. Its
 *  DATA CRCs start from the protocol prefix alone until keySlot gives it a key. */
export function resetSlot(slot: i32, initialSequence: i32): void {
  if (slot < 0 || slot >= maxSlots) return;
  const base = slotBase(slot);
  memory.fill(base, 0, slotStride);
  store<u32>(base, <u32>initialSequence & 0xffff, SLOT_NEXT_SEND_SEQUENCE);
  store<u32>(base, protocolPrefixState(), SLOT_CRC_STATE);
  for (let ch: u32 = 0; ch < channelCount; ch++) {
    const kind = channelKind(ch);
    // Dedup windows start "just before 0" so messageSeq 0 is the first new one.
    if (kind == KIND_RELIABLE_UNORDERED || kind == KIND_LATEST_STATE) {
      store<u32>(channelBase(base, ch), 0xffff, CHANNEL_BASE);
    }
  }
}

/**
 * Give a slot its connection key: the `length` bytes the host wrote at the scratch area join
 * the CRC prefix of the slot's DATA and KEEPALIVE packets, both ways (PROTOCOL §1). Returns 0,
 * or -1 on bad arguments.
 */
export function keySlot(slot: i32, length: i32): i32 {
  if (slot < 0 || slot >= maxSlots || length < 0 || <u32>length > MAX_KEY_BYTES) return -1;
  store<u32>(slotBase(slot), prefixStateWith(scratchOffset, <usize>length), SLOT_CRC_STATE);
  return 0;
}

/** See Engine.processBatch in src/engine/abi.ts. Returns the number of records written. */
export function processBatch(count: i32): i32 {
  resetRecords();
  let i = 0;
  for (; i < count; i++) {
    // Stop before a datagram whose records might not fit; the host calls again.
    if (i > 0 && recordCount + recordsPerDatagram > maxRecords) break;
    const d = descriptorOffset + (<usize>i << 4);
    processDatagram(i, load<i32>(d), load<i32>(d, 4), load<i32>(d, 8));
  }
  // The host reads it there (Engine.consumed).
  store<u32>(configOffset + CONFIG_CONSUMED, <u32>i);
  return <i32>recordCount;
}

@inline
function drop(index: i32, slot: i32, reason: i32): void {
  countDrop(reason);
  storeDatagramDroppedRecord(nextRecord(), slot, reason, index);
}

function processDatagram(index: i32, offset: i32, length: i32, slot: i32): void {
  if (length < <i32>MIN_DATAGRAM_BYTES) return drop(index, slot, DROP_TOO_SHORT);
  // A descriptor outside the receive arena is host misuse: never read it.
  if (offset < 0 || <usize>offset < rxStart || <usize>offset + <usize>length > rxEnd) {
    return drop(index, slot, DROP_BAD_LENGTH);
  }
  const ptr = <usize>offset;
  const bodyEnd = ptr + <usize>length - CRC_BYTES;
  // The type picks the CRC prefix: handshake packets are checked with the protocol prefix,
  // DATA and KEEPALIVE with their connection's (PROTOCOL §1).
  const typeByte = <u32>load<u8>(ptr);
  const type = packetType(typeByte);
  if (type < 0) return drop(index, slot, DROP_UNKNOWN_TYPE);
  if (<u32>type != TYPE_DATA && <u32>type != TYPE_KEEPALIVE) {
    if (load<u32>(bodyEnd) != crcWithPrefix(ptr, bodyEnd - ptr)) return drop(index, slot, DROP_BAD_CRC);
    if (!lengthIsValid(ptr, <usize>length, <u32>type)) return drop(index, slot, DROP_BAD_LENGTH);
    storeControlRecord(nextRecord(), slot, type, index, offset + 1, length - 1 - <i32>CRC_BYTES);
    return;
  }
  if (slot < 0 || slot >= maxSlots) {
    // No connection, so no key to check it with: answered NO_CONNECTION, which echoes its
    // sequence and CRC so that only the real sender can act on the answer.
    if (!lengthIsValid(ptr, <usize>length, <u32>type)) return drop(index, slot, DROP_BAD_LENGTH);
    countDrop(DROP_UNKNOWN_PEER);
    storeUnknownPeerRecord(nextRecord(), slot, index, <i32>readSequence(ptr), <i32>load<u32>(bodyEnd));
    return;
  }
  const base = slotBase(slot);
  if (load<u32>(bodyEnd) != crcFrom(load<u32>(base, SLOT_CRC_STATE), ptr, bodyEnd - ptr)) return drop(index, slot, DROP_BAD_CRC);
  if (!lengthIsValid(ptr, <usize>length, <u32>type)) return drop(index, slot, DROP_BAD_LENGTH);
  const sequence = readSequence(ptr);
  const window = receiveCheck(base, sequence);
  if (window != ACCEPT) return drop(index, slot, window);
  const framesStart = ptr + DATA_HEADER_BYTES;
  // A pure ack's ack delay (§2) is no frame: nothing to validate, apply or deliver (the host
  // reads it from the datagram).
  const trailer = bodyEnd - framesStart == ACK_DELAY_TRAILER_BYTES;
  // Validate every frame before any state changes (PROTOCOL §3: all or nothing).
  if (!trailer && validateFrames(framesStart, bodyEnd) < 0) return drop(index, slot, DROP_MALFORMED_FRAME);

  receiveRecord(base, sequence);
  storePacketReceivedRecord(nextRecord(), slot, <i32>sequence, index, type);
  if (typeByte & ACKS_VALID) scanAcks(base, slot, readAck(ptr), readAckBits(ptr));
  if (trailer) return;
  // Frames were validated: read them without re-checking.
  let p = framesStart;
  while (p < bodyEnd) {
    const channel = <u32>load<u8>(p);
    const flags = <u32>load<u8>(p, 1);
    const kind = flags & FRAME_FLAG_KIND_MASK;
    const messageSeq = <u32>load<u16>(p, 2);
    const header = frameHeaderBytes(flags);
    const fragment = flags & FRAME_FLAG_FRAGMENT ? <i32>((<u32>load<u16>(p, 4) << 16) | <u32>load<u16>(p, 6)) : 0;
    const key = kind == KIND_LATEST_STATE ? load<i32>(p + header - 6) : 0;
    const payloadLength = <u32>load<u16>(p + header - 2);
    const cb: usize = channel == SYSTEM_CHANNEL ? <usize>0 : channelBase(base, channel);
    if (flags & FRAME_FLAG_GAP) applyOrderedGap(slot, cb, channel, messageSeq, <u32>load<u16>(p + header));
    else applyFrame(slot, cb, channel, kind, messageSeq, fragment, key, <i32>(p + header), <i32>payloadLength);
    p += header + <usize>payloadLength;
  }
}

/** See Engine.sealData. Returns the sequence, or -1 on bad arguments (the host checks first). */
export function sealData(slot: i32, offset: i32, framesLength: i32, type: i32, now: f64, eliciting: i32): i32 {
  if (slot < 0 || slot >= maxSlots) return -1;
  if (type != <i32>TYPE_DATA && type != <i32>TYPE_KEEPALIVE) return -1;
  if (framesLength < 0 || (type == <i32>TYPE_KEEPALIVE && framesLength != 0)) return -1;
  const total = <usize>framesLength + DATA_HEADER_BYTES + CRC_BYTES;
  if (total > MAX_DATAGRAM_BYTES || offset < 0 || <usize>offset < txStart || <usize>offset + total > txEnd) return -1;
  const base = slotBase(slot);
  // A host that wants to hear of it calls evictNext first (Engine.sealData).
  evictSlotNext(base, scratchOffset);
  const sequence = load<u32>(base, SLOT_NEXT_SEND_SEQUENCE);
  store<u32>(base, (sequence + 1) & 0xffff, SLOT_NEXT_SEND_SEQUENCE);
  rememberSent(base, sequence, <u32>total, now, eliciting != 0);
  const ptr = <usize>offset;
  // Until something was received the ack fields mean nothing: ACKS_VALID clear, zeros (§2).
  if (hasReceived(base)) {
    const ack = mostRecentReceived(base);
    writeDataHeader(ptr, <u32>type | ACKS_VALID, sequence, ack, ackBits(base, ack));
  } else {
    writeDataHeader(ptr, <u32>type, sequence, 0, 0);
  }
  const crcAt = ptr + DATA_HEADER_BYTES + <usize>framesLength;
  const crc = crcFrom(load<u32>(base, SLOT_CRC_STATE), ptr, crcAt - ptr);
  store<u32>(crcAt, crc);
  store<u32>(base + SLOT_SENT_CRCS + (<usize>(sequence & (PACKET_WINDOW - 1)) << 2), crc);
  return <i32>sequence;
}

/** See Engine.acknowledge: a SettleOutcome (0 on bad arguments). */
export function acknowledge(slot: i32, sequence: i32): i32 {
  if (slot < 0 || slot >= maxSlots) return 0;
  return settleAck(slotBase(slot), <u32>sequence & 0xffff);
}

/** See Engine.detectLosses: how many sequences it wrote to the scratch area (-1 on bad arguments). */
export function detectLosses(slot: i32, now: f64, timeoutMs: f64, timeThresholdMs: f64, packetThreshold: i32): i32 {
  if (slot < 0 || slot >= maxSlots || packetThreshold < 1) return -1;
  return detectSlotLosses(slotBase(slot), now, timeoutMs, timeThresholdMs, <u32>packetThreshold, scratchOffset);
}

/** See Engine.evictNext. */
export function evictNext(slot: i32): i32 {
  if (slot < 0 || slot >= maxSlots) return -1;
  return evictSlotNext(slotBase(slot), scratchOffset);
}

/** Append the CRC to `length` bytes at `offset`. Returns the new length, or -1 on bad arguments. */
export function sealControl(offset: i32, length: i32): i32 {
  if (length < 1 || length > <i32>(MAX_DATAGRAM_BYTES - CRC_BYTES)) return -1;
  if (offset < 0 || <usize>offset < txStart || <usize>offset + <usize>length + CRC_BYTES > txEnd) return -1;
  const ptr = <usize>offset;
  store<u32>(ptr + <usize>length, crcWithPrefix(ptr, <usize>length));
  return length + <i32>CRC_BYTES;
}

/** Plain CRC-32C (no prefix) of any bytes in memory. */
export function crc32c(offset: i32, length: i32): u32 {
  return crc32cPlain(<usize>offset, <usize>length);
}

/** XOR `count` blocks whose i32 offsets the host wrote at the scratch area into `dest`. */
export function parity(dest: i32, count: i32, length: i32): i32 {
  if (count < 0 || <u32>count > MAX_PARITY_BLOCKS || length < 0) return -1;
  parityXor(<usize>dest, scratchOffset, <u32>count, <usize>length);
  return 0;
}
