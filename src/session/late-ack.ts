/**
 * LATE_ACK (docs/PROTOCOL.md §3): acknowledgements of packets that arrived so far behind the
 * newest one received that no packet header can name them any more (a header acks its `ack`
 * and the 32 sequences before it). On a path whose jitter reorders datagrams, a fast flow sends
 * more than 33 packets in the spread of one-way delays: a packet held back that long arrives
 * outside every later header's ack bits, its sender never hears of it and declares it lost.
 *
 * Both halves live here:
 * - `LateArrivals` (receiver): the arrivals to report, each written into the next
 *   LATE_ACK_REPEATS packets sent (a lost report is made good by the next one, as a header's ack
 *   bits repeat each ack in 33 packets), as ranges of consecutive sequences;
 * - `LateAckReader` (sender): checks a frame (length, only sequences already sent, a bounded
 *   number per datagram) and lists the sequences it names, each once, for the session to
 *   acknowledge as it does a header's.
 *
 * The frame's bytes are src/wire/system.ts.
 */
import { sequenceGreaterThan } from "../engine/sequence.js";
import { LATE_ACK_RANGE_BYTES, readLateAckExtra, readLateAckFirst, SYSTEM_FRAME_HEAD, writeLateAckHead, writeLateAckRange } from "../wire/system.js";
/** How far behind the newest received an arrival is named by no header's ack bits. */
export const LATE_BEHIND = 33;
/** Ranges one LATE_ACK frame may carry. */
export const LATE_ACK_MAX_RANGES = 32;
/** Sequences the LATE_ACK frames of one datagram may name in all: a receiver remembers the
 *  last 256 sequences (PROTOCOL §2), so it cannot honestly name more. Bounds the work. */
export const LATE_ACK_MAX_PER_DATAGRAM = 256;
/** Packets each late arrival is reported in. */
export const LATE_ACK_REPEATS = 4;
/** Arrivals waiting to be reported; the oldest report is given up beyond this. */
const MAX_PENDING = LATE_ACK_MAX_RANGES;

/** Receiver side: the late arrivals still to be reported. */
export class LateArrivals {
  private readonly sequences: number[] = [];
  /** Reports left to send, per pending arrival. */
  private readonly left: number[] = [];
  /** Scratch: pending arrivals in order, newest first (indices into `sequences`). */
  private readonly order: number[] = [];

  get pending(): boolean {
    return this.sequences.length > 0;
  }

  /** Packet `sequence` arrived LATE_BEHIND or more behind the newest received. */
  add(sequence: number): void {
    if (this.sequences.length >= MAX_PENDING) {
      this.sequences.shift();
      this.left.shift();
    }
    this.sequences.push(sequence & 0xffff);
    this.left.push(LATE_ACK_REPEATS);
  }

  /**
   * Write a LATE_ACK frame into `bytes` at `at` (at most `room` bytes) naming the pending
   * arrivals, newest first, consecutive ones as one range; `newest` is the newest sequence
   * received (the sort key: every pending arrival is behind it). Returns the bytes written (0
   * if nothing is pending or the room holds no range).
   */
  write(bytes: Uint8Array, at: number, room: number, newest: number): number {
    const seqs = this.sequences;
    const count = seqs.length;
    if (count === 0 || room < SYSTEM_FRAME_HEAD + LATE_ACK_RANGE_BYTES) return 0;
    const order = this.order;
    order.length = 0;
    // Insertion sort by distance behind `newest` (at most MAX_PENDING entries).
    for (let i = 0; i < count; i++) {
      const d = (newest - seqs[i]) & 0xffff;
      let j = order.length;
      while (j > 0 && ((newest - seqs[order[j - 1]]) & 0xffff) > d) {
        order[j] = order[j - 1];
        j--;
      }
      order[j] = i;
    }
    const maxRanges = Math.min(LATE_ACK_MAX_RANGES, Math.floor((room - SYSTEM_FRAME_HEAD) / LATE_ACK_RANGE_BYTES));
    let ranges = 0;
    let k = 0;
    while (k < count && ranges < maxRanges) {
      // A run of consecutive sequences, from its newest (`top`) down.
      const top = seqs[order[k]];
      let low = top;
      this.left[order[k]]--;
      k++;
      while (k < count && seqs[order[k]] === ((low - 1) & 0xffff)) {
        low = seqs[order[k]];
        this.left[order[k]]--;
        k++;
      }
      writeLateAckRange(bytes, at, ranges, low, (top - low) & 0xffff); // < MAX_PENDING: fits the u8
      ranges++;
    }
    const length = writeLateAckHead(bytes, at, ranges);
    // Drop the arrivals reported often enough.
    let w = 0;
    for (let i = 0; i < count; i++) {
      if (this.left[i] <= 0) continue;
      seqs[w] = seqs[i];
      this.left[w] = this.left[i];
      w++;
    }
    seqs.length = w;
    this.left.length = w;
    return length;
  }
}

/** Dedup memory of the sequences already named (a report repeats in several packets). */
const SEEN_SLOTS = 256;
/** A remembered sequence counts as named again only while this close to the send point (the
 *  sequence space wraps; a repeat comes within a few packets). */
const SEEN_SPAN = 1024;

/** Sender side: reads LATE_ACK frames. */
export class LateAckReader {
  /** What the LATE_ACK frames of the datagram being read may still name. */
  budget = LATE_ACK_MAX_PER_DATAGRAM;
  /** The sequences the last read() named for the first time. */
  readonly named = new Int32Array(LATE_ACK_MAX_PER_DATAGRAM);
  private readonly seen = new Int32Array(SEEN_SLOTS).fill(-1);
  private readonly seenAt = new Int32Array(SEEN_SLOTS);
  /** Frames refused as malformed (counted by the session as invalid drops too). */
  refused = 0;

  /** A new datagram: its LATE_ACK frames may name LATE_ACK_MAX_PER_DATAGRAM sequences. */
  startDatagram(): void {
    this.budget = LATE_ACK_MAX_PER_DATAGRAM;
  }

  /**
   * Check the LATE_ACK payload at `arena[offset]` (`length` bytes, type byte included) against
   * `newestSent`, the newest sequence this side has sent (-1: none). Returns how many sequences
   * it names for the first time (in `named`), or -1 if the frame is refused: a length that is
   * not 1 + 3 x (1..LATE_ACK_MAX_RANGES), a range reaching a sequence not sent yet, or more
   * sequences than the datagram's budget. A refused frame acknowledges nothing.
   */
  read(arena: Uint8Array, offset: number, length: number, newestSent: number): number {
    const body = length - 1;
    const ranges = body / LATE_ACK_RANGE_BYTES;
    if (newestSent < 0 || body < LATE_ACK_RANGE_BYTES || body % LATE_ACK_RANGE_BYTES !== 0 || ranges > LATE_ACK_MAX_RANGES) return this.refuse();
    const next = (newestSent + 1) & 0xffff;
    let total = 0;
    for (let r = 0; r < ranges; r++) {
      const extra = readLateAckExtra(arena, offset, r);
      const last = (readLateAckFirst(arena, offset, r) + extra) & 0xffff;
      if (!sequenceGreaterThan(next, last)) return this.refuse();
      total += extra + 1;
    }
    if (total > this.budget) return this.refuse();
    this.budget -= total;
    let n = 0;
    for (let r = 0; r < ranges; r++) {
      const first = readLateAckFirst(arena, offset, r);
      const extra = readLateAckExtra(arena, offset, r);
      for (let i = 0; i <= extra; i++) {
        const sequence = (first + i) & 0xffff;
        const slot = sequence & (SEEN_SLOTS - 1);
        if (this.seen[slot] === sequence && ((next - this.seenAt[slot]) & 0xffff) <= SEEN_SPAN) continue;
        this.seen[slot] = sequence;
        this.seenAt[slot] = next;
        this.named[n++] = sequence;
      }
    }
    return n;
  }

  private refuse(): number {
    this.refused++;
    return -1;
  }
}
