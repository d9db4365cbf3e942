/**
 * LATE_ACK (docs/PROTOCOL.md §3): acknowledgements of packets that arrived so far behind the
 * newest one received that no packet header can name them any more (a header acks its `ack`
 * and the 32 sequences before it). On a path whose jitter reorders datagrams, a fast flow sends
 * more than 33 packets in the spread of one-way delays: a packet held back that long arrives
 * outside every later header's ack bits, its sender never hears of it and declares it lost.
 *
 * The two halves:
 * - `LateArrivals` (receiver, ./late-arrivals.ts): the arrivals to report, each written into
 *   the next LATE_ACK_REPEATS packets sent (a lost report is made good by the next one, as a
 *   header's ack bits repeat each ack in 33 packets), as ranges of consecutive sequences;
 * - `LateAckReader` (sender, here): checks a frame (length, only sequences already sent, a bounded
 *   number per datagram) and lists the sequences it names, each once, for the session to
 *   acknowledge as it does a header's.
 *
 * The frame's bytes are src/wire/system.ts.
 */
import { sequenceGreaterThan } from "../engine/sequence.js";
import { LATE_ACK_RANGE_BYTES, readLateAckExtra, readLateAckFirst } from "../wire/system.js";
/** How far behind the newest received an arrival is named by no header's ack bits. */
export const LATE_BEHIND = 33;
/** Ranges one LATE_ACK frame may carry. */
export const LATE_ACK_MAX_RANGES = 32;
/** Sequences the LATE_ACK frames of one datagram may name in all: a receiver remembers the
 *  last 256 sequences (PROTOCOL §2), so it cannot honestly name more. Bounds the work. */
export const LATE_ACK_MAX_PER_DATAGRAM = 256;
/** Packets each late arrival is reported in. */
export const LATE_ACK_REPEATS = 4;
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
