/**
 * The receiving half of the channels: what the engine leaves to the host. The engine already
 * applied the per-channel rules of PROTOCOL.md §3 (dedup windows, sequenced freshness, ordered
 * release); this layer copies payloads out of the arena, reassembles fragments, applies
 * LatestState per-key freshness, and bounds the memory a peer can make it hold.
 */
import { DeliveryKind, MESSAGE_WINDOW } from "../engine/abi.js";
import { sequenceDiff } from "../engine/sequence.js";
import { copyHeld, copyMessage, copyOut } from "./receive-copy.js";

/** Bookkeeping charged per partial message and per expected fragment, so that zero-length
 *  fragment starts also count against the receive-buffer bound. */
export const PARTIAL_OVERHEAD_BYTES = 64;
export const FRAGMENT_OVERHEAD_BYTES = 8;
/** Charged per held (out-of-order) ReliableOrdered frame besides its payload. */
export const HELD_OVERHEAD_BYTES = 16;

/** Charged for a Partial's last fragment besides its bytes (a buffer of its own), and per chunk
 *  of its other fragments besides the chunk's bytes. */
export const PIECE_OVERHEAD_BYTES = 64;
/**
 * A Partial keeps its fragments but the last CHUNK_FRAGMENTS to a buffer (a chunk), each at its
 * place, the chunk made when the first of its fragments arrives and charged whole. One buffer
 * per fragment made a garbage collector's full pass cost ~1 us per held fragment (a server
 * holding 256 MiB of partials: ~0.2 s per pass); a chunk is one buffer for up to 16 of them.
 */
export const CHUNK_FRAGMENTS = 16;

/**
 * A message being reassembled from fragments that may arrive in any order. Every fragment but
 * the last has the same length (the sender's fragment size), so the first non-last fragment to
 * arrive fixes the layout, and each later one is checked against it. Fragments are kept in
 * chunks of CHUNK_FRAGMENTS (the last one in a buffer of its own), made as fragments arrive, and
 * the message is joined when the last one is in: memory follows what arrived, rounded up to a
 * chunk, and what is charged is what was allocated. (Allocating the whole message at its first
 * fragment would let a peer make a 1 KB datagram allocate and zero 1 MiB, over and over on the
 * kinds where the next start drops the partial; a chunk is at most 16 fragments.)
 */
export class Partial {
  received = 0;
  /** Bytes held for this partial (its chunks, last fragment and their overhead), charged to the bound. */
  storedBytes = 0;
  /** Length of every fragment but the last; 0 until one arrived. */
  fragSize = 0;
  /** Length of the last fragment once it arrived, else -1. */
  lastLength = -1;
  /** 1 for each fragment that arrived (duplicates are counted, not stored twice). */
  private readonly arrived: Uint8Array;
  /** Fragment i (not the last) at (i % CHUNK_FRAGMENTS) * fragSize of chunk i / CHUNK_FRAGMENTS. */
  private readonly chunks: (Uint8Array | undefined)[];
  private last: Uint8Array | undefined = undefined;
  constructor(
    readonly channel: ReceiveChannel,
    /** Unwrapped message id (messageSeq of fragment 0). */
    readonly id: number,
    readonly fragCount: number,
    readonly key: number,
  ) {
    this.arrived = new Uint8Array(fragCount);
    this.chunks = new Array<Uint8Array | undefined>(Math.ceil((fragCount - 1) / CHUNK_FRAGMENTS)).fill(undefined);
  }
  get chargedBytes(): number {
    return PARTIAL_OVERHEAD_BYTES + FRAGMENT_OVERHEAD_BYTES * this.fragCount + this.storedBytes;
  }
  has(i: number): boolean {
    return this.arrived[i] === 1;
  }
  /** What keeping fragment `i` of `length` bytes adds to storedBytes (after fits() said it belongs:
   *  a fragment but the last is fragSize long, or fixes it). */
  placeCost(i: number, length: number): number {
    if (i === this.fragCount - 1) return length + PIECE_OVERHEAD_BYTES;
    const c = (i / CHUNK_FRAGMENTS) | 0;
    return this.chunks[c] !== undefined ? 0 : this.chunkFragments(c) * length + PIECE_OVERHEAD_BYTES;
  }
  /** Keep fragment `i` (after fits() said it belongs); returns what it added to storedBytes. */
  place(i: number, arena: Uint8Array, offset: number, length: number): number {
    const cost = this.placeCost(i, length);
    if (i === this.fragCount - 1) {
      this.lastLength = length;
      this.last = copyOut(arena, offset, length);
    } else {
      if (this.fragSize === 0) this.fragSize = length;
      const c = (i / CHUNK_FRAGMENTS) | 0;
      const chunk = (this.chunks[c] ??= new Uint8Array(this.chunkFragments(c) * length));
      chunk.set(arena.subarray(offset, offset + length), (i % CHUNK_FRAGMENTS) * length);
    }
    this.arrived[i] = 1;
    this.storedBytes += cost;
    this.received++;
    return cost;
  }
  /** The whole message, once every fragment is in: the chunks and the last fragment joined. */
  message(): Uint8Array {
    const out = new Uint8Array((this.fragCount - 1) * this.fragSize + this.lastLength);
    const chunkBytes = CHUNK_FRAGMENTS * this.fragSize;
    for (let c = 0; c < this.chunks.length; c++) out.set(this.chunks[c]!, c * chunkBytes);
    out.set(this.last!, (this.fragCount - 1) * this.fragSize);
    return out;
  }
  /** Fragments chunk `c` holds: CHUNK_FRAGMENTS, fewer in the one before the last fragment. */
  private chunkFragments(c: number): number {
    return Math.min(CHUNK_FRAGMENTS, this.fragCount - 1 - c * CHUNK_FRAGMENTS);
  }
}

/** Held-ring entry for a ReliableOrdered fragment whose bytes went straight into its Partial. */
const IN_PARTIAL: Uint8Array = new Uint8Array(0);
/** A held-ring marker: a sequence a GAP frame skips (the sender gave its message up). */
const GAP: Uint8Array = new Uint8Array(0);

/** Everything a channel needs from its ChannelSet (accounting and output). */
export interface ReceiveHost {
  deliver(channel: number, data: Uint8Array, key: number | undefined): void;
  charge(bytes: number): void;
  /** Make room for `bytes` more unreliable bytes by evicting unreliable partials; false if impossible. */
  makeRoomForUnreliable(bytes: number): boolean;
  trackUnreliable(p: Partial): void;
  untrackUnreliable(p: Partial): void;
  countInvalid(): void;
  countStale(): void;
  countDuplicate(): void;
  /** A redundancy copy discarded (the message was delivered already). */
  countCopyDropped(): void;
}

/**
 * Width of the duplicate filter of `unreliable` channels, in messageSeqs behind the newest
 * seen (bit i of `seenBits` = newest - i arrived). The sender only copies messages within this
 * distance of its next messageSeq (copy-ring.ts COPY_SEQ_WINDOW).
 */
export const UNRELIABLE_DEDUP_WINDOW = 32;

/** First size of a ReliableOrdered held-frame ring (grows by doubling up to MESSAGE_WINDOW). */
const HELD_RING_START = 16;
const NO_SEQ = -1;
/**
 * Sentinels of the unwrapped-sequence fields, small integers rather than NaN: a field that
 * ever holds NaN is stored as a boxed double, one more object to reach per received frame.
 * `newestSeen` starts at a wire sequence (>= 0) and only grows; message ids are at least
 * -(32768 + 65535) (a frame half the sequence space behind, minus a fragment index).
 */
const NOT_SEEN = -1;
/** Unsequenced kinds sweep for hopeless partials when newestSeen moved this far (evictHopeless). */
const HOPELESS_SWEEP_STEP = MESSAGE_WINDOW / 4;
const NO_ID = -0x80000000;

/**
 * ReliableOrdered frames held (copied) until the engine releases them, by 16-bit messageSeq.
 * A ring indexed by `seq & (size - 1)` that starts small and doubles when two held sequences
 * collide; at MESSAGE_WINDOW slots nothing live can collide (the engine only holds frames
 * within its 1024-message window).
 */
class HeldRing {
  count = 0;
  private seqs: Int32Array = new Int32Array(HELD_RING_START).fill(NO_SEQ);
  private payloads: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(HELD_RING_START);
  private frags: Int32Array = new Int32Array(HELD_RING_START);

  /** Store a held frame; returns the payload it replaced (same seq held twice), if any. */
  put(seq: number, payload: Uint8Array, fragInfo: number): Uint8Array | undefined {
    let i = seq & (this.seqs.length - 1);
    while (this.seqs[i] !== NO_SEQ && this.seqs[i] !== seq && this.seqs.length < MESSAGE_WINDOW) {
      this.grow();
      i = seq & (this.seqs.length - 1);
    }
    const old = this.seqs[i] === NO_SEQ ? undefined : this.payloads[i];
    if (old === undefined) this.count++;
    this.seqs[i] = seq;
    this.payloads[i] = payload;
    this.frags[i] = fragInfo;
    return old;
  }

  has(seq: number): boolean {
    return this.seqs[seq & (this.seqs.length - 1)] === seq;
  }

  /** Remove and return the frame held for `seq` (its fragInfo in `lastFragInfo`). */
  take(seq: number): Uint8Array | undefined {
    const i = seq & (this.seqs.length - 1);
    if (this.seqs[i] !== seq) return undefined;
    const payload = this.payloads[i];
    this.lastFragInfo = this.frags[i];
    this.seqs[i] = NO_SEQ;
    this.payloads[i] = undefined;
    this.count--;
    return payload;
  }
  lastFragInfo = 0;

  private grow(): void {
    const size = this.seqs.length * 2;
    const seqs = new Int32Array(size).fill(NO_SEQ);
    const payloads = new Array<Uint8Array | undefined>(size);
    const frags = new Int32Array(size);
    for (let i = 0; i < this.seqs.length; i++) {
      const seq = this.seqs[i];
      if (seq === NO_SEQ) continue;
      // Held seqs lie within one 1024-message window, so they stay distinct mod any size <= 1024;
      // at a size where two still collide, the later grow() call (from put) handles it.
      const j = seq & (size - 1);
      seqs[j] = seq;
      payloads[j] = this.payloads[i];
      frags[j] = this.frags[i];
    }
    this.seqs = seqs;
    this.payloads = payloads;
    this.frags = frags;
  }
}

export class ReceiveChannel {
  // Field order is memory layout (V8 places fields in the order they are defined): what every
  // received message reads first (a whole in-order message reads index, kind, newestSeen,
  // orderedId and messagesReceived), so a cold connection pays one cache line of this object.
  readonly index: number;
  readonly kind: DeliveryKind;
  /** Newest messageSeq seen on this channel, unwrapped; NOT_SEEN before the first. */
  private newestSeen = NOT_SEEN;
  /** @internal Partials looked at by hopeless sweeps (a test bounds the work per fragment start). */
  partialVisits = 0;
  /** newestSeen at the last sweep for hopeless partials (unsequenced kinds; see evictHopeless). */
  private sweptAt = NOT_SEEN;
  // ReliableOrdered: the fragmented message whose fragments are being released in order (its
  // bytes are in a Partial, placed when each fragment arrived, held or not).
  private orderedId = NO_ID;
  /** Messages delivered on this channel (ChannelStats.messagesReceived). */
  messagesReceived = 0;
  private readonly host: ReceiveHost;
  // ReliableOrdered: frames held until released (created on the first hold).
  private held: HeldRing | undefined = undefined;
  private orderedNext = 0;
  /** ReliableOrdered: a GAP skipped sequences in order, and no message has started since. */
  private skipping = false;
  /** Unreliable: bit i set = messageSeq (newestSeen - i) arrived (the duplicate filter). */
  private seenBits = 0;
  /** Sequenced kinds: newest message id delivered, unwrapped (NO_ID: none yet). */
  private lastDelivered = NO_ID;
  readonly unreliable: boolean;
  /** The channel's `redundancy` / `piggyback` (same on both peers): copies are expected. */
  readonly copies: number;
  // ---- read rarely ----
  readonly maxMessageBytes: number;
  readonly maxKeys: number;
  /** Messages being reassembled by id (created on the first fragment). */
  private partialsById: Map<number, Partial> | undefined = undefined;
  /** LatestState: newest delivered message id per live key, unwrapped (created on the first). */
  private keyNewest: Map<number, number> | undefined = undefined;
  /**
   * LatestState: deleted keys -> id of their tombstone, in arrival order. Kept until the
   * tombstone is a full message window behind the newest seen messageSeq: by then the engine
   * rejects any older value of the key as stale, so it can no longer resurrect the key. At most
   * MESSAGE_WINDOW entries (each has its own messageSeq within one window).
   */
  private tombstones: Map<number, number> | undefined = undefined;

  constructor(index: number, kind: DeliveryKind, maxMessageBytes: number, maxKeys: number, host: ReceiveHost, copies = 0) {
    this.index = index;
    this.kind = kind;
    this.host = host;
    this.unreliable = kind === DeliveryKind.Unreliable || kind === DeliveryKind.UnreliableSequenced;
    this.copies = copies;
    this.maxMessageBytes = maxMessageBytes;
    this.maxKeys = maxKeys;
  }

  /**
   * `unreliable` channels: the engine delivers every frame (kind 0 has no receiver rule), so the
   * peer's redundancy copies are filtered here, on every unreliable channel since it costs two
   * integer operations: a messageSeq already seen within the last UNRELIABLE_DEDUP_WINDOW is
   * dropped. One further behind cannot be checked: on a channel configured with redundancy it
   * is dropped (it is almost surely a late copy), on one without it is delivered (a late
   * original, as before). Returns the unwrapped sequence, or NaN to drop the frame.
   */
  private firstArrival(seq: number): number {
    if (this.newestSeen === NOT_SEEN) {
      this.newestSeen = seq;
      this.seenBits = 1;
      return seq;
    }
    const d = sequenceDiff(seq, this.newestSeen & 0xffff);
    if (d > 0) {
      this.seenBits = d >= UNRELIABLE_DEDUP_WINDOW ? 1 : (this.seenBits << d) | 1;
      this.newestSeen += d;
      return this.newestSeen;
    }
    if (-d >= UNRELIABLE_DEDUP_WINDOW) {
      if (this.copies === 0) return this.newestSeen + d;
      this.host.countCopyDropped();
      return NaN;
    }
    const bit = 1 << -d;
    if ((this.seenBits & bit) !== 0) {
      if (this.copies === 0) this.host.countDuplicate();
      else this.host.countCopyDropped();
      return NaN;
    }
    this.seenBits |= bit;
    return this.newestSeen + d;
  }


  /** 16-bit wire sequence -> unwrapped, relative to the newest seen (and update it). */
  private unwrap(seq: number): number {
    if (this.newestSeen === NOT_SEEN) {
      this.newestSeen = seq;
      return seq;
    }
    const u = this.newestSeen + sequenceDiff(seq, this.newestSeen & 0xffff);
    if (u > this.newestSeen) this.newestSeen = u;
    return u;
  }

  /** An engine Message record (deliverable now, in order for ordered channels). */
  onMessage(
    seq: number,
    fragInfo: number,
    key: number,
    arena: Uint8Array,
    offset: number,
    length: number,
  ): void {
    if (this.kind === DeliveryKind.ReliableOrdered) {
      // Every frame unwraps, so the newest seen stays current for fragment ids and eviction.
      const s = this.unwrap(seq);
      if (fragInfo === 0) this.inOrder(seq, 0, copyMessage(arena, offset, length));
      else {
        this.fragment(s, fragInfo >>> 16, fragInfo & 0xffff, 0, arena, offset, length);
        this.inOrder(seq, fragInfo, IN_PARTIAL);
      }
      return;
    }
    const s = this.kind === DeliveryKind.Unreliable ? this.firstArrival(seq) : this.unwrap(seq);
    if (Number.isNaN(s)) return;
    if (fragInfo === 0) {
      this.complete(s, key, copyMessage(arena, offset, length));
      return;
    }
    this.fragment(s, fragInfo >>> 16, fragInfo & 0xffff, key, arena, offset, length);
  }

  /**
   * ReliableOrdered: an unfragmented engine Message record (next in order); the ChannelSet
   * copies and delivers it (its fast path). Same as onMessage's ordered branch without the copy.
   */
  wholeInOrder(seq: number): void {
    this.unwrap(seq);
    this.skipping = false;
    if (this.orderedId !== NO_ID) this.dropOrdered();
    this.messagesReceived++;
  }

  /** An engine Hold record: keep a copy until its Release. */
  onHold(seq: number, fragInfo: number, arena: Uint8Array, offset: number, length: number): void {
    if (this.kind !== DeliveryKind.ReliableOrdered) {
      this.host.countInvalid();
      return;
    }
    this.held ??= new HeldRing();
    let payload = IN_PARTIAL;
    const s = this.unwrap(seq);
    if (fragInfo === 0) payload = copyHeld(arena, offset, length);
    else this.fragment(s, fragInfo >>> 16, fragInfo & 0xffff, 0, arena, offset, length);
    const old = this.held.put(seq, payload, fragInfo);
    if (old !== undefined) this.host.charge(-(old.length + HELD_OVERHEAD_BYTES));
    this.host.charge(payload.length + HELD_OVERHEAD_BYTES);
  }

  /** An engine Release record: the held frame `seq` is next in order. */
  onRelease(seq: number): void {
    const payload = this.held?.take(seq);
    if (payload === undefined) {
      this.host.countInvalid();
      return;
    }
    this.host.charge(-(payload.length + HELD_OVERHEAD_BYTES));
    if (payload === GAP) return this.skipped();
    this.inOrder(seq, this.held!.lastFragInfo, payload);
  }

  /**
   * An engine Skip record: the sender gave up the messages that `seq` .. `seq + count - 1`
   * belong to (their deadline passed) and those sequences never arrived. Nothing is delivered
   * for them; a message they leave incomplete is dropped (see `skipping`).
   */
  onSkip(seq: number, count: number): void {
    for (let k = 0; k < count; k++) this.unwrap((seq + k) & 0xffff);
    this.skipped();
  }

  /**
   * An engine HoldGap record: as onSkip for those of `seq` .. `seq + count - 1` that hold
   * nothing, once the in-order point reaches them (their Releases); held ones stay.
   */
  onHoldGap(seq: number, count: number): void {
    const held = (this.held ??= new HeldRing());
    for (let k = 0; k < count; k++) {
      const s = (seq + k) & 0xffff;
      this.unwrap(s);
      if (held.has(s)) continue;
      held.put(s, GAP, 0);
      this.host.charge(HELD_OVERHEAD_BYTES);
    }
  }

  /**
   * In order, a sequence was skipped: the fragmented message in progress cannot complete, and
   * the fragments after the skip up to the next message's start belong to messages that cannot
   * either. They are dropped without counting them invalid: the sender gave them up.
   */
  private skipped(): void {
    if (this.orderedId !== NO_ID) {
      const p = this.partialsById?.get(this.orderedId);
      if (p !== undefined) this.dropPartial(p);
      this.orderedId = NO_ID;
      this.orderedNext = 0;
    }
    this.skipping = true;
  }

  /**
   * ReliableOrdered: frames come here in messageSeq order (engine Message records and Releases),
   * so a message's fragments come contiguously; their bytes are already in the Partial.
   */
  private inOrder(seq: number, fragInfo: number, payload: Uint8Array): void {
    if (this.skipping) {
      if (fragInfo !== 0 && fragInfo >>> 16 !== 0) {
        // A later fragment of a message a skip left incomplete.
        const p = this.partialsById?.get(this.unwrap(seq) - (fragInfo >>> 16));
        if (p !== undefined) this.dropPartial(p);
        return;
      }
      this.skipping = false;
    }
    if (fragInfo === 0) {
      if (this.orderedId !== NO_ID) this.dropOrdered();
      this.deliver(payload, undefined);
      return;
    }
    const fragIndex = fragInfo >>> 16;
    const fragCount = fragInfo & 0xffff;
    const id = this.unwrap(seq) - fragIndex;
    if (fragIndex === 0) {
      if (this.orderedId !== NO_ID) this.dropOrdered();
      this.orderedId = id;
      this.orderedNext = 0;
    }
    const p = this.partialsById?.get(id);
    if (id !== this.orderedId || fragIndex !== this.orderedNext || p === undefined || p.fragCount !== fragCount) {
      // Not the continuation of the message in progress (or none in progress), or its partial
      // was rejected: drop what there is.
      if (this.orderedId !== NO_ID) this.dropOrdered();
      if (p !== undefined) this.dropPartial(p);
      this.host.countInvalid();
      return;
    }
    this.orderedNext++;
    if (this.orderedNext < fragCount) return;
    this.orderedId = NO_ID;
    this.orderedNext = 0;
    if (p.received !== fragCount) {
      this.dropPartial(p);
      this.host.countInvalid();
      return;
    }
    this.dropPartial(p);
    this.deliver(p.message(), undefined);
  }

  private dropOrdered(): void {
    const p = this.partialsById?.get(this.orderedId);
    if (p !== undefined) this.dropPartial(p);
    this.orderedId = NO_ID;
    this.orderedNext = 0;
    this.host.countInvalid();
  }

  /** A fragment on a kind reassembled by message id (= messageSeq - fragIndex). */
  private fragment(
    s: number,
    fragIndex: number,
    fragCount: number,
    key: number,
    arena: Uint8Array,
    offset: number,
    length: number,
  ): void {
    if (fragCount > MESSAGE_WINDOW || fragIndex >= fragCount) {
      this.host.countInvalid();
      return;
    }
    const id = s - fragIndex;
    if (this.isSequenced() && this.lastDelivered !== NO_ID && id <= this.lastDelivered) {
      this.host.countStale();
      return;
    }
    const partials = (this.partialsById ??= new Map<number, Partial>());
    let p = partials.get(id);
    if (p === undefined) {
      this.evictHopeless(id);
      p = new Partial(this, id, fragCount, key);
      if (!this.fits(p, fragIndex, length) || (this.unreliable && !this.host.makeRoomForUnreliable(p.chargedBytes + p.placeCost(fragIndex, length)))) {
        this.host.countInvalid();
        return;
      }
      partials.set(id, p);
      this.host.charge(p.chargedBytes);
      if (this.unreliable) this.host.trackUnreliable(p);
    } else if (p.fragCount !== fragCount || p.key !== key) {
      this.dropPartial(p);
      this.host.countInvalid();
      return;
    } else if (p.has(fragIndex)) {
      this.host.countDuplicate();
      return;
    } else {
      if (!this.fits(p, fragIndex, length)) {
        // Inconsistent with the fragments already in, or past maxMessageBytes.
        this.dropPartial(p);
        this.host.countInvalid();
        return;
      }
      if (this.unreliable && !this.host.makeRoomForUnreliable(p.placeCost(fragIndex, length))) {
        // Could not fit even after evicting others: this message is the one to go.
        this.dropPartial(p);
        this.host.countInvalid();
        return;
      }
      if (!partials.has(id)) {
        // Evicted by the room-making above.
        this.host.countInvalid();
        return;
      }
    }
    this.place(p, fragIndex, arena, offset, length);
    // ReliableOrdered messages complete when their last fragment is released in order.
    if (p.received === fragCount && this.kind !== DeliveryKind.ReliableOrdered) {
      this.dropPartial(p);
      this.complete(id, key, p.message());
    }
  }

  /**
   * Whether fragment `i` (`length` bytes) can belong to `p`: every fragment but the last has
   * the same non-zero length, the last is no longer, and the whole fits maxMessageBytes.
   */
  private fits(p: Partial, i: number, length: number): boolean {
    const max = this.maxMessageBytes;
    if (i === p.fragCount - 1) {
      // Every other fragment is at least as long as the last one.
      if (p.fragCount * length > max) return false;
      return p.fragSize === 0 || (length <= p.fragSize && (p.fragCount - 1) * p.fragSize + length <= max);
    }
    if (length === 0) return false;
    if (p.fragSize !== 0) return length === p.fragSize;
    // The first non-last fragment fixes the layout.
    if (p.lastLength > length) return false;
    return (p.fragCount - 1) * length + (p.lastLength >= 0 ? p.lastLength : 1) <= max;
  }

  /** Keep fragment `i` (after fits() said it belongs), charged. */
  private place(p: Partial, i: number, arena: Uint8Array, offset: number, length: number): void {
    this.host.charge(p.place(i, arena, offset, length));
  }

  /**
   * Partials that can never complete: on sequenced kinds anything older than a newer message
   * id; on the others, anything whose last fragment is a full window behind the newest seen
   * messageSeq (the engine would reject its missing fragments as stale; an honest sender never
   * lets that happen, PROTOCOL.md §3 and the sender's flow control).
   */
  private evictHopeless(newId: number): void {
    const partials = this.partialsById;
    if (partials === undefined || partials.size === 0) return;
    const sequenced = this.isSequenced();
    // Unsequenced kinds: a partial becomes hopeless only as newestSeen moves on, so the sweep
    // waits until it moved HOPELESS_SWEEP_STEP since the last one (a hopeless partial lingers
    // at most that many sequences more). Sweeping at every new partial would cost a pass over
    // every live one (~1024 a peer can keep open) per fragment start, when a peer opens a new
    // message with each frame. Sequenced kinds keep at
    // most a couple of partials (each start drops the older ones), so they sweep every time.
    if (!sequenced) {
      if (this.newestSeen - this.sweptAt < HOPELESS_SWEEP_STEP) return;
      this.sweptAt = this.newestSeen;
    }
    for (const p of partials.values()) {
      this.partialVisits++;
      const hopeless = sequenced ? p.id < newId : p.id + p.fragCount - 1 <= this.newestSeen - MESSAGE_WINDOW;
      if (hopeless) {
        this.dropPartial(p);
        if (sequenced) this.host.countStale();
        else this.host.countInvalid();
      }
    }
  }

  dropPartial(p: Partial): void {
    const partials = this.partialsById;
    if (partials === undefined || partials.get(p.id) !== p) return;
    partials.delete(p.id);
    this.host.charge(-p.chargedBytes);
    if (this.unreliable) this.host.untrackUnreliable(p);
  }

  private isSequenced(): boolean {
    return this.kind === DeliveryKind.UnreliableSequenced || this.kind === DeliveryKind.ReliableSequenced;
  }

  /**
   * LatestState: deliver a key's value only if newer than the newest delivered for that key
   * (live or deleted). An empty value is a tombstone: the key is deleted (ChannelSet.deleteKey).
   */
  private completeKeyed(id: number, key: number, data: Uint8Array): void {
    const live = (this.keyNewest ??= new Map<number, number>());
    const newest = live.get(key) ?? this.tombstones?.get(key);
    if (newest !== undefined && id <= newest) {
      this.host.countStale();
      return;
    }
    if (data.length === 0) {
      live.delete(key);
      const tombstones = (this.tombstones ??= new Map<number, number>());
      tombstones.delete(key); // re-insert at the end: the map stays in arrival order
      tombstones.set(key, id);
      this.purgeTombstones();
      this.deliver(data, key);
      return;
    }
    if (newest === undefined || !live.has(key)) {
      if (live.size >= this.maxKeys) {
        this.host.countInvalid();
        return;
      }
      this.tombstones?.delete(key);
    }
    live.set(key, id);
    this.deliver(data, key);
  }

  /** Forget tombstones a full message window behind the newest seen messageSeq. */
  private purgeTombstones(): void {
    const tombstones = this.tombstones;
    if (tombstones === undefined) return;
    const horizon = this.newestSeen - MESSAGE_WINDOW;
    for (const [key, id] of tombstones) {
      if (id > horizon) break;
      tombstones.delete(key);
    }
  }

  /** Hand a message to the ChannelSet's inbox (and count it). */
  private deliver(data: Uint8Array, key: number | undefined): void {
    this.messagesReceived++;
    this.host.deliver(this.index, data, key);
  }

  /** A whole message (unfragmented or reassembled) with unwrapped id `id`. */
  private complete(id: number, key: number, data: Uint8Array): void {
    switch (this.kind) {
      case DeliveryKind.UnreliableSequenced:
      case DeliveryKind.ReliableSequenced:
        if (this.lastDelivered !== NO_ID && id <= this.lastDelivered) {
          this.host.countStale();
          return;
        }
        this.lastDelivered = id;
        this.deliver(data, undefined);
        return;
      case DeliveryKind.LatestState:
        this.completeKeyed(id, key >>> 0, data);
        return;
      default:
        this.deliver(data, undefined);
    }
  }
}
