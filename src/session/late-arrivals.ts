/**
 * The receiver's half of LATE_ACK (./late-ack.ts, docs/PROTOCOL.md §3): the arrivals that came
 * LATE_BEHIND or more behind the newest received, each reported in the next LATE_ACK_REPEATS
 * packets sent, as ranges of consecutive sequences.
 */
import { LATE_ACK_RANGE_BYTES, SYSTEM_FRAME_HEAD, writeLateAckHead, writeLateAckRange } from "../wire/system.js";
import { LATE_ACK_MAX_RANGES, LATE_ACK_REPEATS, LATE_BEHIND } from "./late-ack.js";

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
