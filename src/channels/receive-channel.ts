/**
 * The receiving half of the channels: what the engine leaves to the host. The engine already
 * applied the per-channel rules of PROTOCOL.md §3 (dedup windows, sequenced freshness, ordered
 * release); this layer copies payloads out of the arena, reassembles fragments, applies
 * LatestState per-key freshness, and bounds the memory a peer can make it hold.
 */
import { DeliveryKind, MESSAGE_WINDOW } from "../engine/abi.js";
import { sequenceDiff } from "../engine/sequence.js";

/** Bookkeeping charged per partial message and per expected fragment, so that zero-length
 *  fragment starts also count against the receive-buffer bound. */
export const PARTIAL_OVERHEAD_BYTES = 64;
export const FRAGMENT_OVERHEAD_BYTES = 8;
/** Charged per held (out-of-order) ReliableOrdered frame besides its payload. */
export const HELD_OVERHEAD_BYTES = 16;

/** A message being reassembled from fragments that may arrive in any order. */
export class Partial {
  received = 0;
  payloadBytes = 0;
  readonly parts: (Uint8Array | undefined)[];
  constructor(
    readonly channel: ReceiveChannel,
    /** Unwrapped message id (messageSeq of fragment 0). */
    readonly id: number,
    readonly fragCount: number,
    readonly key: number,
  ) {
    this.parts = new Array<Uint8Array | undefined>(fragCount);
  }
  get chargedBytes(): number {
    return PARTIAL_OVERHEAD_BYTES + FRAGMENT_OVERHEAD_BYTES * this.fragCount + this.payloadBytes;
  }
}

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
}

export class ReceiveChannel {
  readonly partials = new Map<number, Partial>();
  /** Newest messageSeq seen on this channel, unwrapped; NaN before the first. */
  private newestSeen = NaN;
  /** Sequenced kinds: newest message id delivered, unwrapped. */
  private lastDelivered = NaN;
  /** LatestState: newest delivered message id per key, unwrapped. */
  private readonly keyNewest = new Map<number, number>();
  // ReliableOrdered: frames held until released (by messageSeq & (MESSAGE_WINDOW - 1)).
  private held: (Uint8Array | undefined)[] | undefined;
  private heldFrag: Int32Array | undefined;
  // ReliableOrdered: the fragmented message being assembled from in-order frames.
  private orderedParts: Uint8Array[] = [];
  private orderedCount = 0;
  private orderedBytes = 0;

  readonly unreliable: boolean;

  constructor(
    readonly index: number,
    readonly kind: DeliveryKind,
    readonly maxMessageBytes: number,
    readonly maxKeys: number,
    private readonly host: ReceiveHost,
  ) {
    this.unreliable = kind === DeliveryKind.Unreliable || kind === DeliveryKind.UnreliableSequenced;
    if (kind === DeliveryKind.ReliableOrdered) {
      this.held = new Array<Uint8Array | undefined>(MESSAGE_WINDOW);
      this.heldFrag = new Int32Array(MESSAGE_WINDOW);
    }
  }

  /** 16-bit wire sequence -> unwrapped, relative to the newest seen (and update it). */
  private unwrap(seq: number): number {
    if (Number.isNaN(this.newestSeen)) {
      this.newestSeen = seq;
      return seq;
    }
    const u = this.newestSeen + sequenceDiff(seq, this.newestSeen & 0xffff);
    if (u > this.newestSeen) this.newestSeen = u;
    return u;
  }

  /** An engine Message record (deliverable now, in order for ordered channels). */
  onMessage(seq: number, fragInfo: number, key: number, arena: Uint8Array, offset: number, length: number): void {
    if (this.kind === DeliveryKind.ReliableOrdered) {
      this.inOrder(fragInfo, arena.slice(offset, offset + length));
      return;
    }
    const s = this.unwrap(seq);
    if (fragInfo === 0) {
      this.complete(s, key, arena.slice(offset, offset + length));
      return;
    }
    this.fragment(s, fragInfo >>> 16, fragInfo & 0xffff, key, arena, offset, length);
  }

  /** An engine Hold record: keep a copy until its Release. */
  onHold(seq: number, fragInfo: number, arena: Uint8Array, offset: number, length: number): void {
    if (this.held === undefined || this.heldFrag === undefined) {
      this.host.countInvalid();
      return;
    }
    const i = seq & (MESSAGE_WINDOW - 1);
    const old = this.held[i];
    if (old !== undefined) this.host.charge(-(old.length + HELD_OVERHEAD_BYTES));
    this.held[i] = arena.slice(offset, offset + length);
    this.heldFrag[i] = fragInfo;
    this.host.charge(length + HELD_OVERHEAD_BYTES);
  }

  /** An engine Release record: the held frame `seq` is next in order. */
  onRelease(seq: number): void {
    if (this.held === undefined || this.heldFrag === undefined) {
      this.host.countInvalid();
      return;
    }
    const i = seq & (MESSAGE_WINDOW - 1);
    const payload = this.held[i];
    if (payload === undefined) {
      this.host.countInvalid();
      return;
    }
    this.held[i] = undefined;
    this.host.charge(-(payload.length + HELD_OVERHEAD_BYTES));
    this.inOrder(this.heldFrag[i], payload);
  }

  /** ReliableOrdered: frames arrive here in messageSeq order, so fragments are contiguous. */
  private inOrder(fragInfo: number, payload: Uint8Array): void {
    if (fragInfo === 0) {
      if (this.orderedCount !== 0) this.dropOrdered();
      this.host.deliver(this.index, payload, undefined);
      return;
    }
    const fragIndex = fragInfo >>> 16;
    const fragCount = fragInfo & 0xffff;
    if (fragIndex === 0) {
      if (this.orderedCount !== 0) this.dropOrdered();
      if (fragCount > MESSAGE_WINDOW) {
        this.host.countInvalid();
        return;
      }
      this.orderedCount = fragCount;
    } else if (fragCount !== this.orderedCount || fragIndex !== this.orderedParts.length) {
      // Not the continuation of the message in progress (or none in progress).
      if (this.orderedCount !== 0) this.dropOrdered();
      this.host.countInvalid();
      return;
    }
    if (this.orderedBytes + payload.length > this.maxMessageBytes) {
      this.dropOrdered();
      this.host.countInvalid();
      return;
    }
    this.orderedParts.push(payload);
    this.orderedBytes += payload.length;
    this.host.charge(payload.length);
    if (this.orderedParts.length === this.orderedCount) {
      const data = concat(this.orderedParts, this.orderedBytes);
      this.host.charge(-this.orderedBytes);
      this.orderedParts = [];
      this.orderedCount = 0;
      this.orderedBytes = 0;
      this.host.deliver(this.index, data, undefined);
    }
  }

  private dropOrdered(): void {
    this.host.charge(-this.orderedBytes);
    this.orderedParts = [];
    this.orderedCount = 0;
    this.orderedBytes = 0;
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
    if (this.isSequenced() && !Number.isNaN(this.lastDelivered) && id <= this.lastDelivered) {
      this.host.countStale();
      return;
    }
    let p = this.partials.get(id);
    if (p === undefined) {
      this.evictHopeless(id);
      p = new Partial(this, id, fragCount, key);
      const cost = p.chargedBytes + length;
      if (this.unreliable && !this.host.makeRoomForUnreliable(cost)) {
        this.host.countInvalid();
        return;
      }
      this.partials.set(id, p);
      this.host.charge(p.chargedBytes);
      if (this.unreliable) this.host.trackUnreliable(p);
    } else if (p.fragCount !== fragCount || p.key !== key) {
      this.dropPartial(p);
      this.host.countInvalid();
      return;
    } else if (p.parts[fragIndex] !== undefined) {
      this.host.countDuplicate();
      return;
    } else if (this.unreliable && !this.host.makeRoomForUnreliable(length)) {
      // Could not fit even after evicting others: this message is the one to go.
      if (this.partials.get(id) === p) this.dropPartial(p);
      this.host.countInvalid();
      return;
    }
    if (!this.partials.has(id)) {
      // Evicted by the room-making above.
      this.host.countInvalid();
      return;
    }
    if (p.payloadBytes + length > this.maxMessageBytes) {
      this.dropPartial(p);
      this.host.countInvalid();
      return;
    }
    p.parts[fragIndex] = arena.slice(offset, offset + length);
    p.payloadBytes += length;
    p.received++;
    this.host.charge(length);
    if (p.received === fragCount) {
      const data = concat(p.parts as Uint8Array[], p.payloadBytes);
      this.dropPartial(p);
      this.complete(id, key, data);
    }
  }

  /**
   * Partials that can never complete: on sequenced kinds anything older than a newer message
   * id; on the others, anything whose last fragment is a full window behind the newest seen
   * messageSeq (the engine would reject its missing fragments as stale; an honest sender never
   * lets that happen, PROTOCOL.md §3 and the sender's flow control).
   */
  private evictHopeless(newId: number): void {
    if (this.partials.size === 0) return;
    const sequenced = this.isSequenced();
    for (const p of this.partials.values()) {
      const hopeless = sequenced ? p.id < newId : p.id + p.fragCount - 1 <= this.newestSeen - MESSAGE_WINDOW;
      if (hopeless) {
        this.dropPartial(p);
        if (sequenced) this.host.countStale();
        else this.host.countInvalid();
      }
    }
  }

  dropPartial(p: Partial): void {
    if (this.partials.get(p.id) !== p) return;
    this.partials.delete(p.id);
    this.host.charge(-p.chargedBytes);
    if (this.unreliable) this.host.untrackUnreliable(p);
  }

  private isSequenced(): boolean {
    return this.kind === DeliveryKind.UnreliableSequenced || this.kind === DeliveryKind.ReliableSequenced;
  }

  /** A whole message (unfragmented or reassembled) with unwrapped id `id`. */
  private complete(id: number, key: number, data: Uint8Array): void {
    switch (this.kind) {
      case DeliveryKind.UnreliableSequenced:
      case DeliveryKind.ReliableSequenced:
        if (!Number.isNaN(this.lastDelivered) && id <= this.lastDelivered) {
          this.host.countStale();
          return;
        }
        this.lastDelivered = id;
        this.host.deliver(this.index, data, undefined);
        return;
      case DeliveryKind.LatestState: {
        const unsignedKey = key >>> 0;
        const newest = this.keyNewest.get(unsignedKey);
        if (newest === undefined) {
          if (this.keyNewest.size >= this.maxKeys) {
            this.host.countInvalid();
            return;
          }
        } else if (id <= newest) {
          this.host.countStale();
          return;
        }
        this.keyNewest.set(unsignedKey, id);
        this.host.deliver(this.index, data, unsignedKey);
        return;
      }
      default:
        this.host.deliver(this.index, data, undefined);
    }
  }
}

function concat(parts: readonly Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let p = 0;
  for (const part of parts) {
    out.set(part, p);
    p += part.length;
  }
  return out;
}
