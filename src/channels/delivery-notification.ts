/**
 * DeliveryNotificationManager (seed 001, after the Starsiege: Tribes connection manager):
 * per outgoing packet sequence an in-flight record (time sent, size, and the application's own
 * "transmission data" T: what it wrote into that packet). When the packet is acknowledged the
 * record is reported delivered; when it is judged lost it is reported dropped. Each record is
 * reported exactly once, so the sender module decides what (if anything) to resend — nothing is
 * retransmitted at this level, and packet sequences are never reused (seed 002).
 *
 * Counters: dispatched == delivered + dropped + inFlight, always.
 *
 * Loss is declared by `detectLosses(now, timeoutMs)`:
 *  - packet threshold: a packet sent at least `packetThreshold` (default 3) sequences before the
 *    newest acknowledged one is lost (RFC 9002 §6.1.1, kPacketThreshold = 3: tolerates mild
 *    reordering, yet reacts within one round trip);
 *  - timeout: a packet in flight for `timeoutMs` or longer is lost (the caller passes its
 *    retransmission timeout, e.g. RFC 6298 RTO with backoff; seed 001's ProcessTimedOutPackets).
 * An ack that arrives after its packet was declared lost is counted in `lateAcks` and otherwise
 * ignored (the record was already reported).
 *
 * Storage is a ring indexed by `sequence % size` (seed 002's sequence buffer): flat typed arrays
 * plus one array of T. The ring starts at `initialCapacity` slots and doubles when a packet
 * would land on a slot still in flight, up to `capacity`; most connections keep a few packets in
 * flight, so most rings stay small. Packets must be dispatched in sequence order (each one the
 * previous + 1, mod 65536), which is what a packet layer does. If more than `capacity` packets
 * are in flight, the oldest is reported dropped to make room.
 *
 * Public so applications that build their own replication on raw packets can use it.
 */

export interface DeliveryHandler<T, R = unknown> {
  /** The packet `sequence` carrying `data` was acknowledged at `now` (sent at `sentTime`).
   *  `record`: what was passed to dispatch() beside `data`, if anything. */
  onDelivered(sequence: number, data: T, sentTime: number, now: number, record: R | undefined): void;
  /** The packet `sequence` carrying `data` is considered lost. */
  onDropped(sequence: number, data: T, sentTime: number, now: number, record: R | undefined): void;
}

export interface DeliveryNotificationOptions {
  /** Ring size, power of two, >= 64. Default 1024. */
  capacity?: number;
  /** Sequences behind the newest ack at which a packet is lost. Default 3. */
  packetThreshold?: number;
  /** Slots allocated at first (power of two, <= capacity). Default min(8, capacity): 8 float64 send
   *  times fit in V8's on-heap typed-array limit (64 bytes), so an idle ring has no ArrayBuffer. */
  initialCapacity?: number;
}

import { sequenceGreaterThan } from "../engine/sequence.js";

const EMPTY = -1;

export class DeliveryNotificationManager<T, R = unknown> {
  dispatched = 0;
  delivered = 0;
  dropped = 0;
  /** Acks for packets already reported dropped (spurious loss declarations). */
  lateAcks = 0;
  /** Bytes of the packets currently in flight. */
  bytesInFlight = 0;

  private readonly handler: DeliveryHandler<T, R>;
  /** Current ring size - 1 (the ring grows up to `capacity`). */
  private mask: number;
  private readonly capacity: number;
  private readonly packetThreshold: number;
  private sequences: Int32Array;
  private sentTimes: Float64Array;
  private sizes: Int32Array;
  private data: (T | undefined)[];
  /** The sender's optional second record per packet (the session keeps its congestion
   *  controller's record here: no map from sequence to record beside the ring). */
  private records: (R | undefined)[];
  /** Sequence of the oldest record that may still be in flight (scan start). */
  private oldest = 0;
  /** Sequence expected by the next dispatch, or -1 before the first. */
  private next = -1;
  private largestAcked = -1;
  private inFlightCount = 0;

  constructor(handler: DeliveryHandler<T, R>, options: DeliveryNotificationOptions = {}) {
    const capacity = options.capacity ?? 1024;
    if (!Number.isInteger(capacity) || capacity < 64 || (capacity & (capacity - 1)) !== 0 || capacity > 32768) {
      throw new RangeError(`DeliveryNotificationManager capacity must be a power of two in 64..32768, got ${capacity}`);
    }
    const initial = options.initialCapacity ?? Math.min(8, capacity);
    if (!Number.isInteger(initial) || initial < 1 || (initial & (initial - 1)) !== 0 || initial > capacity) {
      throw new RangeError(`DeliveryNotificationManager initialCapacity must be a power of two in 1..capacity, got ${initial}`);
    }
    this.handler = handler;
    this.capacity = capacity;
    this.mask = initial - 1;
    this.packetThreshold = Math.max(1, options.packetThreshold ?? 3);
    this.sequences = new Int32Array(initial).fill(EMPTY);
    this.sentTimes = new Float64Array(initial);
    this.sizes = new Int32Array(initial);
    this.data = new Array<T | undefined>(initial).fill(undefined);
    this.records = new Array<R | undefined>(initial).fill(undefined);
  }

  /** Double the ring (up to capacity), moving the in-flight records to their new slots. */
  private grow(): void {
    const size = (this.mask + 1) * 2;
    const mask = size - 1;
    const sequences = new Int32Array(size).fill(EMPTY);
    const sentTimes = new Float64Array(size);
    const sizes = new Int32Array(size);
    const data = new Array<T | undefined>(size).fill(undefined);
    const records = new Array<R | undefined>(size).fill(undefined);
    for (let i = 0; i <= this.mask; i++) {
      const sequence = this.sequences[i];
      if (sequence === EMPTY) continue;
      // In-flight sequences span fewer than the old size, so they stay distinct in the new ring.
      const j = sequence & mask;
      sequences[j] = sequence;
      sentTimes[j] = this.sentTimes[i];
      sizes[j] = this.sizes[i];
      data[j] = this.data[i];
      records[j] = this.records[i];
    }
    this.mask = mask;
    this.sequences = sequences;
    this.sentTimes = sentTimes;
    this.sizes = sizes;
    this.data = data;
    this.records = records;
  }

  /** The newest acknowledged sequence, or -1 before any ack. */
  get largestAckedSequence(): number {
    return this.largestAcked;
  }

  get inFlight(): number {
    return this.inFlightCount;
  }

  /** Time the oldest in-flight packet was sent (to arm a loss timer), or undefined. */
  oldestSentTime(): number | undefined {
    this.skipSettled();
    if (this.inFlightCount === 0) return undefined;
    return this.sentTimes[this.oldest & this.mask];
  }

  /**
   * Sequence of the oldest in-flight packet dispatched with a record, or -1 if none. Scans from
   * the oldest in-flight packet: packets without a record (a session's pure acks) are few.
   */
  oldestRecordedSequence(): number {
    if (this.inFlightCount === 0 || this.next === -1) return -1;
    this.skipSettled();
    const mask = this.mask;
    for (let sequence = this.oldest; sequence !== this.next; sequence = (sequence + 1) & 0xffff) {
      const slot = sequence & mask;
      if (this.sequences[slot] === sequence && this.records[slot] !== undefined) return sequence;
    }
    return -1;
  }

  /** Send time of in-flight packet `sequence` (as returned by oldestRecordedSequence). */
  sentTimeOf(sequence: number): number {
    return this.sentTimes[sequence & this.mask];
  }

  /** Record that packet `sequence` (16-bit) of `bytes` bytes carrying `data` left at `now`.
   *  `record` (optional) is handed back with `data` when the packet settles. */
  dispatch(sequence: number, now: number, bytes: number, data: T, record?: R): void {
    sequence &= 0xffff;
    if (this.next !== -1 && sequence !== this.next) {
      throw new RangeError(`DeliveryNotificationManager: dispatch out of order (expected ${this.next}, got ${sequence})`);
    }
    if (this.next === -1) this.oldest = sequence;
    let slot = sequence & this.mask;
    while (this.sequences[slot] !== EMPTY && this.mask + 1 < this.capacity) {
      this.grow();
      slot = sequence & this.mask;
    }
    if (this.sequences[slot] !== EMPTY) {
      // Ring full: the record being overwritten is `capacity` packets old. Report it dropped.
      this.drop(slot, now);
    }
    this.sequences[slot] = sequence;
    this.sentTimes[slot] = now;
    this.sizes[slot] = bytes;
    this.data[slot] = data;
    this.records[slot] = record;
    this.next = (sequence + 1) & 0xffff;
    this.dispatched++;
    this.inFlightCount++;
    this.bytesInFlight += bytes;
  }

  /**
   * The peer acknowledged `sequence` (e.g. an engine PacketAcked record). Reports it delivered
   * if it was in flight. Returns true if it was newly delivered.
   */
  acknowledge(sequence: number, now: number): boolean {
    sequence &= 0xffff;
    const slot = sequence & this.mask;
    if (this.sequences[slot] !== sequence) {
      if (this.next !== -1 && sequenceDistance(this.next, sequence) <= this.capacity) this.lateAcks++;
      return false;
    }
    if (this.largestAcked === -1 || sequenceGreaterThan(sequence, this.largestAcked)) this.largestAcked = sequence;
    const data = this.data[slot] as T;
    const record = this.records[slot];
    const sentTime = this.sentTimes[slot];
    this.release(slot);
    this.delivered++;
    this.handler.onDelivered(sequence, data, sentTime, now, record);
    return true;
  }

  /**
   * Report lost every in-flight packet that is older than `timeoutMs` (RTO), or that was sent
   * before the newest acknowledged packet (by sequence, not by send time) and is either
   * `packetThreshold` sequences behind it or at least `timeThresholdMs` old (RFC 9002 §6.1.1 and
   * §6.1.2). "Before" is by sequence because packets sent in one driver pass share one `now`: a
   * send-time comparison would declare the rest of a burst lost as soon as its first packet is
   * acknowledged (measured on loopback: declared losses = receiver duplicates).
   */
  detectLosses(now: number, timeoutMs: number, timeThresholdMs = Infinity): number {
    let lost = 0;
    while (this.inFlightCount > 0) {
      this.skipSettled();
      const slot = this.oldest & this.mask;
      const sequence = this.oldest;
      const age = now - this.sentTimes[slot];
      const beforeLargest = this.largestAcked !== -1 && sequenceGreaterThan(this.largestAcked, sequence);
      const byThreshold =
        beforeLargest && (((this.largestAcked - sequence) & 0xffff) >= this.packetThreshold || age >= timeThresholdMs);
      const byTimeout = age >= timeoutMs;
      if (!byThreshold && !byTimeout) break;
      this.drop(slot, now);
      lost++;
    }
    return lost;
  }

  /** Report every in-flight packet dropped (connection closed). */
  dropAll(now: number): void {
    while (this.inFlightCount > 0) {
      this.skipSettled();
      this.drop(this.oldest & this.mask, now);
    }
  }

  /** Advance `oldest` over slots that are already settled (acked or dropped). */
  private skipSettled(): void {
    if (this.inFlightCount === 0 || this.next === -1) return;
    while (this.sequences[this.oldest & this.mask] !== this.oldest) {
      this.oldest = (this.oldest + 1) & 0xffff;
    }
  }

  private drop(slot: number, now: number): void {
    const sequence = this.sequences[slot];
    const data = this.data[slot] as T;
    const record = this.records[slot];
    const sentTime = this.sentTimes[slot];
    this.release(slot);
    this.dropped++;
    this.handler.onDropped(sequence, data, sentTime, now, record);
  }

  private release(slot: number): void {
    this.sequences[slot] = EMPTY;
    this.data[slot] = undefined;
    this.records[slot] = undefined;
    this.bytesInFlight -= this.sizes[slot];
    this.inFlightCount--;
  }
}

/** How far a is ahead of b, 0..65535. */
function sequenceDistance(a: number, b: number): number {
  return (a - b) & 0xffff;
}
