/**
 * DeliveryNotificationManager (Multiplayer Game Programming's, after the Starsiege: Tribes connection manager):
 * per outgoing packet sequence an in-flight record (time sent, size, and the application's own
 * "transmission data" T: what it wrote into that packet). When the packet is acknowledged the
 * record is reported delivered; when it is judged lost it is reported dropped. Each record is
 * reported exactly once, so the sender module decides what (if anything) to resend — nothing is
 * retransmitted at this level, and packet sequences are never reused.
 *
 * Counters: dispatched == delivered + dropped + inFlight, always.
 *
 * Loss is declared by `detectLosses(now, timeoutMs)`:
 *  - packet threshold: a packet sent at least `packetThreshold` (default 3) sequences before the
 *    newest acknowledged one is lost (RFC 9002 §6.1.1, kPacketThreshold = 3: tolerates mild
 *    reordering, yet reacts within one round trip);
 *  - timeout: a packet in flight for `timeoutMs` or longer is lost (the caller passes its
 *    retransmission timeout, e.g. RFC 6298 RTO with backoff; the book's ProcessTimedOutPackets).
 * An ack that arrives after its packet was declared lost is counted in `lateAcks` and otherwise
 * ignored (the record was already reported).
 *
 * Storage is a ring indexed by `sequence % size` (a sequence buffer): one flat array of
 * numbers and one of references, interleaved per slot. The ring starts at `initialCapacity` slots and doubles when a packet
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
  /** Slots allocated at first (power of two, <= capacity). Default min(8, capacity): most
   *  connections keep a few packets in flight, so most rings never grow. */
  initialCapacity?: number;
}

import { sequenceGreaterThan } from "../engine/sequence.js";

const EMPTY = -1;
/** Per-slot numbers, interleaved: sequence (EMPTY if free), send time, size. */
const NUM_STRIDE = 3;
const SEQ = 0;
const SENT = 1;
const SIZE = 2;
/** Per-slot references, interleaved: the packet's T, the sender's optional record. */
const REF_STRIDE = 2;
const DATA = 0;
const RECORD = 1;

export class DeliveryNotificationManager<T, R = unknown> {
  // Fields in the order an ack reads them: with many connections the manager is cold when its
  // packet's ack arrives, and the fields an ack needs then fit in one or two cache lines.
  /** Current ring size - 1 (the ring grows up to `capacity`). */
  private mask: number;
  /**
   * The ring as two interleaved arrays, so one packet's state is one or two cache lines: with a
   * thousand connections each ack touches cold memory, and five parallel arrays (typed arrays
   * over 64 bytes keep their storage off the JS heap) cost about five misses per packet.
   * `nums` is a plain array of doubles (NUM_STRIDE per slot), `refs` holds T and the sender's
   * optional second record per packet (the session keeps its congestion controller's record
   * there: no map from sequence to record beside the ring).
   */
  private nums: number[];
  private refs: unknown[];
  private largestAcked = -1;
  /** Bytes of the packets currently in flight. */
  bytesInFlight = 0;
  private inFlightCount = 0;
  delivered = 0;
  private readonly handler: DeliveryHandler<T, R>;
  /** Sequence of the oldest record that may still be in flight (scan start). */
  private oldest = 0;
  /** Sequence expected by the next dispatch, or -1 before the first. */
  private next = -1;
  dispatched = 0;
  dropped = 0;
  /** Acks for packets already reported dropped (spurious loss declarations). */
  lateAcks = 0;
  private readonly capacity: number;
  /** The configured packet threshold, and the one in force (widened by reordering seen). */
  private readonly basePacketThreshold: number;
  private packetThreshold: number;

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
    this.basePacketThreshold = Math.max(1, options.packetThreshold ?? 3);
    this.packetThreshold = this.basePacketThreshold;
    this.nums = emptyNums(initial);
    this.refs = emptyRefs(initial);
  }

  /** Double the ring (up to capacity), moving the in-flight records to their new slots. */
  private grow(): void {
    const size = (this.mask + 1) * 2;
    const mask = size - 1;
    const nums = emptyNums(size);
    const refs = emptyRefs(size);
    for (let i = 0; i <= this.mask; i++) {
      const from = i * NUM_STRIDE;
      const sequence = this.nums[from + SEQ];
      if (sequence === EMPTY) continue;
      // In-flight sequences span fewer than the old size, so they stay distinct in the new ring.
      const j = sequence & mask;
      const to = j * NUM_STRIDE;
      nums[to + SEQ] = sequence;
      nums[to + SENT] = this.nums[from + SENT];
      nums[to + SIZE] = this.nums[from + SIZE];
      refs[j * REF_STRIDE + DATA] = this.refs[i * REF_STRIDE + DATA];
      refs[j * REF_STRIDE + RECORD] = this.refs[i * REF_STRIDE + RECORD];
    }
    this.mask = mask;
    this.nums = nums;
    this.refs = refs;
  }

  /** The sequence of the newest dispatch, or -1 before the first. */
  get newestDispatched(): number {
    return this.next === -1 ? -1 : (this.next - 1) & 0xffff;
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
    return this.nums[(this.oldest & this.mask) * NUM_STRIDE + SENT];
  }

  /**
   * Sequence of the oldest in-flight packet dispatched with a record, or -1 if none. Scans from
   * the oldest in-flight packet: packets without a record (a session's pure acks) are few.
   */
  oldestRecordedSequence(): number {
    if (this.inFlightCount === 0 || this.next === -1) return -1;
    this.skipSettled();
    const mask = this.mask;
    const nums = this.nums;
    for (let sequence = this.oldest; sequence !== this.next; sequence = (sequence + 1) & 0xffff) {
      const slot = sequence & mask;
      if (nums[slot * NUM_STRIDE + SEQ] === sequence && this.refs[slot * REF_STRIDE + RECORD] !== undefined) return sequence;
    }
    return -1;
  }

  /** True if some packet in flight has data passing `test`. A scan of the ring: for rare checks
   *  (a lingering close), not for the per-packet path. */
  someInFlight(test: (data: T) => boolean): boolean {
    if (this.inFlightCount === 0 || this.next === -1) return false;
    this.skipSettled();
    const mask = this.mask;
    for (let sequence = this.oldest; sequence !== this.next; sequence = (sequence + 1) & 0xffff) {
      const slot = sequence & mask;
      if (this.nums[slot * NUM_STRIDE + SEQ] === sequence && test(this.refs[slot * REF_STRIDE + DATA] as T)) return true;
    }
    return false;
  }

  /** Send time of in-flight packet `sequence` (as returned by oldestRecordedSequence). */
  sentTimeOf(sequence: number): number {
    return this.nums[(sequence & this.mask) * NUM_STRIDE + SENT];
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
    while (this.nums[slot * NUM_STRIDE + SEQ] !== EMPTY && this.mask + 1 < this.capacity) {
      this.grow();
      slot = sequence & this.mask;
    }
    if (this.nums[slot * NUM_STRIDE + SEQ] !== EMPTY) {
      // Ring full: the record being overwritten is `capacity` packets old. Report it dropped.
      this.drop(slot, now);
    }
    const n = slot * NUM_STRIDE;
    const nums = this.nums;
    nums[n + SEQ] = sequence;
    nums[n + SENT] = now;
    nums[n + SIZE] = bytes;
    this.refs[slot * REF_STRIDE + DATA] = data;
    this.refs[slot * REF_STRIDE + RECORD] = record;
    this.next = (sequence + 1) & 0xffff;
    this.dispatched++;
    this.inFlightCount++;
    this.bytesInFlight += bytes;
  }

  /**
   * The peer acknowledged `sequence` (e.g. an engine Settled record). Reports it delivered
   * if it was in flight. Returns true if it was newly delivered.
   */
  acknowledge(sequence: number, now: number): boolean {
    sequence &= 0xffff;
    const slot = sequence & this.mask;
    if (this.nums[slot * NUM_STRIDE + SEQ] !== sequence) {
      if (this.next !== -1 && sequenceDistance(this.next, sequence) <= this.capacity) this.lateAcks++;
      return false;
    }
    if (this.largestAcked === -1 || sequenceGreaterThan(sequence, this.largestAcked)) this.largestAcked = sequence;
    const data = this.refs[slot * REF_STRIDE + DATA] as T;
    const record = this.refs[slot * REF_STRIDE + RECORD] as R | undefined;
    const sentTime = this.nums[slot * NUM_STRIDE + SENT];
    this.release(slot);
    this.delivered++;
    this.handler.onDelivered(sequence, data, sentTime, now, record);
    return true;
  }

  /**
   * Report lost every in-flight packet that was sent before the newest acknowledged packet (by
   * sequence, not by send time) and is either `packetThreshold` sequences behind it or at least
   * `timeThresholdMs` old (RFC 9002 §6.1.1 and §6.1.2), and every other one older than
   * `timeoutMs` (RTO; with no time threshold, Infinity, every one older than that). "Before" is by sequence because packets sent in one driver pass share one `now`: a
   * send-time comparison would declare the rest of a burst lost as soon as its first packet is
   * acknowledged, and each such declaration becomes a duplicate at the receiver.
   */
  detectLosses(now: number, timeoutMs: number, timeThresholdMs = Infinity): number {
    let lost = 0;
    while (this.inFlightCount > 0) {
      this.skipSettled();
      const slot = this.oldest & this.mask;
      const sequence = this.oldest;
      const age = now - this.nums[slot * NUM_STRIDE + SENT];
      const beforeLargest = this.largestAcked !== -1 && sequenceGreaterThan(this.largestAcked, sequence);
      const byThreshold =
        beforeLargest && (((this.largestAcked - sequence) & 0xffff) >= this.packetThreshold || age >= timeThresholdMs);
      // A packet sent before an acknowledged one is judged by the thresholds alone (while the
      // time threshold is known): on a reordering path the time threshold waits longer than
      // the RTO, and the RTO would still declare the late packets lost.
      const byTimeout = age >= timeoutMs && !(beforeLargest && timeThresholdMs !== Infinity);
      if (!byThreshold && !byTimeout) break;
      this.drop(slot, now);
      lost++;
    }
    return lost;
  }

  /**
   * Reordering seen: a packet declared lost `distance` sequences behind a newer acknowledged
   * one was acknowledged after all. Packets that far behind are not declared lost by the
   * packet threshold from now on (RFC 8985's adaptive reordering window; Linux's
   * tp->reordering), up to `max`; the time threshold still applies.
   */
  widenPacketThreshold(distance: number, max: number): void {
    const want = Math.min(max, distance + 1);
    if (want > this.packetThreshold) this.packetThreshold = want;
  }

  /** Back to the configured packet threshold (no reordering seen for a while). */
  resetPacketThreshold(): void {
    this.packetThreshold = this.basePacketThreshold;
  }

  /** The packet threshold in force. */
  get currentPacketThreshold(): number {
    return this.packetThreshold;
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
    const nums = this.nums;
    while (nums[(this.oldest & this.mask) * NUM_STRIDE + SEQ] !== this.oldest) {
      this.oldest = (this.oldest + 1) & 0xffff;
    }
  }

  private drop(slot: number, now: number): void {
    const sequence = this.nums[slot * NUM_STRIDE + SEQ];
    const data = this.refs[slot * REF_STRIDE + DATA] as T;
    const record = this.refs[slot * REF_STRIDE + RECORD] as R | undefined;
    const sentTime = this.nums[slot * NUM_STRIDE + SENT];
    this.release(slot);
    this.dropped++;
    this.handler.onDropped(sequence, data, sentTime, now, record);
  }

  private release(slot: number): void {
    const n = slot * NUM_STRIDE;
    this.nums[n + SEQ] = EMPTY;
    this.refs[slot * REF_STRIDE + DATA] = undefined;
    this.refs[slot * REF_STRIDE + RECORD] = undefined;
    this.bytesInFlight -= this.nums[n + SIZE];
    this.inFlightCount--;
  }
}

/** `size` free slots' references. Pushed, not `new Array(n).fill()`: a packed array needs no
 *  hole checks on each read. */
function emptyRefs(size: number): unknown[] {
  const refs: unknown[] = [];
  for (let i = 0; i < size * REF_STRIDE; i++) refs.push(undefined);
  return refs;
}

/**
 * `size` free slots' numbers. Starts from a literal holding a fraction so V8 keeps the elements
 * as unboxed doubles (send times are fractional) from the first store, with no later transition.
 */
function emptyNums(size: number): number[] {
  const nums = [0.5];
  nums.length = 0;
  for (let i = 0; i < size; i++) nums.push(EMPTY, 0, 0);
  return nums;
}

/** How far a is ahead of b, 0..65535. */
function sequenceDistance(a: number, b: number): number {
  return (a - b) & 0xffff;
}
