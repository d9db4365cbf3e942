/**
 * The TypeScript reference engine: the same `Engine` as the WASM one, over an ArrayBuffer with
 * the identical layout (./layout.ts). It is the oracle of the differential tests and the
 * baseline the WASM engine is measured against, so it is written as plain, fast TypeScript
 * (typed arrays, slicing-by-8 CRC), not as a strawman.
 *
 * Wire format: docs/PROTOCOL.md. Record meanings: ./abi.ts.
 */
import {
  ACK_DELAY_TRAILER_BYTES,
  ACKS_VALID,
  CHANNEL_BYTES,
  ChannelField,
  ConfigField,
  CRC_BYTES,
  DATA_HEADER_BYTES,
  DeliveryKind,
  DESCRIPTOR_INTS,
  DropReason,
  FRAME_FLAG_FRAGMENT,
  FRAME_FLAG_GAP,
  FRAME_FLAG_RESERVED,
  GAP_PAYLOAD_BYTES,
  LengthRule,
  MAX_DATAGRAM_BYTES,
  MAX_FRAGMENT_COUNT,
  MAX_KEY_BYTES,
  MESSAGE_WINDOW,
  PACKET_LENGTH_FIXED,
  PACKET_LENGTH_RULE,
  PACKET_LENGTH_USER_DATA_AT,
  PACKET_LENGTH_USER_DATA_MAX,
  PACKET_WINDOW,
  PacketType,
  PROTOCOL_MAGIC,
  RECORD_INTS,
  SLOT_FLAG_RECEIVED,
  SENT_BYTES_SHIFT,
  SENT_ELICITING,
  SENT_LOST,
  SettleOutcome,
  SlotField,
  SYSTEM_CHANNEL,
  WINDOW_ENTRY_PRESENT,
  writeControlRecord,
  writeDatagramDroppedRecord,
  writeFrameDroppedRecord,
  writeHoldGapRecord,
  writeHoldRecord,
  writeMessageRecord,
  writeSettledRecord,
  writePacketReceivedRecord,
  writeReleaseRecord,
  writeSkipRecord,
  writeUnknownPeerRecord,
  type Engine,
  type EngineConfig,
  type Layout,
} from "./abi.js";
import {
  checkEngineConfig,
  computeLayout,
  isOrdered,
  maxRecordsPerDatagram,
  memoryPages,
  PAGE_BYTES,
  EngineUsageError,
  writeConfigArea,
  checkKeySlot,
  scratchOffsetOf,
} from "./layout.js";
import { crcFrom, crcUpdate } from "./crc32c.js";
import { sequenceGreaterThan } from "./sequence.js";

const WINDOW_MASK = PACKET_WINDOW - 1;
const MESSAGE_MASK = MESSAGE_WINDOW - 1;

export class TsEngine implements Engine {
  readonly kind = "ts" as const;
  readonly layout: Layout;
  readonly bytes: Uint8Array;
  readonly descriptors: Int32Array;
  readonly records: Int32Array;
  readonly u32: Uint32Array;
  readonly f64: Float64Array;
  readonly lost: Int32Array;
  private readonly view: DataView;
  private readonly kinds: Uint8Array;
  private readonly channelCount: number;
  private readonly orderedChannelCount: number;
  /** Records one datagram may need at most: processBatch stops before one that might not fit. */
  private readonly recordsPerDatagram: number;
  private readonly counters: Uint32Array;
  private readonly maxSlots: number;
  /** CRC state after the 8-byte prefix, so each datagram continues from it. */
  private readonly prefixCrc: number;
  private recordCount = 0;
  private consumedCount = 0;

  constructor(config: EngineConfig) {
    checkEngineConfig(config);
    this.layout = computeLayout(config);
    const buffer = new ArrayBuffer(memoryPages(this.layout) * PAGE_BYTES);
    this.bytes = new Uint8Array(buffer);
    this.view = new DataView(buffer);
    const L = this.layout;
    this.descriptors = new Int32Array(buffer, L.descriptorOffset, (L.recordOffset - L.descriptorOffset) >> 2);
    this.records = new Int32Array(buffer, L.recordOffset, L.maxRecords * RECORD_INTS);
    this.counters = new Uint32Array(buffer, L.counterOffset, 16);
    this.u32 = new Uint32Array(buffer);
    this.f64 = new Float64Array(buffer);
    this.lost = new Int32Array(buffer, scratchOffsetOf(L), PACKET_WINDOW);
    this.channelCount = config.channels.length;
    this.maxSlots = config.maxSlots;
    this.kinds = new Uint8Array(buffer, L.configOffset + ConfigField.ChannelKinds, this.channelCount);
    this.kinds.set(config.channels);
    this.orderedChannelCount = config.channels.filter(isOrdered).length;
    this.recordsPerDatagram = maxRecordsPerDatagram(this.orderedChannelCount);
    writeConfigArea(this.view, L, config, this.orderedChannelCount);
    this.prefixCrc = crcUpdate(0xffffffff, this.bytes, L.configOffset, 8);
  }

  consumed(): number {
    return this.consumedCount;
  }

  dropCount(reason: DropReason): number {
    return this.counters[reason];
  }

  crc32c(offset: number, length: number): number {
    return crcFrom(0xffffffff, this.bytes, offset, length);
  }

  parity(dest: number, offsets: readonly number[], length: number): void {
    const b = this.bytes;
    b.fill(0, dest, dest + length);
    for (const src of offsets) for (let i = 0; i < length; i++) b[dest + i] ^= b[src + i];
  }

  resetSlot(slot: number, initialSequence: number): void {
    const base = this.slotBase(slot);
    this.bytes.fill(0, base, base + this.layout.slotStride);
    this.view.setUint32(base + SlotField.NextSendSequence, initialSequence & 0xffff, true);
    this.view.setUint32(base + SlotField.CrcState, this.prefixCrc, true);
    for (let ch = 0; ch < this.channelCount; ch++) {
      const kind = this.kinds[ch];
      // Dedup windows start "just before 0" so messageSeq 0 is the first new one.
      if (kind === DeliveryKind.ReliableUnordered || kind === DeliveryKind.LatestState)
        this.view.setUint32(base + SlotField.Channels + ch * CHANNEL_BYTES + ChannelField.Base, 0xffff, true);
    }
  }

  keySlot(slot: number, key: Uint8Array): void {
    checkKeySlot(slot, key, this.maxSlots, MAX_KEY_BYTES);
    this.view.setUint32(this.slotBase(slot) + SlotField.CrcState, crcUpdate(this.prefixCrc, key, 0, key.length), true);
  }

  sentCrc(slot: number, sequence: number): number {
    if (!(Number.isInteger(slot) && slot >= 0 && slot < this.maxSlots)) return 0;
    return this.view.getUint32(this.slotBase(slot) + SlotField.SentCrcs + (sequence & WINDOW_MASK) * 4, true);
  }

  sealControl(offset: number, length: number): number {
    const L = this.layout;
    if (!Number.isInteger(length) || length < 1 || offset < L.txArenaOffset || offset + length + CRC_BYTES > L.txArenaOffset + L.txArenaBytes)
      throw new EngineUsageError(`sealControl(offset ${offset}, length ${length}): outside the send arena`);
    const crc = crcFrom(this.prefixCrc, this.bytes, offset, length);
    this.view.setUint32(offset + length, crc, true);
    return length + CRC_BYTES;
  }

  sealData(slot: number, offset: number, framesLength: number, type: PacketType, now = 0, eliciting = false): number {
    const L = this.layout;
    const total = framesLength + DATA_HEADER_BYTES + CRC_BYTES;
    if (
      !Number.isInteger(slot) || slot < 0 || slot >= this.maxSlots ||
      (type !== PacketType.Data && type !== PacketType.Keepalive) ||
      !Number.isInteger(framesLength) || framesLength < 0 || (type === PacketType.Keepalive && framesLength !== 0) ||
      total > MAX_DATAGRAM_BYTES || offset < L.txArenaOffset || offset + total > L.txArenaOffset + L.txArenaBytes
    )
      throw new EngineUsageError(`sealData(slot ${slot}, offset ${offset}, framesLength ${framesLength}, type ${type}): arguments outside the slot range or the send arena`);
    const v = this.view;
    const base = this.slotBase(slot);
    // A host that wants to hear of it calls evictNext first (Engine.sealData).
    this.evictAt(base);
    const seq = v.getUint32(base + SlotField.NextSendSequence, true);
    v.setUint32(base + SlotField.NextSendSequence, (seq + 1) & 0xffff, true);
    this.rememberSent(base, seq, total, now, eliciting);
    const received = (v.getUint32(base + SlotField.Flags, true) & SLOT_FLAG_RECEIVED) !== 0;
    let ack = 0;
    let bits = 0;
    if (received) {
      ack = v.getUint32(base + SlotField.MostRecentReceived, true);
      for (let i = 0; i < 32; i++) if (this.receivedBit(base, (ack - 1 - i) & 0xffff)) bits |= 1 << i;
    }
    this.bytes[offset] = type | (received ? ACKS_VALID : 0);
    v.setUint16(offset + 1, seq, true);
    v.setUint16(offset + 3, ack, true);
    v.setUint32(offset + 5, bits >>> 0, true);
    const length = DATA_HEADER_BYTES + framesLength;
    const crc = crcFrom(v.getUint32(base + SlotField.CrcState, true), this.bytes, offset, length);
    v.setUint32(offset + length, crc, true);
    v.setUint32(base + SlotField.SentCrcs + (seq & WINDOW_MASK) * 4, crc, true);
    return seq;
  }

  processBatch(count: number): number {
    this.recordCount = 0;
    const need = this.recordsPerDatagram;
    let i = 0;
    for (; i < count; i++) {
      // Stop before a datagram whose records might not fit; the host calls again.
      if (this.recordCount + need > this.layout.maxRecords && i > 0) break;
      const d = i * DESCRIPTOR_INTS;
      this.processDatagram(i, this.descriptors[d], this.descriptors[d + 1], this.descriptors[d + 2]);
    }
    this.consumedCount = i;
    this.view.setUint32(this.layout.configOffset + ConfigField.Consumed, i, true);
    return this.recordCount;
  }

  // ---------------------------------------------------------------------------------------

  private slotBase(slot: number): number {
    return this.layout.slotOffset + slot * this.layout.slotStride;
  }

  /** Index of the next record's first i32 (processBatch's capacity rule guarantees room). */
  private nextRecord(): number {
    return this.recordCount++ * RECORD_INTS;
  }


  private drop(index: number, slot: number, reason: DropReason): void {
    this.counters[reason]++;
    writeDatagramDroppedRecord(this.records, this.nextRecord(), slot, reason, index);
  }

  private processDatagram(index: number, off: number, len: number, slot: number): void {
    const b = this.bytes;
    const v = this.view;
    if (len < 1 + CRC_BYTES) return this.drop(index, slot, DropReason.TooShort);
    // A descriptor outside the receive arena is host misuse: never read it (as the WASM engine).
    const L = this.layout;
    if (off < L.rxArenaOffset || off + len > L.rxArenaOffset + L.rxArenaBytes) return this.drop(index, slot, DropReason.BadLength);
    const bodyEnd = off + len - CRC_BYTES;
    // The type picks the CRC prefix: handshake packets are checked with the protocol prefix,
    // DATA and KEEPALIVE with their connection's (PROTOCOL §1).
    const typeByte = b[off];
    const type = typeByte & 0x0f;
    const acksValid = (typeByte & ACKS_VALID) !== 0;
    const sequenced = type === PacketType.Data || type === PacketType.Keepalive;
    if ((typeByte & 0xe0) !== 0 || type > PacketType.NatPunch || (acksValid && !sequenced))
      return this.drop(index, slot, DropReason.UnknownType);
    const bodyLength = len - 1 - CRC_BYTES;
    if (!sequenced) {
      const crc = crcFrom(this.prefixCrc, b, off, len - CRC_BYTES);
      if (crc !== v.getUint32(bodyEnd, true)) return this.drop(index, slot, DropReason.BadCrc);
      if (!bodyLengthValid(v, type, off, bodyLength)) return this.drop(index, slot, DropReason.BadLength);
      writeControlRecord(this.records, this.nextRecord(), slot, type, index, off + 1, bodyLength);
      return;
    }
    if (slot < 0 || slot >= this.maxSlots) {
      // No connection, so no key to check it with: answered NO_CONNECTION, which echoes its
      // sequence and CRC so that only the real sender can act on the answer.
      if (!bodyLengthValid(v, type, off, bodyLength)) return this.drop(index, slot, DropReason.BadLength);
      this.counters[DropReason.UnknownPeer]++;
      writeUnknownPeerRecord(this.records, this.nextRecord(), slot, index, v.getUint16(off + 1, true), v.getInt32(bodyEnd, true));
      return;
    }
    const base = this.slotBase(slot);
    const crc = crcFrom(v.getUint32(base + SlotField.CrcState, true), b, off, len - CRC_BYTES);
    if (crc !== v.getUint32(bodyEnd, true)) return this.drop(index, slot, DropReason.BadCrc);
    if (!bodyLengthValid(v, type, off, bodyLength)) return this.drop(index, slot, DropReason.BadLength);
    const seq = v.getUint16(off + 1, true);
    const hasReceived = (v.getUint32(base + SlotField.Flags, true) & SLOT_FLAG_RECEIVED) !== 0;
    const mostRecent = v.getUint32(base + SlotField.MostRecentReceived, true);
    if (hasReceived && !sequenceGreaterThan(seq, mostRecent)) {
      const age = (mostRecent - seq) & 0xffff;
      if (age >= PACKET_WINDOW) return this.drop(index, slot, DropReason.StalePacket);
      if (this.receivedBit(base, seq)) return this.drop(index, slot, DropReason.DuplicatePacket);
    }
    const framesStart = off + DATA_HEADER_BYTES;
    // A pure ack's ack delay (§2) is no frame: nothing to validate, apply or deliver.
    const trailer = bodyEnd - framesStart === ACK_DELAY_TRAILER_BYTES;
    // Pass 1: validate every frame before any state changes (PROTOCOL §3: all or nothing).
    if (!trailer && this.validateFrames(framesStart, bodyEnd) < 0) return this.drop(index, slot, DropReason.MalformedFrame);

    // Commit the packet to the receive window.
    if (!hasReceived) {
      v.setUint32(base + SlotField.Flags, SLOT_FLAG_RECEIVED, true);
      v.setUint32(base + SlotField.MostRecentReceived, seq, true);
    } else if (sequenceGreaterThan(seq, mostRecent)) {
      const gap = (seq - mostRecent) & 0xffff;
      // Entries between the old newest and this one now describe sequences not received.
      if (gap >= PACKET_WINDOW) b.fill(0, base + SlotField.ReceivedWindow, base + SlotField.ReceivedWindow + PACKET_WINDOW / 8);
      else for (let k = 1; k < gap; k++) this.setReceivedBit(base, (mostRecent + k) & 0xffff, false);
      v.setUint32(base + SlotField.MostRecentReceived, seq, true);
    }
    this.setReceivedBit(base, seq, true);
    writePacketReceivedRecord(this.records, this.nextRecord(), slot, seq, index, type);

    if (acksValid) this.scanAcks(slot, base, v.getUint16(off + 3, true), v.getUint32(off + 5, true));
    if (!trailer && framesStart < bodyEnd) this.applyFrames(slot, base, framesStart, bodyEnd);
  }

  // ---- the sent ring (assembly/sent-ring.ts) ------------------------------------------------

  acknowledge(slot: number, sequence: number): SettleOutcome {
    this.checkSlot("acknowledge", slot);
    return this.settleAck(this.slotBase(slot), sequence & 0xffff);
  }

  detectLosses(slot: number, now: number, timeoutMs: number, timeThresholdMs: number, packetThreshold: number): number {
    this.checkSlot("detectLosses", slot);
    if (!(packetThreshold >= 1)) throw new EngineUsageError(`detectLosses: packetThreshold must be at least 1, got ${packetThreshold}`);
    const base = this.slotBase(slot);
    const largest = this.largestAcked(base);
    let n = 0;
    while (this.field(base, SlotField.InFlight) > 0) {
      const seq = this.oldestInFlight(base);
      const age = now - this.view.getFloat64(base + SlotField.SentTimes + (seq & WINDOW_MASK) * 8, true);
      const beforeLargest = largest >= 0 && sequenceGreaterThan(largest, seq);
      const byThreshold = beforeLargest && (((largest - seq) & 0xffff) >= packetThreshold || age >= timeThresholdMs);
      const byTimeout = (age >= timeoutMs || timeoutMs === -Infinity) && !(beforeLargest && timeThresholdMs !== Infinity);
      if (!byThreshold && !byTimeout) break;
      this.declareLost(base, seq, n++);
    }
    return n;
  }

  evictNext(slot: number): number {
    this.checkSlot("evictNext", slot);
    return this.evictAt(this.slotBase(slot));
  }

  /** evictNext on the slot at `base`. */
  private evictAt(base: number): number {
    if (this.nextEntryFree(base)) return -1;
    const seq = (this.field(base, SlotField.NextSendSequence) - PACKET_WINDOW) & 0xffff;
    this.declareLost(base, seq, 0);
    return seq;
  }

  private checkSlot(call: string, slot: number): void {
    if (!(Number.isInteger(slot) && slot >= 0 && slot < this.maxSlots))
      throw new EngineUsageError(`${call}(${slot}): slot must be an integer in 0..${this.maxSlots - 1}`);
  }

  private field(base: number, offset: number): number {
    return this.view.getUint32(base + offset, true);
  }

  private setField(base: number, offset: number, value: number): void {
    this.view.setUint32(base + offset, value >>> 0, true);
  }

  /** The received-window bit of `seq` (assembly/received-window.ts). */
  private receivedBit(base: number, seq: number): boolean {
    const at = base + SlotField.ReceivedWindow + ((seq & WINDOW_MASK) >>> 5) * 4;
    return ((this.view.getUint32(at, true) >>> (seq & 31)) & 1) !== 0;
  }

  private setReceivedBit(base: number, seq: number, on: boolean): void {
    const at = base + SlotField.ReceivedWindow + ((seq & WINDOW_MASK) >>> 5) * 4;
    const bit = 1 << (seq & 31);
    const w = this.view.getUint32(at, true);
    this.view.setUint32(at, (on ? w | bit : w & ~bit) >>> 0, true);
  }

  private largestAcked(base: number): number {
    const v = this.field(base, SlotField.LargestAcked);
    return v === 0 ? -1 : v & 0xffff;
  }

  private isInFlight(base: number, seq: number): boolean {
    return (this.field(base, SlotField.SentWindow + (seq & WINDOW_MASK) * 4) & (0xffff | WINDOW_ENTRY_PRESENT)) === (WINDOW_ENTRY_PRESENT | seq);
  }

  private nextEntryFree(base: number): boolean {
    return !this.isInFlight(base, (this.field(base, SlotField.NextSendSequence) - PACKET_WINDOW) & 0xffff);
  }

  private rememberSent(base: number, seq: number, bytes: number, now: number, eliciting: boolean): void {
    if (this.field(base, SlotField.Dispatched) === 0) this.setField(base, SlotField.OldestSent, seq);
    this.setField(base, SlotField.SentWindow + (seq & WINDOW_MASK) * 4, seq | (bytes << SENT_BYTES_SHIFT) | (eliciting ? SENT_ELICITING : 0) | WINDOW_ENTRY_PRESENT);
    this.view.setFloat64(base + SlotField.SentTimes + (seq & WINDOW_MASK) * 8, now, true);
    this.setField(base, SlotField.Dispatched, this.field(base, SlotField.Dispatched) + 1);
    this.setField(base, SlotField.InFlight, this.field(base, SlotField.InFlight) + 1);
    this.setField(base, SlotField.BytesInFlight, this.field(base, SlotField.BytesInFlight) + bytes);
  }

  private settleAck(base: number, seq: number): SettleOutcome {
    const at = SlotField.SentWindow + (seq & WINDOW_MASK) * 4;
    const entry = this.field(base, at);
    if ((entry & (0xffff | WINDOW_ENTRY_PRESENT)) === (WINDOW_ENTRY_PRESENT | seq)) {
      this.setField(base, at, 0);
      this.setField(base, SlotField.InFlight, this.field(base, SlotField.InFlight) - 1);
      this.setField(base, SlotField.BytesInFlight, this.field(base, SlotField.BytesInFlight) - ((entry >>> SENT_BYTES_SHIFT) & 0x7ff));
      this.setField(base, SlotField.Delivered, this.field(base, SlotField.Delivered) + 1);
      const largest = this.largestAcked(base);
      if (largest < 0 || sequenceGreaterThan(seq, largest)) this.setField(base, SlotField.LargestAcked, WINDOW_ENTRY_PRESENT | seq);
      return SettleOutcome.Acked;
    }
    if ((entry & (0xffff | SENT_LOST)) === (SENT_LOST | seq)) {
      this.setField(base, at, 0);
      this.setField(base, SlotField.LateAcks, this.field(base, SlotField.LateAcks) + 1);
      return SettleOutcome.LateAck;
    }
    return SettleOutcome.None;
  }

  /** OldestSent moved over settled entries to the oldest packet in flight (InFlight > 0). */
  private oldestInFlight(base: number): number {
    let oldest = this.field(base, SlotField.OldestSent);
    const next = this.field(base, SlotField.NextSendSequence);
    if (((next - oldest) & 0xffff) > PACKET_WINDOW) oldest = (next - PACKET_WINDOW) & 0xffff;
    for (let i = 0; i < PACKET_WINDOW && !this.isInFlight(base, oldest); i++) oldest = (oldest + 1) & 0xffff;
    this.setField(base, SlotField.OldestSent, oldest);
    return oldest;
  }

  private declareLost(base: number, seq: number, n: number): void {
    const at = SlotField.SentWindow + (seq & WINDOW_MASK) * 4;
    const entry = this.field(base, at);
    this.setField(base, at, seq | SENT_LOST);
    this.setField(base, SlotField.InFlight, this.field(base, SlotField.InFlight) - 1);
    this.setField(base, SlotField.BytesInFlight, this.field(base, SlotField.BytesInFlight) - ((entry >>> SENT_BYTES_SHIFT) & 0x7ff));
    this.setField(base, SlotField.Dropped, this.field(base, SlotField.Dropped) + 1);
    this.lost[n] = seq;
  }

  /** Each packet the ack names, settled exactly once, oldest first: a Settled record each. */
  private scanAcks(slot: number, base: number, ack: number, bits: number): void {
    for (let i = 31; i >= -1; i--) {
      if (i >= 0 && ((bits >>> i) & 1) === 0) continue;
      const s = (ack - 1 - i) & 0xffff; // i = -1 is `ack` itself
      const outcome = this.settleAck(base, s);
      if (outcome !== SettleOutcome.None) writeSettledRecord(this.records, this.nextRecord(), slot, s, outcome, this.largestAcked(base));
    }
  }

  /** Returns the number of frames, or -1 if any frame is malformed. */
  private validateFrames(pos: number, end: number): number {
    const b = this.bytes;
    const v = this.view;
    let frames = 0;
    let gaps = 0;
    while (pos < end) {
      if (end - pos < 6) return -1;
      const channel = b[pos];
      const flags = b[pos + 1];
      const kind = flags & 7;
      if ((flags & FRAME_FLAG_RESERVED) !== 0 || kind > DeliveryKind.LatestState) return -1;
      const fragment = (flags & FRAME_FLAG_FRAGMENT) !== 0;
      if (channel === SYSTEM_CHANNEL) {
        if (kind !== DeliveryKind.Unreliable || fragment) return -1;
      } else if (channel >= this.channelCount || this.kinds[channel] !== kind) return -1;
      let p = pos + 4;
      if (fragment) {
        if (end - p < 4) return -1;
        const fragIndex = v.getUint16(p, true);
        const fragCount = v.getUint16(p + 2, true);
        if (fragCount < 2 || fragCount > MAX_FRAGMENT_COUNT || fragIndex >= fragCount) return -1;
        p += 4;
      }
      if (kind === DeliveryKind.LatestState) p += 4;
      if (end - p < 2) return -1;
      const length = v.getUint16(p, true);
      p += 2;
      if (end - p < length) return -1;
      // A GAP: reliable-ordered, unfragmented, a u16 count as its payload, once per datagram
      // (processBatch's record bound allows for one).
      if ((flags & FRAME_FLAG_GAP) !== 0) {
        if (kind !== DeliveryKind.ReliableOrdered || fragment || length !== GAP_PAYLOAD_BYTES || ++gaps > 1) return -1;
        const count = v.getUint16(p, true);
        if (count < 1 || count > MAX_FRAGMENT_COUNT) return -1;
      }
      pos = p + length;
      frames++;
    }
    return frames;
  }

  private applyFrames(slot: number, base: number, pos: number, end: number): void {
    const b = this.bytes;
    const v = this.view;
    while (pos < end) {
      const channel = b[pos];
      const flags = b[pos + 1];
      const kind = flags & 7;
      const seq = v.getUint16(pos + 2, true);
      let p = pos + 4;
      let fragIndex = 0;
      let fragInfo = 0;
      if (flags & FRAME_FLAG_FRAGMENT) {
        fragIndex = v.getUint16(p, true);
        fragInfo = (fragIndex << 16) | v.getUint16(p + 2, true);
        p += 4;
      }
      let key = 0;
      if (kind === DeliveryKind.LatestState) {
        key = v.getInt32(p, true);
        p += 4;
      }
      const length = v.getUint16(p, true);
      p += 2;
      pos = p + length;
      if (channel === SYSTEM_CHANNEL || kind === DeliveryKind.Unreliable) {
        writeMessageRecord(this.records, this.nextRecord(), slot, channel, seq, fragInfo, key, p, length);
        continue;
      }
      const ch = base + SlotField.Channels + channel * CHANNEL_BYTES;
      if ((flags & FRAME_FLAG_GAP) !== 0) {
        this.applyOrderedGap(slot, ch, channel, seq, v.getUint16(p, true));
        continue;
      }
      switch (kind) {
        case DeliveryKind.ReliableOrdered:
          this.applyOrdered(slot, ch, channel, seq, fragInfo, p, length);
          break;
        case DeliveryKind.ReliableUnordered:
        case DeliveryKind.LatestState:
          this.applyDedup(slot, ch, channel, seq, fragInfo, key, p, length);
          break;
        default:
          this.applySequenced(slot, ch, channel, seq, fragIndex, fragInfo, p, length);
      }
    }
  }

  /** Reorder window: deliver the next expected, hold what is ahead, release as gaps close. */
  private applyOrdered(slot: number, ch: number, channel: number, seq: number, fragInfo: number, p: number, length: number): void {
    const v = this.view;
    const b = this.bytes;
    let expected = v.getUint32(ch + ChannelField.Base, true);
    const ahead = (seq - expected) & 0xffff;
    if (ahead >= 0x8000) return this.frameDrop(slot, DropReason.DuplicateMessage, channel, seq); // already delivered
    if (ahead >= MESSAGE_WINDOW) return this.frameDrop(slot, DropReason.TooFarAhead, channel, seq);
    if (ahead > 0) {
      const bit = seq & MESSAGE_MASK;
      const at = ch + ChannelField.Bitmap + (bit >> 3);
      if (b[at] & (1 << (bit & 7))) return this.frameDrop(slot, DropReason.DuplicateMessage, channel, seq);
      b[at] |= 1 << (bit & 7);
      writeHoldRecord(this.records, this.nextRecord(), slot, channel, seq, fragInfo, 0, p, length);
      return;
    }
    writeMessageRecord(this.records, this.nextRecord(), slot, channel, seq, fragInfo, 0, p, length);
    this.releaseFrom(slot, ch, channel, (expected + 1) & 0xffff);
  }

  /** Release the held run from `expected` on; the first sequence not held is the next expected. */
  private releaseFrom(slot: number, ch: number, channel: number, expected: number): void {
    const b = this.bytes;
    for (;;) {
      const bit = expected & MESSAGE_MASK;
      const at = ch + ChannelField.Bitmap + (bit >> 3);
      const mask = 1 << (bit & 7);
      if ((b[at] & mask) === 0) break;
      b[at] &= ~mask;
      writeReleaseRecord(this.records, this.nextRecord(), slot, channel, expected);
      expected = (expected + 1) & 0xffff;
    }
    this.view.setUint32(ch + ChannelField.Base, expected, true);
  }

  /** A GAP frame: see assembly/reorder.ts applyOrderedGap. */
  private applyOrderedGap(slot: number, ch: number, channel: number, seq: number, count: number): void {
    const b = this.bytes;
    const expected = this.view.getUint32(ch + ChannelField.Base, true);
    let ahead = (seq - expected) & 0xffff;
    if (ahead >= 0x8000) {
      const behind = (expected - seq) & 0xffff;
      if (behind >= count) return this.frameDrop(slot, DropReason.DuplicateMessage, channel, seq);
      count -= behind;
      seq = expected;
      ahead = 0;
    }
    if (ahead + count > MESSAGE_WINDOW) return this.frameDrop(slot, DropReason.TooFarAhead, channel, seq);
    if (ahead > 0) {
      for (let k = 0; k < count; k++) {
        const bit = (seq + k) & MESSAGE_MASK;
        b[ch + ChannelField.Bitmap + (bit >> 3)] |= 1 << (bit & 7);
      }
      writeHoldGapRecord(this.records, this.nextRecord(), slot, channel, seq, count);
      return;
    }
    let run = 0;
    for (let k = 0; k < count; k++) {
      const s = (seq + k) & 0xffff;
      const bit = s & MESSAGE_MASK;
      const at = ch + ChannelField.Bitmap + (bit >> 3);
      const mask = 1 << (bit & 7);
      if ((b[at] & mask) === 0) {
        run++;
        continue;
      }
      if (run > 0) writeSkipRecord(this.records, this.nextRecord(), slot, channel, (s - run) & 0xffff, run);
      run = 0;
      b[at] &= ~mask;
      writeReleaseRecord(this.records, this.nextRecord(), slot, channel, s);
    }
    const end = (seq + count) & 0xffff;
    if (run > 0) writeSkipRecord(this.records, this.nextRecord(), slot, channel, (end - run) & 0xffff, run);
    this.releaseFrom(slot, ch, channel, end);
  }

  /** Exactly-once window (like an anti-replay window): highest seen + bitmap of the last 1024. */
  private applyDedup(slot: number, ch: number, channel: number, seq: number, fragInfo: number, key: number, p: number, length: number): void {
    const v = this.view;
    const b = this.bytes;
    const highest = v.getUint32(ch + ChannelField.Base, true);
    const bit = seq & MESSAGE_MASK;
    if (sequenceGreaterThan(seq, highest)) {
      const advance = (seq - highest) & 0xffff;
      if (advance >= MESSAGE_WINDOW) b.fill(0, ch + ChannelField.Bitmap, ch + ChannelField.Bitmap + MESSAGE_WINDOW / 8);
      else
        for (let k = 1; k < advance; k++) {
          const c = (highest + k) & MESSAGE_MASK;
          b[ch + ChannelField.Bitmap + (c >> 3)] &= ~(1 << (c & 7));
        }
      v.setUint32(ch + ChannelField.Base, seq, true);
    } else {
      const age = (highest - seq) & 0xffff;
      if (age >= MESSAGE_WINDOW) return this.frameDrop(slot, DropReason.StaleMessage, channel, seq);
      if (b[ch + ChannelField.Bitmap + (bit >> 3)] & (1 << (bit & 7)))
        return this.frameDrop(slot, DropReason.DuplicateMessage, channel, seq);
    }
    b[ch + ChannelField.Bitmap + (bit >> 3)] |= 1 << (bit & 7);
    writeMessageRecord(this.records, this.nextRecord(), slot, channel, seq, fragInfo, key, p, length);
  }

  /** Newest-wins: a message id older than the newest delivered is stale. Fragments of the
   *  newest message (same id) pass; the host reassembles them. */
  private applySequenced(slot: number, ch: number, channel: number, seq: number, fragIndex: number, fragInfo: number, p: number, length: number): void {
    const v = this.view;
    const id = (seq - fragIndex) & 0xffff;
    const started = (v.getUint32(ch + ChannelField.Flags, true) & 1) !== 0;
    const newest = v.getUint32(ch + ChannelField.Base, true);
    if (started && !sequenceGreaterThan(id, newest)) {
      if (id !== newest) return this.frameDrop(slot, DropReason.StaleMessage, channel, seq);
      if (fragInfo === 0) return this.frameDrop(slot, DropReason.DuplicateMessage, channel, seq);
    }
    v.setUint32(ch + ChannelField.Base, id, true);
    v.setUint32(ch + ChannelField.Flags, 1, true);
    writeMessageRecord(this.records, this.nextRecord(), slot, channel, seq, fragInfo, 0, p, length);
  }

  private frameDrop(slot: number, reason: DropReason, channel: number, seq: number): void {
    this.counters[reason]++;
    writeFrameDroppedRecord(this.records, this.nextRecord(), slot, reason, channel, seq);
  }
}


/** PROTOCOL §1's body-length rule per packet type, from the ABI definition's table. */
export function bodyLengthValid(v: DataView, type: number, off: number, body: number): boolean {
  const fixed = PACKET_LENGTH_FIXED[type];
  switch (PACKET_LENGTH_RULE[type]) {
    case LengthRule.Exact:
      return body === fixed;
    case LengthRule.AtLeast:
      return body >= fixed;
    case LengthRule.UserData: {
      if (body < fixed) return false;
      const userDataLength = v.getUint16(off + PACKET_LENGTH_USER_DATA_AT[type], true);
      return userDataLength <= PACKET_LENGTH_USER_DATA_MAX[type] && body === fixed + userDataLength;
    }
    default:
      return false;
  }
}
