/**
 * The few most recently written one-frame messages of a channel that may be repeated in later
 * datagrams (internal to src/channels): `redundancy` copies on unreliable kinds, `piggyback`
 * copies on reliable kinds ("the previous packet is piggybacked on the next").
 *
 * Created on a channel's first write, only on channels configured with copies. Capacity is the
 * configured count (1..3), so a message leaves the ring when that many newer ones were written.
 * Copies reuse the message's own frame (same messageSeq): no wire change; the receiver's dedup
 * windows and newest-wins rules discard the copies it does not need.
 */
import type { OutMessage } from "./out-message.js";

/**
 * A message is repeated only while it is younger than this. At the 30-60 Hz rates where copies
 * pay off, 100 ms spans 3-6 send intervals, so every configured copy (at most 3) fits inside
 * it; older unreliable state has been replaced in any interpolation buffer by then, and an
 * older unacknowledged reliable frame is about to be resent by loss detection anyway. It also
 * keeps a channel that sends rarely (once a second) from attaching stale copies to unrelated
 * traffic. A time bound rather than an RTT multiple because the channel layer has no RTT.
 */
export const COPY_MAX_AGE_MS = 100;

/**
 * Copies are only made of messages whose messageSeq is within this distance of the channel's
 * next one: the receiver's duplicate window on `unreliable` channels is this wide
 * (receive-channel.ts), so a copy is always inside it when written.
 */
export const COPY_SEQ_WINDOW = 32;

export class CopyRing {
  /** Newest at `head - 1` (mod capacity). */
  private readonly messages: (OutMessage | undefined)[];
  private readonly writtenAt: number[];
  private readonly copies: number[];
  private readonly lastDatagram: number[];
  private head = 0;
  size = 0;
  /** Copies written from this ring, and their frame bytes (the channel's stats). */
  copiesSent = 0;
  copyBytes = 0;

  constructor(readonly capacity: number) {
    this.messages = new Array<OutMessage | undefined>(capacity).fill(undefined);
    this.writtenAt = new Array<number>(capacity).fill(0);
    this.copies = new Array<number>(capacity).fill(0);
    this.lastDatagram = new Array<number>(capacity).fill(-1);
  }

  /** Slot of the i-th newest entry (0 = newest), i < size. */
  slot(i: number): number {
    const s = this.head - 1 - i;
    return s < 0 ? s + this.capacity : s;
  }

  /**
   * Record that `m` was just written (first send, or a resend) in datagram `datagram`. If `m`
   * is already in the ring it becomes the newest again with its copy count reset. Returns the
   * message pushed out to make room, if any.
   */
  push(m: OutMessage, now: number, datagram: number): OutMessage | undefined {
    let evicted: OutMessage | undefined;
    const existing = this.indexOf(m);
    if (existing >= 0) {
      // Close the gap it leaves, then append it as the newest.
      for (let i = existing; i > 0; i--) this.move(this.slot(i - 1), this.slot(i));
      this.head = this.head === 0 ? this.capacity - 1 : this.head - 1;
      this.size--;
    } else if (this.size === this.capacity) {
      evicted = this.messages[this.slot(this.size - 1)];
      this.size--;
    }
    const s = this.head;
    this.messages[s] = m;
    this.writtenAt[s] = now;
    this.copies[s] = 0;
    this.lastDatagram[s] = datagram;
    this.head = s + 1 === this.capacity ? 0 : s + 1;
    this.size++;
    return evicted;
  }

  private move(from: number, to: number): void {
    this.messages[to] = this.messages[from];
    this.writtenAt[to] = this.writtenAt[from];
    this.copies[to] = this.copies[from];
    this.lastDatagram[to] = this.lastDatagram[from];
  }

  /** Position of `m` counted from the newest (0), or -1. */
  indexOf(m: OutMessage): number {
    for (let i = 0; i < this.size; i++) if (this.messages[this.slot(i)] === m) return i;
    return -1;
  }

  message(slot: number): OutMessage {
    return this.messages[slot]!;
  }
  writtenTime(slot: number): number {
    return this.writtenAt[slot];
  }
  copyCount(slot: number): number {
    return this.copies[slot];
  }
  datagramOf(slot: number): number {
    return this.lastDatagram[slot];
  }
  noteCopy(slot: number, datagram: number): void {
    this.copies[slot]++;
    this.lastDatagram[slot] = datagram;
  }

  /** Remove the oldest entry and return it (undefined when empty). */
  shiftOldest(): OutMessage | undefined {
    if (this.size === 0) return undefined;
    const s = this.slot(this.size - 1);
    const m = this.messages[s];
    this.messages[s] = undefined;
    this.size--;
    return m;
  }
}
