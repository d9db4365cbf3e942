/**
 * The host's side of a connection's sent-packet ring. The ring itself lives in the engine's
 * slot memory (assembly/sent-ring.ts): each packet's sequence, size, send time and state, the
 * ack scan that settles it, loss detection. What each packet carried (the channels'
 * PacketContents, the congestion controller's SentPacket) stays here, in a JS ring indexed by
 * sequence, and goes to the DeliveryHandler when the engine settles the packet: a Settled
 * record (acked in flight, or a late ack after it was declared lost), or a lost list from
 * detectLosses, dropAll or evictNext.
 *
 * The JS ring starts at INITIAL_SLOTS and doubles when a packet would land on one still in
 * flight, up to PACKET_WINDOW (the engine's ring, which evictNext keeps from overflowing): a
 * light flow keeps a few packets in flight and never grows it.
 */
import type { DeliveryHandler, PacketContents } from "../channels/index.js";
import type { SentPacket } from "../congestion/controller.js";
import { PACKET_WINDOW, SENT_ELICITING, SettleOutcome, SlotField, WINDOW_ENTRY_PRESENT, type Engine } from "../engine/abi.js";

const INITIAL_SLOTS = 8;
/** Per JS-ring slot: the packet's contents, then the controller's record (or undefined). */
const REF_STRIDE = 2;

export class SentRing {
  /** The engine's memory as u32s (shared by every connection), and where the slot's head and
   *  sent ring start in it. */
  private readonly u32: Uint32Array;
  private readonly head: number;
  private readonly ring: number;
  /** The slot's send times: a view of its own, read per settled packet (the memory never
   *  grows, so it never detaches). */
  private readonly times: Float64Array;
  private refs: unknown[];
  private mask = INITIAL_SLOTS - 1;

  constructor(
    private readonly engine: Engine,
    private readonly slot: number,
    private readonly handler: DeliveryHandler<PacketContents, SentPacket>,
  ) {
    const base = engine.layout.slotOffset + slot * engine.layout.slotStride;
    const buffer = engine.bytes.buffer;
    this.u32 = engine.u32;
    this.head = base >> 2;
    this.ring = (base + SlotField.SentWindow) >> 2;
    this.times = new Float64Array(buffer, base + SlotField.SentTimes, PACKET_WINDOW);
    this.refs = emptyRefs(INITIAL_SLOTS);
  }

  /** Packets in flight (sealed, neither acked nor declared lost). */
  get inFlight(): number {
    return this.u32[this.head + (SlotField.InFlight >> 2)];
  }

  get dispatched(): number {
    return this.u32[this.head + (SlotField.Dispatched >> 2)];
  }

  get delivered(): number {
    return this.u32[this.head + (SlotField.Delivered >> 2)];
  }

  get dropped(): number {
    return this.u32[this.head + (SlotField.Dropped >> 2)];
  }

  /** The sequence of the newest sealed packet, or -1 before the first. */
  get newestDispatched(): number {
    return this.dispatched === 0 ? -1 : (this.u32[this.head + (SlotField.NextSendSequence >> 2)] - 1) & 0xffff;
  }

  /** The newest sequence acknowledged while in flight, or -1 before any. */
  get largestAckedSequence(): number {
    const v = this.u32[this.head + (SlotField.LargestAcked >> 2)];
    return v === 0 ? -1 : v & 0xffff;
  }

  /** Send time of a packet in flight (as oldestRecordedSequence returns), or of one just settled. */
  sentTimeOf(sequence: number): number {
    return this.times[sequence & (PACKET_WINDOW - 1)];
  }

  /**
   * Sequence of the oldest ack-eliciting packet in flight (where the RTO runs from), or -1: a
   * read of the engine's ring from its scan start. Every packet in flight lies in the
   * PACKET_WINDOW sequences before the next one, so the walk starts no further back.
   */
  oldestRecordedSequence(): number {
    return oldestEliciting(this.u32, this.head, this.ring);
  }

  /**
   * Before sealing: if the next packet's engine entry still holds one in flight (PACKET_WINDOW
   * packets old), that one is declared lost to make room.
   */
  makeRoom(now: number): void {
    const old = (this.u32[this.head + (SlotField.NextSendSequence >> 2)] - PACKET_WINDOW) & 0xffff;
    const entry = this.u32[this.ring + (old & (PACKET_WINDOW - 1))];
    if ((entry & (WINDOW_ENTRY_PRESENT | 0xffff)) !== (WINDOW_ENTRY_PRESENT | old)) return;
    const sequence = this.engine.evictNext(this.slot);
    if (sequence >= 0) this.handOver(sequence, now, false);
  }

  /** The engine sealed `sequence` (sealData): keep what it carried until it settles. */
  onSealed(sequence: number, contents: PacketContents, record: SentPacket | undefined): void {
    let at = (sequence & this.mask) * REF_STRIDE;
    while (this.refs[at] !== undefined) {
      this.grow(sequence);
      at = (sequence & this.mask) * REF_STRIDE;
    }
    this.refs[at] = contents;
    this.refs[at + 1] = record;
  }

  /** A Settled record (or acknowledge): hands an acked packet to the handler. True if it was
   *  acked in flight, false for a late ack. */
  settle(now: number, sequence: number, outcome: SettleOutcome): boolean {
    if (outcome !== SettleOutcome.Acked) return false;
    this.handOver(sequence, now, true);
    return true;
  }

  /** An ack from outside the headers (a LATE_ACK frame). */
  acknowledge(sequence: number): SettleOutcome {
    return this.engine.acknowledge(this.slot, sequence);
  }

  /** Declare lost what the thresholds or the RTO say is (Engine.detectLosses). Returns how many. */
  detectLosses(now: number, timeoutMs: number, timeThresholdMs: number, packetThreshold: number): number {
    return this.takeLost(now, this.engine.detectLosses(this.slot, now, timeoutMs, timeThresholdMs, packetThreshold));
  }

  /** Report every packet in flight lost (the connection closed): all are past a timeout of
   *  -Infinity. */
  dropAll(now: number): void {
    if (this.inFlight > 0) this.takeLost(now, this.engine.detectLosses(this.slot, now, -Infinity, Infinity, 1));
  }

  /** True if some packet in flight carries contents passing `test`. A scan of the ring: for
   *  rare checks (a lingering close), not for the per-packet path. */
  someInFlight(test: (contents: PacketContents) => boolean): boolean {
    const refs = this.refs;
    for (let i = 0; i < refs.length; i += REF_STRIDE) if (refs[i] !== undefined && test(refs[i] as PacketContents)) return true;
    return false;
  }

  /** Hand the `n` sequences of the engine's lost list to the handler, oldest first. */
  private takeLost(now: number, n: number): number {
    if (n === 0) return 0;
    // Copied first: the handler may call into the engine, which reuses the list.
    const list = this.engine.lost.slice(0, n);
    for (let i = 0; i < n; i++) this.handOver(list[i], now, false);
    return n;
  }

  /** The settled packet's contents and record leave the JS ring for the handler. */
  private handOver(sequence: number, now: number, delivered: boolean): void {
    const at = (sequence & this.mask) * REF_STRIDE;
    const contents = this.refs[at] as PacketContents;
    const record = this.refs[at + 1] as SentPacket | undefined;
    this.refs[at] = undefined;
    this.refs[at + 1] = undefined;
    if (delivered) this.handler.onDelivered(sequence, contents, this.sentTimeOf(sequence), now, record);
    else this.handler.onDropped(sequence, contents, this.sentTimeOf(sequence), now, record);
  }

  /**
   * Double the JS ring (up to PACKET_WINDOW) for `sequence`, about to be stored. Every packet in
   * flight lies in the ring's size of sequences before it (a closer one would have collided
   * first), so each occupied slot's sequence follows from its index.
   */
  private grow(sequence: number): void {
    const oldSize = this.mask + 1;
    if (oldSize >= PACKET_WINDOW) throw new Error("SentRing: a packet in flight where the next one goes (makeRoom first)");
    const size = oldSize * 2;
    const refs = emptyRefs(size);
    for (let i = 0; i < oldSize; i++) {
      const contents = this.refs[i * REF_STRIDE];
      if (contents === undefined) continue;
      const seq = (sequence - 1 - ((sequence - 1 - i) & this.mask)) & 0xffff;
      const j = (seq & (size - 1)) * REF_STRIDE;
      refs[j] = contents;
      refs[j + 1] = this.refs[i * REF_STRIDE + 1];
    }
    this.mask = size - 1;
    this.refs = refs;
  }
}

/** `size` free slots. Pushed, not `new Array(n).fill()`: a packed array needs no hole checks. */
function emptyRefs(size: number): unknown[] {
  const refs: unknown[] = [];
  for (let i = 0; i < size * REF_STRIDE; i++) refs.push(undefined);
  return refs;
}

/** The oldest ack-eliciting packet in flight of the slot whose head and sent ring start at
 *  those u32 indices (SentRing.oldestRecordedSequence), or -1. */
export function oldestEliciting(u32: Uint32Array, head: number, ring: number): number {
  if (u32[head + (SlotField.InFlight >> 2)] === 0) return -1;
  const next = u32[head + (SlotField.NextSendSequence >> 2)];
  let seq = u32[head + (SlotField.OldestSent >> 2)];
  if (((next - seq) & 0xffff) > PACKET_WINDOW) seq = (next - PACKET_WINDOW) & 0xffff;
  const match = 0xffff | WINDOW_ENTRY_PRESENT | SENT_ELICITING;
  for (; seq !== next; seq = (seq + 1) & 0xffff) {
    if ((u32[ring + (seq & (PACKET_WINDOW - 1))] & match) === (WINDOW_ENTRY_PRESENT | SENT_ELICITING | seq)) return seq;
  }
  return -1;
}
