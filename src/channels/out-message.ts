/** One application message on its way out (internal to src/channels). */
import type { SendChannel } from "./send-channel.js";

/** Per-fragment send state. */
export const enum FragState {
  /** Not yet written, or lost and waiting to be resent. */
  NeedsSend = 0,
  InFlight = 1,
  Acked = 2,
}

/** A given-up reliable-ordered message's GAP frame (it stands for the message's sequences). */
export const enum GapState {
  None = 0,
  NeedsSend = 1,
  InFlight = 2,
  Acked = 3,
}
/** The fragment index that stands for a message's GAP frame in packet contents and resends. */
export const GAP_FRAGMENT = -1;

const EMPTY = new Uint8Array(0);
const DONE = 1;
const ABANDONED = 2;
const LOSS_REPORTED = 4;
const KEPT_FOR_COPIES = 8;
/** `data` is a buffer shared with other messages (SendOptions.shared): never given to the pool. */
const SHARED = 128;
/** `data` was taken away (takeData): the message will never be written again. */
const FREED = 64;
const STATE0_SHIFT = 4;
const STATE0_MASK = 3 << STATE0_SHIFT;

export class OutMessage {
  // Field order is memory layout (V8 and JavaScriptCore place fields in the order they are
  // defined). An acknowledgement comes about a round trip after the send, when the message is
  // cold in cache (many in flight, or many connections): the fields it reads (sender, flags,
  // carriers, acked, fragCount, length, next, data, receipt) come first, within 72 bytes (they were
  // spread over 112: parameter properties are laid out before every initialized field), so it
  // touches fewer cache lines of the object.
  /** Its channel's sender (acknowledgements and losses go straight to it). */
  readonly sender: SendChannel;
  /**
   * Bits: DONE, ABANDONED, LOSS_REPORTED, KEPT_FOR_COPIES, SHARED, FREED, and fragment 0's FragState (when not
   * fragmented) at STATE0_SHIFT. One field instead of five: an OutMessage is allocated per
   * message sent and lives about a round trip (it often survives a scavenge and is copied).
   */
  private flags = 0;
  /**
   * Channels with copies (redundancy / piggyback), one-frame messages only: packets in flight
   * that carry this message (first send, resends and copies). A loss report only counts once
   * no other carrier is left.
   */
  carriers = 0;
  acked = 0;
  fragCount = 0;
  length = 0;
  /** Payload bytes of every fragment but the last (as cut: see SendChannel.fragmentSizeFor). */
  fragSize = 0;
  /** The next message in its channel's send FIFO (send-channel.ts), while it is queued. */
  next: OutMessage | undefined = undefined;
  /** The payload is data[0 .. length) (exactly `length` bytes until freed). A one-frame
   *  message's data is a pooled view (see buffer-pool.ts; SendChannel.isPooledFor). */
  data: Uint8Array;
  /** Receipt id, 0 = none. */
  receipt = 0;
  // ---- written and read when the message is written ----
  /** Message sequence of fragment 0, unwrapped (wire value is `& 0xffff`); -1 until started. */
  seqBase = -1;
  /** When its first frame was first written, the channels' clock in whole ms as an int32
   *  (`now | 0`, compared mod 2^32): the transmission ping of a resent message counts from
   *  here. An integer keeps the field a small integer: a double field is a heap number per
   *  message. */
  firstSentAt = -1;
  /** Unreliable kinds: when a write or pending check first saw it queued (NaN before), from
   *  which it expires unsent after the channel's maxQueueMs. */
  queuedAt = NaN;
  /** First-time send cursor: fragments below it were written at least once. */
  nextFrag = 0;
  /** Lowest fragment index not yet acknowledged (for the flow-control window). */
  firstUnacked = 0;
  readonly key: number = 0;
  /** LatestState: the key's version this transmission carries. */
  version = 0;
  /** Per-fragment states, only for fragmented messages. */
  private states: Uint8Array | undefined = undefined;
  /** When the sender gives it up if not yet delivered (send's deadlineMs; Infinity: never). */
  deadline = Infinity;
  /** Reliable-ordered, given up after it started: its GAP frame's state (GapState.None before). */
  gap: GapState = GapState.None;

  constructor(
    sender: SendChannel,
    data: Uint8Array,
    length: number,
    fragCount: number,
    key: number,
    version: number,
    receipt: number,
  ) {
    this.sender = sender;
    this.fragCount = fragCount;
    this.length = length;
    this.data = data;
    this.receipt = receipt;
    this.key = key;
    this.version = version;
    if (fragCount > 1) {
      this.states = new Uint8Array(fragCount);
      this.fragSize = sender.fragmentSizeFor(length);
    }
  }

  /** Cut a message that has not started again, for its sender's fragment size now. */
  recut(): void {
    const fragCount = this.sender.fragmentCountFor(this.length);
    this.fragSize = fragCount > 1 ? this.sender.fragmentSizeFor(this.length) : 0;
    if (fragCount === this.fragCount) return;
    this.fragCount = fragCount;
    this.flags &= ~STATE0_MASK;
    this.states = fragCount > 1 ? new Uint8Array(fragCount) : undefined;
  }

  /** Replace the payload of a message that has not started (LatestState coalescing). */
  replace(data: Uint8Array, length: number, fragCount: number, version: number, shared: boolean): void {
    this.data = data;
    this.length = length;
    this.version = version;
    this.fragCount = fragCount;
    this.fragSize = fragCount > 1 ? this.sender.fragmentSizeFor(length) : 0;
    this.flags = (this.flags & ~(STATE0_MASK | FREED | SHARED)) | (shared ? SHARED : 0);
    this.states = fragCount > 1 ? new Uint8Array(fragCount) : undefined;
  }

  /** All fragments acknowledged (reliable) or everything settled (unreliable). */
  get done(): boolean {
    return (this.flags & DONE) !== 0;
  }
  set done(v: boolean) {
    this.flags = v ? this.flags | DONE : this.flags & ~DONE;
  }
  /** No longer wanted: superseded (sequenced / LatestState) or the connection closed. */
  get abandoned(): boolean {
    return (this.flags & ABANDONED) !== 0;
  }
  set abandoned(v: boolean) {
    this.flags = v ? this.flags | ABANDONED : this.flags & ~ABANDONED;
  }
  /** Unreliable receipt already reported lost. */
  get lossReported(): boolean {
    return (this.flags & LOSS_REPORTED) !== 0;
  }
  set lossReported(v: boolean) {
    this.flags = v ? this.flags | LOSS_REPORTED : this.flags & ~LOSS_REPORTED;
  }
  /** Unreliable message kept after its write for redundancy copies: its bytes no longer count
   *  in the channel's heldBytes (they were taken off at the write). */
  get keptForCopies(): boolean {
    return (this.flags & KEPT_FOR_COPIES) !== 0;
  }
  set keptForCopies(v: boolean) {
    this.flags = v ? this.flags | KEPT_FOR_COPIES : this.flags & ~KEPT_FOR_COPIES;
  }

  /** Its data is shared with other messages (SendOptions.shared): the sender does not own it. */
  get shared(): boolean {
    return (this.flags & SHARED) !== 0;
  }
  set shared(v: boolean) {
    this.flags = v ? this.flags | SHARED : this.flags & ~SHARED;
  }

  /** Its data was taken away (known without reading the data view, cold by the time of the ack). */
  get freed(): boolean {
    return (this.flags & FREED) !== 0;
  }

  state(f: number): FragState {
    return this.states === undefined ? ((this.flags & STATE0_MASK) >>> STATE0_SHIFT as FragState) : (this.states[f] as FragState);
  }
  setState(f: number, s: FragState): void {
    if (this.states === undefined) this.flags = (this.flags & ~STATE0_MASK) | (s << STATE0_SHIFT);
    else this.states[f] = s;
  }

  /** Take the payload away (it will never be written again); returns the buffer it was in. */
  takeData(): Uint8Array {
    const d = this.data;
    this.data = EMPTY;
    this.flags |= FREED;
    return d;
  }

  get fragmented(): boolean {
    return this.fragCount > 1;
  }

  /** Payload bytes of fragment `i`. */
  fragmentStart(i: number): number {
    return i * this.fragSize;
  }
  fragmentLength(i: number): number {
    if (this.fragCount === 1) return this.length;
    const size = this.fragSize;
    return Math.min(size, this.length - i * size);
  }

  /** Started and still holding the channel's flow-control window. */
  get live(): boolean {
    return this.seqBase !== -1 && !this.done && !this.abandoned;
  }
}
