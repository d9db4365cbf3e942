/**
 * The sending half of one channel: message sequence numbering, flow control, first sends,
 * resends, and the per-mode rules on loss (internal to src/channels; ChannelSet drives it).
 */
import {
  DeliveryKind,
  FRAGMENT_EXTRA_BYTES,
  FRAME_FLAG_FRAGMENT,
  FRAME_HEADER_BYTES,
  LATEST_STATE_EXTRA_BYTES,
  MESSAGE_WINDOW,
} from "../engine/abi.js";
import { GAP_FRAME_BYTES, writeFragmentFields, writeFrameLength, writeFrameStart, writeGapFrame, writeKeyField } from "../wire/frame.js";
import { copyExact, copyToPooled, POOLED_MAX_BYTES, releasePooled } from "./buffer-pool.js";
import { COPY_MAX_AGE_MS, COPY_SEQ_WINDOW, CopyRing } from "./copy-ring.js";
import { FragState, GAP_FRAGMENT, GapState, OutMessage } from "./out-message.js";
import type { PacketContents } from "./packet-contents.js";
import { PairQueue } from "./queue.js";

const EMPTY = new Uint8Array(0);
const NO_MESSAGES: OutMessage[] = [];
/** Started messages the FIFO may hold before a start trims the settled ones from its head. */
const LIVE_TRIM_AT = 8;
/** Piggyback ring slots beyond `piggyback`: room for the messages of the datagram being written. */
const PIGGYBACK_RING_EXTRA = 4;

/** What a SendChannel reports to its ChannelSet. */
export interface ReceiptSink {
  receiptSettled(receipt: number, delivered: boolean): void;
  /** May the datagram being written take a GAP frame? True once per datagram (PROTOCOL §3). */
  takeGapSlot(): boolean;
  /** Channel `index` may have a frame to write (new data, a resend, or a window that moved). */
  markPending(index: number): void;
  /** The datagram being written (read only by channels with copies). */
  readonly clock: WriteClock;
  /** The time of the current send, write or pending check (unreliable messages expire by it). */
  readonly now: number;
}

/** The datagram being written, shared by a ChannelSet's channels (read only by channels with copies). */
export interface WriteClock {
  now: number;
  /** Counts writeFrames calls: tells "already in this datagram" apart. */
  datagram: number;
}

/** LatestState: what the sender knows about one key (up-to-date reliability). */
export class KeyState {
  /** Version of the newest value the application sent for this key (1, 2, ...). */
  version = 0;
  /** A transmission queued but not yet started: later sends replace its value. */
  pending: OutMessage | undefined = undefined;
  /** The newest started transmission. */
  current: OutMessage | undefined = undefined;
  /** Newest version the peer acknowledged. */
  ackedVersion = 0;
  /** Receipts waiting: parallel arrays (version, receipt id). */
  receiptVersions: number[] = [];
  receiptIds: number[] = [];
}

export class SendChannel {
  // Field order is memory layout (V8 places fields in the order they are defined): the fields
  // every send, write and acknowledgement reads come first, so a connection whose state is cold
  // when its datagram comes pays for two cache lines of this object, not four. Rarely read ones
  // (configuration, statistics, state of other kinds) come last.
  readonly kind: DeliveryKind;
  readonly index: number;
  private readonly sink: ReceiptSink;
  /** The receiver checks this channel's messageSeqs against a 1024-entry window. */
  readonly windowed: boolean;
  readonly reliable: boolean;
  /** Messages at the tail of the queue with fragments never written yet. */
  private freshCount = 0;
  /** The first of them (undefined when freshCount is 0). */
  private freshHead: OutMessage | undefined = undefined;
  /**
   * Messages in send order: first the started ones that still hold the flow-control window
   * (windowed kinds only: "live"; settled ones leave from the head), then the last `freshCount`
   * ones, which have fragments never written yet ("fresh"). One queue for both, so a message is
   * pushed once and starting it moves nothing.
   */
  // A list linked through OutMessage.next, its ends fields of the channel itself: no array to
  // reach per send and per acknowledgement (with many connections the channel's state is cold
  // then, and an array is two more dependent loads: the array, then its backing store).
  private queueHead: OutMessage | undefined = undefined;
  private queueTail: OutMessage | undefined = undefined;
  private queueLength = 0;
  /** Lost fragments waiting to be resent (created at a loss, dropped when emptied). */
  private lost: PairQueue<OutMessage> | undefined = undefined;
  /** Next message sequence, unwrapped (wire value is `& 0xffff`). */
  nextSeq = 0;
  /** A flow-control window base computed earlier: the base is at least this (it never goes down). */
  private windowFloor = 0;
  /** start() trims the live messages when there are more than this (at most a window + LIVE_TRIM_AT). */
  private trimAt = LIVE_TRIM_AT;
  /** Bytes of application data held (queued or awaiting acknowledgement). */
  heldBytes = 0;
  /** Messages the application sent on this channel (ChannelStats.messagesSent). */
  messagesSent = 0;
  /** Largest payload that fits one frame in an empty packet (at the size fragments are cut for:
   *  the base mtu, or less below it, see fitTo). */
  singleFramePayload: number;
  readonly maxMessageBytes: number;
  readonly keyBytes: number;
  /** `redundancy` (unreliable kinds) or `piggyback` (reliable kinds): copies per message, 0 = off. */
  readonly copyLimit: number;
  // ---- read rarely ----
  /** Payload bytes per fragment of a message cut now (every fragment but the last is exactly
   *  its message's fragSize: this, or more for a message that would need over MESSAGE_WINDOW). */
  fragmentPayload: number;
  /** singleFramePayload at the base mtu: one-frame messages up to it use pooled buffers. */
  private readonly basePayload: number;
  /** Started messages sent again as new ones because a frame no longer fit the path (fitTo). */
  mtuResends = 0;
  resends = 0;
  /** Recent one-frame messages that may be repeated (channels with copies; created on first write). */
  private ring: CopyRing | undefined = undefined;
  /** ReliableSequenced: the newest started message (the only one worth resending). */
  private newestStarted: OutMessage | undefined = undefined;
  /** LatestState keys (created on the first publish). */
  private keys: Map<number, KeyState> | undefined = undefined;
  readonly priority: number;
  readonly maxKeys: number;
  /** Unreliable kinds: unsent messages older than this are dropped (Infinity for reliable ones). */
  readonly maxQueueMs: number;
  /** Messages dropped unsent after maxQueueMs. */
  expired = 0;
  /** Messages given up at their deadline (send's deadlineMs). */
  deadlinesMissed = 0;
  /** The oldest queued message not yet stamped with queuedAt (unreliable kinds; see stampQueued). */
  private unstamped: OutMessage | undefined = undefined;

  constructor(
    index: number,
    kind: DeliveryKind,
    priority: number,
    maxMessageBytes: number,
    maxKeys: number,
    packetRoom: number,
    sink: ReceiptSink,
    copyLimit = 0,
    maxQueueMs = Infinity,
  ) {
    this.kind = kind;
    this.index = index;
    this.sink = sink;
    this.windowed =
      kind === DeliveryKind.ReliableUnordered || kind === DeliveryKind.ReliableOrdered || kind === DeliveryKind.LatestState;
    this.reliable = kind >= DeliveryKind.ReliableUnordered;
    this.keyBytes = kind === DeliveryKind.LatestState ? LATEST_STATE_EXTRA_BYTES : 0;
    this.singleFramePayload = packetRoom - FRAME_HEADER_BYTES - this.keyBytes;
    this.maxMessageBytes = maxMessageBytes;
    this.copyLimit = copyLimit;
    this.fragmentPayload = this.singleFramePayload - FRAGMENT_EXTRA_BYTES;
    this.basePayload = this.singleFramePayload;
    this.priority = priority;
    this.maxKeys = maxKeys;
    this.maxQueueMs = this.reliable ? Infinity : maxQueueMs;
  }

  fragmentCountFor(length: number): number {
    return length <= this.singleFramePayload ? 1 : Math.ceil(length / this.fragmentSizeFor(length));
  }

  /** Fragment size for a message of `length` cut now: at most MESSAGE_WINDOW fragments (the
   *  receiver's limit), so below the base a long message may need fragments larger than fit. */
  fragmentSizeFor(length: number): number {
    return Math.max(this.fragmentPayload, Math.ceil(length / MESSAGE_WINDOW));
  }

  /** LatestState keys tracked (values not yet deleted-and-acknowledged). */
  get keyCount(): number {
    return this.keys === undefined ? 0 : this.keys.size;
  }
  hasKey(key: number): boolean {
    return this.keys !== undefined && this.keys.has(key);
  }

  /**
   * The one copy of the caller's bytes: into a pooled buffer when the message fits one frame
   * (given back when the message can never be written again), else a fresh exact copy.
   */
  private copyIn(data: Uint8Array, shared: boolean): Uint8Array {
    if (data.length === 0) return EMPTY;
    if (shared) return data;
    if (data.length <= this.basePayload && data.length <= POOLED_MAX_BYTES) return copyToPooled(data);
    return copyExact(data);
  }
  private isPooledFor(length: number): boolean {
    return length > 0 && length <= this.basePayload && length <= POOLED_MAX_BYTES;
  }

  /** `m` will never be written again: stop counting its bytes and recycle its buffer. */
  private freeData(m: OutMessage): void {
    if (m.freed) return;
    const length = m.length; // = its data's length (the view itself is not read: cold by now)
    if (!m.keptForCopies) this.heldBytes -= length;
    const buffer = m.takeData();
    // A shared buffer belongs to no pool: other connections' messages still read it.
    if (!m.shared && this.isPooledFor(length)) releasePooled(buffer, length);
  }

  /** Queue a message (already validated; copied here). `sentAt`: the caller's time of the send
   *  when it knows it (an unreliable message's wait counts from it), else NaN (see stampQueued). */
  enqueue(data: Uint8Array, receipt: number, sentAt = NaN, shared = false): OutMessage {
    if (this.kind === DeliveryKind.ReliableSequenced) {
      // Only the newest is ever delivered: anything not yet fully written is pointless now.
      // (Not windowed: the queue holds only fresh messages.)
      while (this.freshCount > 0) {
        this.freshCount--;
        this.abandon(this.shiftQueue()!);
      }
      this.freshHead = undefined;
    }
    const length = data.length;
    const m = new OutMessage(this, this.copyIn(data, shared), length, this.fragmentCountFor(length), 0, 0, receipt);
    if (shared) m.shared = true;
    if (this.maxQueueMs !== Infinity) {
      m.queuedAt = sentAt;
      if (sentAt !== sentAt && this.unstamped === undefined) this.unstamped = m;
    }
    this.pushQueue(m);
    if (this.freshCount === 0) this.freshHead = m;
    this.freshCount++;
    this.heldBytes += length;
    this.sink.markPending(this.index);
    return m;
  }

  /**
   * LatestState send: publish `data` (copied here) as the value of `key`. An empty value is a
   * tombstone: the key is deleted, and forgotten by the sender once the peer acknowledged it.
   */
  publish(key: number, data: Uint8Array, receipt: number, shared = false): void {
    if (this.keys === undefined) this.keys = new Map<number, KeyState>();
    let ks = this.keys.get(key);
    if (ks === undefined) {
      ks = new KeyState();
      this.keys.set(key, ks);
    }
    const version = ++ks.version;
    if (receipt !== 0) {
      ks.receiptVersions.push(version);
      ks.receiptIds.push(receipt);
    }
    const length = data.length;
    const fragCount = this.fragmentCountFor(length);
    const copy = this.copyIn(data, shared);
    if (ks.pending !== undefined) {
      // Coalesce: the queued transmission has not started, so it simply carries the new value.
      const p = ks.pending;
      this.freeData(p);
      p.replace(copy, length, fragCount, version, shared);
      this.heldBytes += length;
      return;
    }
    if (ks.current !== undefined && ks.current.live && ks.current.nextFrag < ks.current.fragCount) {
      // The previous value is still being written for the first time: stop, the new one replaces it.
      this.abandon(ks.current);
    }
    const m = new OutMessage(this, copy, length, fragCount, key, version, 0);
    if (shared) m.shared = true;
    ks.pending = m;
    this.pushQueue(m);
    if (this.freshCount === 0) this.freshHead = m;
    this.freshCount++;
    this.heldBytes += length;
    this.sink.markPending(this.index);
  }

  /** Append to the message FIFO. */
  private pushQueue(m: OutMessage): void {
    const tail = this.queueTail;
    if (tail === undefined) this.queueHead = m;
    else tail.next = m;
    this.queueTail = m;
    this.queueLength++;
  }

  /** Remove the FIFO's head (the caller moves freshHead if it was the head). */
  private shiftQueue(): OutMessage | undefined {
    const m = this.queueHead;
    if (m === undefined) return undefined;
    const next = m.next;
    m.next = undefined; // a message that left keeps nothing alive
    this.queueHead = next;
    if (next === undefined) this.queueTail = undefined;
    this.queueLength--;
    return m;
  }

  /** Oldest sequence not yet acknowledged among live messages (flow-control base). */
  private windowBase(): number {
    for (;;) {
      const m = this.queueHead;
      if (m === undefined) return this.nextSeq;
      if (!m.live) {
        if (this.queueLength > this.freshCount) {
          this.shiftQueue(); // settled: no longer holds the window
          continue;
        }
        return this.nextSeq; // the fresh head, not started (or abandoned): nothing started after it
      }
      // Given up with its GAP not yet acknowledged: the receiver may still wait at any of its
      // sequences, so the window stays where the message began.
      if (m.gap !== GapState.None) return m.seqBase;
      while (m.firstUnacked < m.fragCount && m.state(m.firstUnacked) === FragState.Acked) m.firstUnacked++;
      return m.seqBase + m.firstUnacked;
    }
  }

  /**
   * Sequence `seq` may be sent without the receiver rejecting it as TooFarAhead. The window base
   * never goes down, so the last one computed (`windowFloor`) answers most checks without
   * visiting the oldest live message (cold in memory by then: it was sent a round trip ago).
   */
  private inWindow(seq: number): boolean {
    if (!this.windowed || seq < this.windowFloor + MESSAGE_WINDOW) return true;
    this.windowFloor = this.windowBase();
    return seq < this.windowFloor + MESSAGE_WINDOW;
  }

  /** Drop settled messages from the head of the live queue (they no longer hold the window),
   *  so the queue stays short now that inWindow() rarely calls windowBase(). */
  private trimLive(): void {
    while (this.queueLength > this.freshCount && !this.queueHead!.live) this.shiftQueue();
  }

  /** The fresh head has no fragment left to write for the first time (or was abandoned): it
   *  joins the live messages (windowed kinds), or leaves the queue. */
  private leaveFresh(): void {
    const m = this.freshHead!;
    this.freshCount--;
    this.freshHead = this.freshCount === 0 ? undefined : m.next;
    if (!this.windowed) this.shiftQueue(); // nothing before it: it is the queue's head
  }

  /** Drop invalid entries at the head of the resend queue; true if a valid one remains. */
  private cleanLostHead(): boolean {
    const lost = this.lost;
    if (lost === undefined) return false;
    for (;;) {
      const m = lost.peekItem();
      if (m === undefined) {
        this.lost = undefined; // see writeResend
        return false;
      }
      const f = lost.peekNumber();
      if (f === GAP_FRAGMENT ? m.gap !== GapState.NeedsSend : m.done || m.abandoned || m.state(f) !== FragState.NeedsSend) {
        lost.shift();
        continue;
      }
      if (this.kind === DeliveryKind.ReliableSequenced && m !== this.newestStarted) {
        this.abandon(m);
        lost.shift();
        continue;
      }
      return true;
    }
  }

  private cleanFreshHead(): OutMessage | undefined {
    for (;;) {
      if (this.freshCount === 0) return undefined;
      const m = this.freshHead!;
      if (m.abandoned || m.nextFrag >= m.fragCount) {
        this.leaveFresh();
        continue;
      }
      // Unreliable, not started, and waited too long: dropped (a reliable channel's maxQueueMs
      // is Infinity). Only the head is checked: the queue is in send order, so the rest is younger.
      if (this.maxQueueMs !== Infinity) {
        // Every visit stamps what was queued since, whatever the head: behind a fragmented
        // message being written the others wait too (unstamped, they never expired).
        if (this.unstamped !== undefined) this.stampQueued();
        if (m.seqBase === -1 && this.sink.now - m.queuedAt > this.maxQueueMs) {
          this.expired++;
          this.abandon(m);
          continue;
        }
      }
      return m;
    }
  }

  /**
   * The messages queued since the last write or pending check start their wait now, at that
   * call's time: send() may run with an endpoint time gone stale on a quiet connection (the
   * API's passes none), and stamped with it a message would expire before its first chance to
   * leave. Each message is stamped once: the pointer moves past it.
   */
  private stampQueued(): void {
    const now = this.sink.now;
    for (let m = this.unstamped; m !== undefined; m = m.next) if (m.queuedAt !== m.queuedAt) m.queuedAt = now;
    this.unstamped = undefined;
  }

  hasResend(): boolean {
    const lost = this.lost;
    if (lost === undefined) return false; // the common case, kept cheap
    return this.cleanLostHead();
  }

  hasFresh(): boolean {
    if (this.freshCount === 0) return false;
    const m = this.cleanFreshHead();
    if (m === undefined) return false;
    const seq = m.seqBase === -1 ? this.nextSeq : m.seqBase + m.nextFrag;
    return this.inWindow(seq);
  }

  frameBytes(m: OutMessage, f: number): number {
    return FRAME_HEADER_BYTES + (m.fragCount > 1 ? FRAGMENT_EXTRA_BYTES : 0) + this.keyBytes + m.fragmentLength(f);
  }

  /** Write one resent frame if one is due and fits in `room`. Returns bytes written (0 = none). */
  writeResend(bytes: Uint8Array, pos: number, room: number, into: PacketContents): number {
    if (!this.cleanLostHead()) return 0;
    const lost = this.lost!;
    const m = lost.peekItem()!;
    const f = lost.peekNumber();
    if (f === GAP_FRAGMENT) return this.writeGap(bytes, pos, room, into, m);
    const size = this.frameBytes(m, f);
    if (size > room) return 0;
    lost.shift();
    // An empty resend queue is dropped: hasResend() (every write, every pending check) then
    // answers without reaching it, and an idle connection holds none.
    if (lost.length === 0) this.lost = undefined;
    this.writeFrame(bytes, pos, m, f);
    m.setState(f, FragState.InFlight);
    into.add(m, f);
    into.resends++;
    // The first send as a time again: now less its age (int32 difference, wrap-safe).
    const now = this.sink.now;
    const firstSentAt = now - (((now | 0) - m.firstSentAt) | 0);
    if (firstSentAt < into.firstSentAt) into.firstSentAt = firstSentAt;
    this.resends++;
    if (this.copyLimit !== 0 && m.fragCount === 1) {
      // A resend is as worth protecting as a first send: it may be piggybacked on the next datagram.
      m.carriers++;
      this.copyRing().push(m, this.sink.clock.now, this.sink.clock.datagram);
    }
    return size;
  }

  /**
   * Write frames while one is due and fits, as repeated writeResend (`resends`) or writeFresh
   * calls would: resent frames, or never-sent ones while the window allows. Returns bytes written.
   */
  writeRun(bytes: Uint8Array, pos: number, room: number, into: PacketContents, resends: boolean): number {
    let written = 0;
    while (written < room) {
      const at = pos + written;
      const n = resends ? this.writeResend(bytes, at, room - written, into) : this.writeFresh(bytes, at, room - written, into);
      if (n === 0) break;
      written += n;
    }
    return written;
  }

  /** Write the next never-sent frame if the window allows and it fits. Returns bytes written. */
  writeFresh(bytes: Uint8Array, pos: number, room: number, into: PacketContents): number {
    const m = this.cleanFreshHead();
    if (m === undefined) return 0;
    const f = m.nextFrag; // 0 until started
    let size: number;
    if (m.seqBase === -1) {
      if (!this.inWindow(this.nextSeq)) return 0;
      if (m.fragCount === 1 && this.copyLimit === 0) return this.writeWhole(bytes, pos, room, into, m);
      size = this.frameBytes(m, 0);
      if (size > room) return 0;
      this.start(m);
    } else {
      if (!this.inWindow(m.seqBase + f)) return 0;
      size = this.frameBytes(m, f);
      if (size > room) return 0;
    }
    if (this.copyLimit !== 0 && m.fragCount === 1) return this.writeFreshWithCopies(bytes, pos, room, into, m, size);
    this.writeFrame(bytes, pos, m, f);
    m.setState(f, FragState.InFlight);
    m.nextFrag = f + 1;
    if (m.nextFrag === m.fragCount) {
      this.leaveFresh();
      // Unreliable data is never resent: the bytes are not needed any more.
      if (!this.reliable) this.freeData(m);
    }
    // Unreliable frames without a receipt need no delivery feedback.
    if (this.reliable || m.receipt !== 0) into.add(m, f);
    return size;
  }

  /**
   * First (and only first-time) write of a one-frame message on a channel without copies, the
   * usual message: writeFresh's steps with what a one-frame message makes fixed (fragment 0, no
   * fragment fields, its size from its length) known here instead of recomputed.
   */
  private writeWhole(bytes: Uint8Array, pos: number, room: number, into: PacketContents, m: OutMessage): number {
    const size = FRAME_HEADER_BYTES + this.keyBytes + m.length;
    if (size > room) return 0;
    this.start(m);
    this.writeFrame(bytes, pos, m, 0);
    m.setState(0, FragState.InFlight);
    m.nextFrag = 1;
    this.leaveFresh();
    // Unreliable data is never resent: the bytes are not needed any more.
    if (this.reliable) into.add(m, 0);
    else {
      this.freeData(m);
      // Unreliable frames without a receipt need no delivery feedback.
      if (m.receipt !== 0) into.add(m, 0);
    }
    return size;
  }

  /**
   * First write of a one-frame message on a channel with copies. Unreliable kinds (redundancy):
   * copies of up to `copyLimit` previous messages go in front of it, oldest first, if they fit
   * beside it, so an UnreliableSequenced receiver that lost the previous datagram delivers them
   * before the new one instead of dropping them as stale. Then the message joins the ring.
   */
  private writeFreshWithCopies(bytes: Uint8Array, pos: number, room: number, into: PacketContents, m: OutMessage, size: number): number {
    let at = pos;
    if (!this.reliable && this.ring !== undefined) at += this.writeCopies(bytes, pos, room - size, into, true);
    this.writeFrame(bytes, at, m, 0);
    m.setState(0, FragState.InFlight);
    m.nextFrag = 1;
    this.leaveFresh();
    if (this.reliable || m.receipt !== 0) {
      into.add(m, 0);
      m.carriers++;
    }
    if (!this.reliable) {
      // Kept (≤ copyLimit messages, ≤ COPY_MAX_AGE_MS) for copies; no longer "queued" data.
      this.heldBytes -= m.length;
      m.keptForCopies = true;
    }
    const evicted = this.copyRing().push(m, this.sink.clock.now, this.sink.clock.datagram);
    if (evicted !== undefined && !this.reliable) this.releaseKept(evicted);
    return at - pos + size;
  }

  /**
   * Write copies of recent messages into bytes[pos .. pos + room): at most `copyLimit` per
   * call, newest first in choice, oldest first on the wire. A message is copied only if it is
   * still unsettled (reliable: in flight, not acknowledged; unreliable: not known delivered),
   * was not written in this datagram, has been copied fewer than `copyLimit` times, is younger
   * than COPY_MAX_AGE_MS and within COPY_SEQ_WINDOW of the next messageSeq. Copies are carriers
   * like any other packet (an acknowledged copy settles the message, so its lost original is
   * never resent); they are not resends. Returns bytes written.
   */
  writeCopies(bytes: Uint8Array, pos: number, room: number, into: PacketContents, unreliable = false): number {
    const ring = this.ring;
    if (ring === undefined || ring.size === 0 || room <= 0) return 0;
    const { now, datagram } = this.sink.clock;
    // Pick (newest first) into a small stack of slots; at most copyLimit <= 3.
    let picked0 = -1;
    let picked1 = -1;
    let picked2 = -1;
    let count = 0;
    let total = 0;
    for (let i = 0; i < ring.size && count < this.copyLimit; i++) {
      const slot = ring.slot(i);
      const m = ring.message(slot);
      if (now - ring.writtenTime(slot) > COPY_MAX_AGE_MS) break; // older ones are older still
      if (ring.datagramOf(slot) === datagram || ring.copyCount(slot) >= this.copyLimit) continue;
      if (m.done || m.abandoned || m.gap !== GapState.None || m.seqBase < this.nextSeq - COPY_SEQ_WINDOW) continue;
      if (unreliable ? m.data.length < m.length : m.state(0) !== FragState.InFlight) continue;
      const size = this.frameBytes(m, 0);
      if (total + size > room) continue;
      total += size;
      if (count === 0) picked0 = slot;
      else if (count === 1) picked1 = slot;
      else picked2 = slot;
      count++;
    }
    let at = pos;
    for (let k = count - 1; k >= 0; k--) {
      const slot = k === 0 ? picked0 : k === 1 ? picked1 : picked2;
      const m = ring.message(slot);
      this.writeFrame(bytes, at, m, 0);
      at += this.frameBytes(m, 0);
      ring.noteCopy(slot, datagram);
      if (this.reliable || m.receipt !== 0) {
        into.add(m, 0);
        m.carriers++;
      }
    }
    ring.copiesSent += count;
    ring.copyBytes += total;
    return total;
  }

  /**
   * The ring, created on first use. Redundancy: the last `copyLimit` messages (the new one is
   * added after its copies are written). Piggyback: a few more, because the copy pass runs
   * after the messages of the current datagram were added, and those are never copied into it.
   */
  private copyRing(): CopyRing {
    return (this.ring ??= new CopyRing(this.reliable ? this.copyLimit + PIGGYBACK_RING_EXTRA : this.copyLimit));
  }

  /** An unreliable message left the copy ring: free its bytes; settle a receipt still open. */
  private releaseKept(m: OutMessage): void {
    this.freeData(m);
    if (m.carriers === 0 && m.state(0) === FragState.InFlight && m.receipt !== 0 && !m.lossReported && !m.done) {
      // Every packet that carried it was lost and no copy will be written any more.
      m.setState(0, FragState.Acked);
      m.lossReported = true;
      this.sink.receiptSettled(m.receipt, false);
      m.receipt = 0;
    }
  }

  /** Drop ring entries too old to be copied (their unreliable bytes go back to the pool). */
  expireCopies(now: number): void {
    const ring = this.ring;
    if (ring === undefined) return;
    while (ring.size > 0 && now - ring.writtenTime(ring.slot(ring.size - 1)) > COPY_MAX_AGE_MS) {
      const m = ring.shiftOldest()!;
      if (!this.reliable) this.releaseKept(m);
    }
  }

  /** Assign sequences to a message about to be written for the first time. */
  private start(m: OutMessage): void {
    m.seqBase = this.nextSeq;
    m.firstSentAt = this.sink.now | 0;
    this.nextSeq += m.fragCount;
    // Messages acknowledged in order leave the FIFO at their ack (delivered()); others (acked
    // out of order, abandoned) are trimmed here once a few have gathered, so a start does not
    // read the oldest message (cold by now) every time. A trim that leaves n (the oldest is
    // still unacknowledged: a loss) waits for LIVE_TRIM_AT more starts, not the next one.
    if (this.windowed && this.queueLength - this.freshCount > this.trimAt) {
      this.trimLive();
      this.trimAt = this.queueLength - this.freshCount + LIVE_TRIM_AT;
    }
    if (this.kind === DeliveryKind.ReliableSequenced) {
      const previous = this.newestStarted;
      if (previous !== undefined && !previous.done) this.abandon(previous);
      this.newestStarted = m;
    } else if (this.kind === DeliveryKind.LatestState) {
      const ks = this.keys!.get(m.key)!;
      if (ks.pending === m) ks.pending = undefined;
      const previous = ks.current;
      if (previous !== undefined && !previous.done && !previous.abandoned) this.abandon(previous);
      ks.current = m;
    }
  }

  /** PROTOCOL.md §3 frame: channel, flags, messageSeq, [fragIndex, fragCount], [key], length, payload. */
  private writeFrame(bytes: Uint8Array, pos: number, m: OutMessage, f: number): void {
    const fragmented = m.fragCount > 1;
    const seq = (m.seqBase + f) & 0xffff;
    const length = m.fragmentLength(f);
    let p = writeFrameStart(bytes, pos, this.index, this.kind | (fragmented ? FRAME_FLAG_FRAGMENT : 0), seq);
    if (fragmented) p = writeFragmentFields(bytes, p, f, m.fragCount);
    if (this.keyBytes !== 0) p = writeKeyField(bytes, p, m.key);
    p = writeFrameLength(bytes, p, length);
    const start = m.fragmentStart(f);
    const data = m.data;
    if (length === data.length) {
      // A one-frame message in its own exact view (pooled, see buffer-pool.ts): no subarray.
      bytes.set(data, p);
    } else if (length <= 32) {
      // Small payloads: a plain loop beats creating a subarray view for set().
      for (let i = 0; i < length; i++) bytes[p + i] = data[start + i];
    } else {
      bytes.set(data.subarray(start, start + length), p);
    }
  }

  /** Fragment `f` of `m` was acknowledged. */
  delivered(m: OutMessage, f: number): void {
    if (f === GAP_FRAGMENT) return this.gapDelivered(m);
    if (m.carriers > 0) m.carriers--;
    if (m.state(f) !== FragState.InFlight) return;
    m.setState(f, FragState.Acked);
    m.acked++;
    // The flow-control window may have moved: queued data may be sendable now.
    if (this.windowed && this.freshCount > 0) this.sink.markPending(this.index);
    if (m.acked < m.fragCount || m.done) return;
    m.done = true;
    // No longer holds the window: if it is the oldest, it leaves the FIFO now (the slot is at
    // hand; trimLive() would have to read the message again later).
    if (this.windowed && this.queueHead === m && this.queueLength > this.freshCount) this.shiftQueue();
    if (m.abandoned) return; // superseded: its receipt was already reported
    this.freeData(m);
    if (this.kind === DeliveryKind.LatestState) {
      const keys = this.keys!;
      const ks = keys.get(m.key);
      if (ks === undefined) return;
      if (m.version > ks.ackedVersion) ks.ackedVersion = m.version;
      this.settleKeyReceipts(ks, ks.ackedVersion, true);
      // A tombstone that is the key's newest value and was acknowledged: the peer deleted the
      // key, so the sender forgets it too (frees its place under maxKeys).
      if (m.length === 0 && ks.current === m && ks.pending === undefined && ks.version === m.version) keys.delete(m.key);
    } else if (m.receipt !== 0 && !m.lossReported) {
      this.sink.receiptSettled(m.receipt, true);
      m.receipt = 0;
    }
  }

  /** Fragment `f` of `m` was in a packet judged lost. */
  lostFragment(m: OutMessage, f: number): void {
    if (f === GAP_FRAGMENT) {
      if (m.gap !== GapState.InFlight) return;
      m.gap = GapState.NeedsSend;
      (this.lost ??= new PairQueue<OutMessage>()).push(m, GAP_FRAGMENT);
      this.sink.markPending(this.index);
      return;
    }
    if (this.copyLimit !== 0 && m.fragCount === 1) {
      if (m.carriers > 0) m.carriers--;
      // Another packet (a copy, or the original when this was a copy) still carries it.
      if (m.carriers > 0) return;
      // Unreliable: it may still be copied into a later datagram; settled when it leaves the ring.
      if (!this.reliable && m.keptForCopies && this.ring !== undefined && this.ring.indexOf(m) >= 0) return;
    }
    if (m.state(f) !== FragState.InFlight || m.done || m.abandoned) return;
    m.setState(f, FragState.NeedsSend);
    if (!this.reliable) {
      // Never resent. A receipt learns the message is lost at the first lost fragment.
      m.setState(f, FragState.Acked); // settled; never revisited
      if (m.receipt !== 0 && !m.lossReported) {
        m.lossReported = true;
        this.sink.receiptSettled(m.receipt, false);
        m.receipt = 0;
      }
      return;
    }
    if (this.kind === DeliveryKind.ReliableSequenced && m !== this.newestStarted) {
      // A newer message has been sent: the receiver would discard this one anyway.
      this.abandon(m);
      return;
    }
    if (this.kind === DeliveryKind.LatestState) {
      const ks = this.keys!.get(m.key);
      if (ks === undefined || m !== ks.current || ks.pending !== undefined) {
        // A newer value of this key is in flight, delivered, or queued: it replaces this one.
        this.abandon(m);
        return;
      }
      // Still the current value: resending the lost fragment under its own messageSeq is the
      // same as sending the current value anew, and keeps the rest of the message valid.
    }
    (this.lost ??= new PairQueue<OutMessage>()).push(m, f);
    this.sink.markPending(this.index);
  }

  /**
   * `m`'s deadline passed (ChannelSet's deadline heap). Not delivered yet: it is given up, its
   * receipt reports lost, and it is never sent or resent again. On a reliable-ordered channel a
   * message that already took its sequences leaves a GAP frame in their place, sent (and resent)
   * like a reliable frame, so the receiver stops waiting for them. Unreliable kinds only drop a
   * message that has not started: what is on the wire settles as it always does.
   */
  expire(m: OutMessage): void {
    if (m.done || m.abandoned || m.gap !== GapState.None) return;
    if (!this.reliable && m.seqBase !== -1) return;
    this.deadlinesMissed++;
    if (this.kind !== DeliveryKind.ReliableOrdered || m.seqBase === -1) {
      this.abandon(m);
      return;
    }
    if (m.receipt !== 0 && !m.lossReported) {
      m.lossReported = true;
      this.sink.receiptSettled(m.receipt, false);
      m.receipt = 0;
    }
    this.freeData(m);
    // Its frames still in flight settle for nothing now; none is resent or written first.
    for (let f = 0; f < m.fragCount; f++) m.setState(f, FragState.Acked);
    m.nextFrag = m.fragCount;
    m.gap = GapState.NeedsSend;
    (this.lost ??= new PairQueue<OutMessage>()).push(m, GAP_FRAGMENT);
    this.sink.markPending(this.index);
  }

  /** The GAP frame for given-up `m`: its first sequence and how many it skips (PROTOCOL §3). */
  private writeGap(bytes: Uint8Array, pos: number, room: number, into: PacketContents, m: OutMessage): number {
    const size = GAP_FRAME_BYTES;
    if (size > room || !this.sink.takeGapSlot()) return 0;
    this.lost!.shift();
    if (this.lost!.length === 0) this.lost = undefined;
    const seq = m.seqBase & 0xffff;
    writeGapFrame(bytes, pos, this.index, this.kind, seq, m.fragCount);
    m.gap = GapState.InFlight;
    into.add(m, GAP_FRAGMENT);
    into.resends++;
    this.resends++;
    return size;
  }

  /** The GAP of given-up `m` was acknowledged: the message no longer holds the window. */
  private gapDelivered(m: OutMessage): void {
    if (m.gap !== GapState.InFlight) return;
    m.gap = GapState.Acked;
    m.done = true;
    if (this.queueHead === m && this.queueLength > this.freshCount) this.shiftQueue();
    if (this.freshCount > 0) this.sink.markPending(this.index);
  }

  /**
   * The path's datagram room is now `packetRoom` (path MTU discovery found a black hole below
   * the base, or the size came back up). Messages are cut for min(packetRoom, the base's room):
   * - queued ones that have not started are cut again (nothing of them is on the wire);
   * - with `resendStarted` (the room shrank, and the caller knows the path does not carry the
   *   frames cut before: see ChannelSet.fitTo), a started message with a frame not yet acknowledged that no longer
   *   fits is sent again as a new message (new sequences, cut for the new room), first among
   *   the queued ones and in the order they started. Its receipt and deadline go with it. What
   *   the old one took stays settled on the wire: on a reliable-ordered channel a GAP frame
   *   stands for its sequences (PROTOCOL §3), elsewhere it is dropped, and the receiver drops
   *   the fragments of it that did arrive as incomplete. Unreliable kinds drop such a message.
   *   (Reliable-ordered: the new message comes after the started ones that fit and keep their
   *   sequences; order holds among the messages resent.)
   * Returns the new messages (the caller registers their deadlines).
   */
  fitTo(packetRoom: number, resendStarted: boolean): OutMessage[] {
    const single = Math.min(packetRoom - FRAME_HEADER_BYTES - this.keyBytes, this.basePayload);
    if (single !== this.singleFramePayload) {
      this.singleFramePayload = single;
      this.fragmentPayload = single - FRAGMENT_EXTRA_BYTES;
      for (let m = this.freshHead; m !== undefined; m = m.next) if (m.seqBase === -1 && !m.abandoned) m.recut();
    }
    if (!resendStarted || single === this.basePayload) return NO_MESSAGES;
    const frameRoom = single + FRAME_HEADER_BYTES + this.keyBytes;
    const started: OutMessage[] = [];
    if (this.windowed) {
      // The live messages, then the fresh head if it started (fresh ones after it have not).
      for (let m = this.queueHead; m !== undefined; m = m.next) {
        if (m.seqBase === -1) break;
        started.push(m);
      }
    } else {
      if (this.newestStarted !== undefined) started.push(this.newestStarted);
      const head = this.freshHead;
      if (head !== undefined && head.seqBase !== -1 && head !== this.newestStarted) started.push(head);
    }
    const copies: OutMessage[] = [];
    for (const m of started) {
      if (!m.live || m.gap !== GapState.None || !this.tooBigFor(m, frameRoom)) continue;
      if (!this.reliable) {
        this.abandon(m);
        continue;
      }
      if (this.kind === DeliveryKind.LatestState) {
        const ks = this.keys!.get(m.key);
        if (ks === undefined || ks.current !== m || ks.pending !== undefined) {
          this.abandon(m); // a newer value replaces it anyway
          continue;
        }
      } else if (this.kind === DeliveryKind.ReliableSequenced && m !== this.newestStarted) {
        this.abandon(m);
        continue;
      }
      copies.push(this.resendAsNew(m));
    }
    if (copies.length > 0) this.queueFirst(copies);
    return copies;
  }

  /** A frame of started `m` not yet acknowledged is longer than `frameRoom`. */
  private tooBigFor(m: OutMessage, frameRoom: number): boolean {
    for (let f = 0; f < m.fragCount; f++) {
      if (m.state(f) !== FragState.Acked && this.frameBytes(m, f) > frameRoom) return true;
    }
    return false;
  }

  /** Give up started `m` without reporting it, and return a new message carrying its data,
   *  receipt and deadline (cut now); `m` never writes or resends a frame again. */
  private resendAsNew(m: OutMessage): OutMessage {
    const copy = new OutMessage(this, m.data, m.length, this.fragmentCountFor(m.length), m.key, m.version, m.receipt);
    if (m.shared) copy.shared = true;
    copy.deadline = m.deadline;
    m.receipt = 0;
    m.takeData(); // the copy holds the bytes now (and their count in heldBytes)
    this.mtuResends++;
    if (this.kind === DeliveryKind.ReliableOrdered) {
      // Its sequences were taken: a GAP frame tells the receiver to skip them.
      for (let f = 0; f < m.fragCount; f++) m.setState(f, FragState.Acked);
      m.nextFrag = m.fragCount;
      m.gap = GapState.NeedsSend;
      (this.lost ??= new PairQueue<OutMessage>()).push(m, GAP_FRAGMENT);
    } else {
      this.abandon(m);
    }
    if (this.kind === DeliveryKind.LatestState) this.keys!.get(m.key)!.pending = copy;
    return copy;
  }

  /** Put `list` (in order) first among the messages not yet started: after the fresh head if
   *  it started (the live ones stay in sequence order), else before it. */
  private queueFirst(list: OutMessage[]): void {
    const head = this.freshHead;
    const headStarted = head !== undefined && head.seqBase !== -1;
    // The message the list goes after (undefined: the queue's head).
    let before: OutMessage | undefined;
    if (headStarted) before = head;
    else if (head === undefined) before = this.queueTail;
    else if (head !== this.queueHead) {
      before = this.queueHead!;
      while (before.next !== head) before = before.next!;
    }
    const after = before === undefined ? this.queueHead : before.next;
    for (let i = 0; i < list.length - 1; i++) list[i].next = list[i + 1];
    const last = list[list.length - 1];
    last.next = after;
    if (before === undefined) this.queueHead = list[0];
    else before.next = list[0];
    if (after === undefined) this.queueTail = last;
    this.queueLength += list.length;
    this.freshCount += list.length;
    if (!headStarted) this.freshHead = list[0];
    this.sink.markPending(this.index);
  }

  /** Stop caring about `m`: never (re)send it; a plain receipt reports lost. */
  abandon(m: OutMessage): void {
    if (m.abandoned || m.done) return;
    m.abandoned = true;
    this.freeData(m);
    if (m.receipt !== 0 && !m.lossReported) {
      m.lossReported = true;
      this.sink.receiptSettled(m.receipt, false);
      m.receipt = 0;
    }
  }

  private settleKeyReceipts(ks: KeyState, upToVersion: number, delivered: boolean): void {
    const versions = ks.receiptVersions;
    const ids = ks.receiptIds;
    let kept = 0;
    for (let i = 0; i < versions.length; i++) {
      if (versions[i] <= upToVersion) {
        this.sink.receiptSettled(ids[i], delivered);
      } else {
        versions[kept] = versions[i];
        ids[kept] = ids[i];
        kept++;
      }
    }
    versions.length = kept;
    ids.length = kept;
  }

  /** Redundancy / piggyback copies written (not resends: nothing was reported lost). */
  get copiesSent(): number {
    return this.ring === undefined ? 0 : this.ring.copiesSent;
  }
  /** Frame bytes of those copies. */
  get copyBytes(): number {
    return this.ring === undefined ? 0 : this.ring.copyBytes;
  }

  /** Connection closed: abandon everything; every outstanding receipt reports lost. */
  failAll(): void {
    const ring = this.ring;
    if (ring !== undefined) {
      for (let m = ring.shiftOldest(); m !== undefined; m = ring.shiftOldest()) if (!this.reliable) this.freeData(m);
    }
    // Fresh messages first, then the live ones (the order their receipts report lost).
    const fresh = this.freshHead;
    for (let m = fresh; m !== undefined; m = m.next) this.abandon(m);
    for (let m = this.queueHead; m !== fresh && m !== undefined; m = m.next) this.abandon(m);
    for (let m = this.shiftQueue(); m !== undefined; m = this.shiftQueue());
    this.freshHead = undefined;
    this.freshCount = 0;
    this.unstamped = undefined;
    if (this.newestStarted !== undefined) this.abandon(this.newestStarted);
    this.lost?.clear();
    if (this.keys !== undefined) {
      for (const ks of this.keys.values()) {
        if (ks.current !== undefined) this.abandon(ks.current);
        ks.pending = undefined;
        this.settleKeyReceipts(ks, Infinity, false);
      }
    }
    this.heldBytes = 0;
  }
}
