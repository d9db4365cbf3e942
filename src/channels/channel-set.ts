/**
 * ChannelSet: all channels of one connection, both directions. The connection (session layer)
 * owns the engine slot, the packet-level DeliveryNotificationManager, RTT and congestion; it
 * calls this class to fill datagrams, to report which packets were delivered or lost, and to
 * hand over the engine's per-message records. See index.ts for the contract, docs/CHANNELS.md
 * for the behaviour.
 */
import type { ReceiveBudget } from "./receive-budget.js";
import {
  DATA_OVERHEAD_BYTES,
  DeliveryKind,
  DropReason,
  FRAGMENT_EXTRA_BYTES,
  FRAME_HEADER_BYTES,
  LATEST_STATE_EXTRA_BYTES,
  MAX_DATAGRAM_BYTES,
  MESSAGE_WINDOW,
  FrameDroppedRecord,
  MessageRecord,
  RecordHeader,
  ReleaseRecord,
  SkipRecord,
  RecordType,
} from "../engine/abi.js";
import { fecOption } from "../fec/parity-frame.js";
import type { ChannelConfig, DeliveryMode } from "../session/types.js";
import {
  ChannelConfigError,
  InvalidDataError,
  InvalidKeyError,
  MessageTooLargeError,
  TooManyKeysError,
  UnknownChannelError,
} from "./errors.js";
import { checkSendDeadline, checkSendDelay, checkSendKey } from "./send-checks.js";
import { TimeHeap } from "../util/time-heap.js";
import type { OutMessage } from "./out-message.js";
import { copyExact } from "./buffer-pool.js";
import { firstUnknownKey, unknownOptionMessage } from "../util/closest-key.js";
import { acquirePacketContents, type PacketContents, releasePacketContents } from "./packet-contents.js";
import { Queue } from "./queue.js";
import { copyMessageIn } from "./receive-copy.js";
import { type Partial, ReceiveChannel, type ReceiveHost } from "./receive-channel.js";
import { type ReceiptSink, SendChannel, type WriteClock } from "./send-channel.js";

/** A message in the deadline heap: its deadline as the heap's time. */
interface DeadlineEntry {
  time: number;
  order: number;
  message: OutMessage;
}

interface DelayedMessage {
  due: number;
  channel: number;
  data: Uint8Array;
  receipt: number;
  key: number | undefined;
  /** When it is given up if still not delivered (Infinity: no deadline). */
  deadline: number;
  /** `data` is the caller's shared buffer (SendOptions.shared), not a copy of ours. */
  shared: boolean;
}

export interface ChannelOptions extends ChannelConfig {
  /** LatestState: most keys tracked per direction. Default 4096. */
  maxKeys?: number;
  /**
   * unreliable / unreliable-sequenced: every datagram that carries a new message of this
   * channel also carries copies of up to this many previous messages (one-frame messages
   * younger than 100 ms, if they fit), so a single lost datagram costs nothing.
   * 0..3, default 0 (off). Same value on both peers (the receiver's duplicate filter and its
   * counters depend on it; not covered by the handshake's channel hash).
   */
  redundancy?: number;
  /**
   * Reliable kinds: room left in a datagram after all due data is filled with copies of this
   * channel's most recently sent, still unacknowledged one-frame messages (the previous
   * reliable packet piggybacked on the next), each copied at most this many times
   * and at most this many per datagram, while younger than 100 ms. A copy that arrives
   * settles the message, so its lost original is not resent. 0..3, default 0 (off). Same
   * value on both peers (the receiver counts the copies it discards as `copiesDropped`).
   */
  piggyback?: number;
}

/** Every key a channel config may have; any other is refused (a typo would leave its default). */
const CHANNEL_OPTION_KEYS = ["mode", "name", "maxMessageBytes", "priority", "maxKeys", "redundancy", "piggyback", "maxQueueMs", "fec"] as const satisfies readonly (keyof ChannelOptions)[];
const CHANNEL_OPTION_KEY_SET: ReadonlySet<string> = new Set(CHANNEL_OPTION_KEYS);
// Compile-time check that the list names every option of ChannelOptions.
const everyChannelKeyListed: [Exclude<keyof ChannelOptions, (typeof CHANNEL_OPTION_KEYS)[number]>] extends [never] ? true : never = true;
void everyChannelKeyListed;

/** Bytes a busy channel may write per turn when the channels of its priority share a datagram
 *  (deficit round-robin; about two 100-byte game messages), and the most credit it keeps. */
const SHARE_QUANTUM_BYTES = 256;
const SHARE_MAX_CREDIT_BYTES = 1500;

/** Most copies per message for `redundancy` and `piggyback`. */
export const MAX_COPIES = 3;
/**
 * Piggybacked copies leave this many bytes of the datagram free: the connection appends its
 * own frames (clock request/replies, 11-19 bytes each) after the channel frames.
 */
export const COPY_RESERVE_BYTES = 64;

export interface ChannelSetConfig {
  channels: readonly ChannelOptions[];
  /** Path MTU (largest datagram). */
  mtu: number;
  /** Per-connection bound on held + partially reassembled received bytes. */
  maxReceiveBufferBytes: number;
  /** The bound shared with other connections (the endpoint's), if any. */
  budget?: ReceiveBudget;
}

export interface ReceivedMessage {
  channel: number;
  data: Uint8Array;
  key?: number;
}

/** Receives messages from ChannelSet.takeMessages. */
export interface MessageSink {
  onReceivedMessage(channel: number, data: Uint8Array, key: number | undefined): void;
}

export interface Receipt {
  receipt: number;
  delivered: boolean;
}

export interface ChannelStats {
  messagesSent: number[];
  messagesReceived: number[];
  /** Frames written again after their packet was lost. */
  resends: number;
  /** Frames the engine dropped as DuplicateMessage, plus duplicate fragments seen here. */
  duplicates: number;
  /** Frames/messages dropped as older than what was delivered (engine StaleMessage and
   *  TooFarAhead, sequenced and LatestState freshness here). */
  stale: number;
  /** Fragments/messages rejected here as inconsistent or over a bound. */
  invalid: number;
  /** Unreliable partial messages evicted to stay within the receive-buffer bound. */
  evicted: number;
  /** Sender: redundancy / piggyback copies written (never counted in `resends`). */
  copiesSent: number;
  /** Sender: frame bytes of those copies. */
  copyBytes: number;
  /** Receiver: frames discarded on channels configured with copies as already delivered or
   *  older than delivered (engine DuplicateMessage / StaleMessage, and this layer's duplicate
   *  filter). They are the peer's copies doing their job, so they are not counted in
   *  `duplicates` or `stale` (a reordered late original on such a channel lands here too). */
  copiesDropped: number;
  /** Sender: unreliable messages dropped unsent after their channel's maxQueueMs. */
  expired: number;
  /** Sender: messages given up at their send's deadlineMs. */
  deadlinesMissed: number;
  /** Sender: bytes held to send (queuedBytes()). */
  queuedBytes: number;
}

export const DEFAULT_MAX_KEYS = 4096;
/** ChannelConfig.maxQueueMs's default (unreliable kinds). */
export const DEFAULT_MAX_QUEUE_MS = 250;
const EMPTY = new Uint8Array(0);
/** An emptied inbox keeps its array up to this many slots (see `inbox`). */
const INBOX_KEPT_SLOTS = 96;
const MIB = 1024 * 1024;
/** Most channels per connection (the engine's per-slot state is sized for this). */
export const MAX_CHANNELS = 32;

/** Delivery kind of a mode name (the engine and the wire use the numbers). */
export function deliveryKindOf(mode: DeliveryMode): DeliveryKind {
  switch (mode) {
    case "unreliable":
      return DeliveryKind.Unreliable;
    case "unreliable-sequenced":
      return DeliveryKind.UnreliableSequenced;
    case "reliable-unordered":
      return DeliveryKind.ReliableUnordered;
    case "reliable-ordered":
      return DeliveryKind.ReliableOrdered;
    case "reliable-sequenced":
      return DeliveryKind.ReliableSequenced;
    case "latest-state":
      return DeliveryKind.LatestState;
    default:
      throw new ChannelConfigError(
        `unknown channel mode ${JSON.stringify(mode)}; use one of unreliable, unreliable-sequenced, ` +
          `reliable-unordered, reliable-ordered, reliable-sequenced, latest-state`,
      );
  }
}

/** Shared by ChannelSets without copies (nothing reads it then): no per-connection objects. */
const UNUSED_CLOCK: WriteClock = { now: 0, datagram: 0 };
const NO_SENDERS: SendChannel[] = [];

/** Priority groups by the channels' priorities, shared (see ChannelSet.groups); bounded. */
const sharedGroups = new Map<string, readonly (readonly number[])[]>();
const SHARED_GROUPS_MAX = 64;

/** Channel indexes grouped by priority, highest first, each group in channel order. */
function priorityGroups(priorities: number[]): readonly (readonly number[])[] {
  const id = priorities.join(",");
  const known = sharedGroups.get(id);
  if (known !== undefined) return known;
  const distinct = [...new Set(priorities)].sort((a, b) => b - a);
  const groups = distinct.map((p) => priorities.flatMap((q, i) => (q === p ? [i] : [])));
  if (sharedGroups.size < SHARED_GROUPS_MAX) sharedGroups.set(id, groups);
  return groups;
}

/** Validated `redundancy` (unreliable kinds) or `piggyback` (reliable kinds) of channel `i`. */
function copiesOption(i: number, c: ChannelOptions, reliable: boolean): number {
  const own = reliable ? "piggyback" : "redundancy";
  const other = reliable ? "redundancy" : "piggyback";
  if (c[other] !== undefined && c[other] !== 0) {
    throw new ChannelConfigError(
      `channel ${i} (${c.mode}): ${other} does not apply to this mode; use ${own} ` +
        `(redundancy is for unreliable kinds, piggyback for reliable ones)`,
    );
  }
  const n = c[own] ?? 0;
  if (!Number.isInteger(n) || n < 0 || n > MAX_COPIES) {
    throw new ChannelConfigError(`channel ${i}: ${own} must be an integer in 0..${MAX_COPIES}, got ${String(c[own])}`);
  }
  return n;
}

export class ChannelSet implements ReceiptSink, ReceiveHost {
  // Arrays are built at their exact length (map), not grown by push: a pushed array keeps
  // spare capacity, and there is one ChannelSet per connection.
  // Field order is memory layout (V8 places fields in the order they are defined): what every
  // datagram and message reads (hasPending, writeFrames, onRecord, deliver, the drain) comes
  // first, so a connection whose state is cold pays for two cache lines of this object, not four.
  // Channel 0's halves (the API's default channel) are fields of their own: reaching them through
  // the arrays is two more dependent loads (array, then its backing store), each a cache miss
  // when the connection's state is cold.
  private readonly sender0: SendChannel;
  private readonly receiver0: ReceiveChannel;
  /**
   * Bit c set: channel c may have a frame to write. Set on send, on a frame lost, and when an
   * acknowledgement may have moved a flow-control window; cleared by hasPending() once it has
   * checked the channel has nothing. Keeps hasPending() and writeFrames() from visiting idle
   * channels (most channels of most connections are idle).
   */
  private pendingMask = 0;
  /** Messages sent with delayMs > 0, held until due; sorted by due time, ties in send order
   *  (created with the first delayed send). */
  private delayed: DelayedMessage[] | undefined;
  /**
   * The oldest received message waiting, when it has no key and was the only one when it came:
   * most batches carry one message per connection, which then never reaches the inbox array.
   * Always older than everything in `inbox`.
   */
  private firstData: Uint8Array | undefined = undefined;
  private firstChannel = 0;
  private inboxTail = 0;
  private inboxHead = 0;
  /** The engine's arena view last seen in onRecord, with its buffer and byteOffset (see
   *  copyMessageIn: its `.buffer` getter is slow on V8; kept per connection, not by the module,
   *  so nothing outlives the endpoint). */
  private arena: Uint8Array | undefined = undefined;
  private arenaBuffer: ArrayBufferLike | undefined = undefined;
  private arenaByteOffset = 0;
  /** Channels configured with redundancy / piggyback (bit c = channel c). */
  private readonly copyMask: number;
  /** writeFrames calls so far: each group's round-robin starts at `writes % group.length`. */
  private writes = 0;
  /**
   * Deficit round-robin between the busy channels of a group: bytes each may still write in its
   * current turn (SHARE_QUANTUM_BYTES more per turn; below zero after a frame larger than what
   * it had). Allocated when two channels of a group are first busy at once.
   */
  private deficits: Float64Array | undefined;
  /** Channel indexes grouped by priority, highest first (shared by ChannelSets of the same
   *  priorities, so it stays in cache across connections; never modified). */
  private readonly groups: readonly (readonly number[])[];
  /** Settled receipts waiting for pollReceipt (created with the first receipt). */
  private receipts: Queue<Receipt> | undefined;
  private buffered = 0;
  // ---- read rarely ----
  /**
   * Received messages waiting for the owner, flat in one array: `channel, data` per message, or
   * `~channel, data, key` for a message with a key (latest-state). The owner's drain
   * (takeMessages) then builds no ReceivedMessage per message; pollMessage builds one on demand.
   * Its head and tail live here rather than in a Queue object: one object less to reach per
   * received message (the connection's state is cold when its datagram comes). Consumed slots
   * are overwritten (no reference kept); the array is kept for the next messages.
   */
  private inbox: (number | Uint8Array)[] = [];
  private readonly senders: SendChannel[];
  private readonly receivers: ReceiveChannel[];
  /** Receipt ids not yet reported: each reports exactly once (created on the first receipt). */
  private outstandingReceipts: Set<number> | undefined;
  private nextReceipt = 1;
  /** Unreliable partial messages in arrival order, for eviction (created on the first). */
  private unreliablePartials: Set<Partial> | undefined;
  private readonly maxReceiveBufferBytes: number;
  private readonly budget: ReceiveBudget | undefined;
  private readonly counters = { duplicates: 0, stale: 0, invalid: 0, evicted: 0, copiesDropped: 0 };
  /** Reliable channels with piggyback, highest priority first (the copy pass of writeFrames). */
  private readonly piggybackers: SendChannel[];
  /** Unreliable channels with redundancy (their old copies expire at each write). */
  private readonly redundant: SendChannel[];
  /** @internal Time and datagram count of the current writeFrames call (own object only with copies). */
  readonly clock: WriteClock;
  /** @internal The time of the current send, write or pending check (ReceiptSink.now). */
  now = 0;
  private delayedBytes = 0;
  /**
   * Messages sent with a deadline, earliest first, ties in send order (created with the first
   * one). Settled messages are not taken out: they leave when their deadline comes, so it holds
   * the messages sent within the longest deadline in use.
   */
  private deadlines: TimeHeap<DeadlineEntry> | undefined;
  private deadlineOrder = 0;
  /** The writeFrames call (`writes`) whose datagram has its GAP frame. */
  private gapWrite = -1;
  /** The datagram room fitTo last cut for (the base's until it is called). */
  private fittedRoom: number;
  /** The datagram room at the base mtu. */
  private readonly baseRoom: number;

  constructor(config: ChannelSetConfig) {
    const { channels, mtu, maxReceiveBufferBytes } = config;
    if (!Array.isArray(channels) || channels.length < 1 || channels.length > MAX_CHANNELS) {
      throw new ChannelConfigError(`channels must list 1..${MAX_CHANNELS} channel configs`);
    }
    const minMtu = DATA_OVERHEAD_BYTES + FRAME_HEADER_BYTES + FRAGMENT_EXTRA_BYTES + LATEST_STATE_EXTRA_BYTES + 16;
    if (!Number.isInteger(mtu) || mtu < minMtu || mtu > MAX_DATAGRAM_BYTES) {
      throw new ChannelConfigError(`mtu must be an integer in ${minMtu}..${MAX_DATAGRAM_BYTES}, got ${mtu}`);
    }
    if (!(maxReceiveBufferBytes > 0)) {
      throw new ChannelConfigError(`maxReceiveBufferBytes must be positive, got ${maxReceiveBufferBytes}`);
    }
    this.maxReceiveBufferBytes = maxReceiveBufferBytes;
    this.budget = config.budget;
    const room = mtu - DATA_OVERHEAD_BYTES;
    this.fittedRoom = room;
    this.baseRoom = room;
    const senders: SendChannel[] = [];
    const receivers: ReceiveChannel[] = [];
    let copyMask = 0;
    const anyCopies = channels.some((c) => (c.redundancy ?? 0) !== 0 || (c.piggyback ?? 0) !== 0);
    this.clock = anyCopies ? { now: 0, datagram: 0 } : UNUSED_CLOCK;
    channels.forEach((c, i) => {
      const unknown = c !== null && typeof c === "object" ? firstUnknownKey(c, CHANNEL_OPTION_KEY_SET) : undefined;
      if (unknown !== undefined) throw new ChannelConfigError(unknownOptionMessage(`channel ${i}`, unknown, CHANNEL_OPTION_KEYS, "a channel's options are"));
      const kind = deliveryKindOf(c.mode);
      const reliable = kind >= DeliveryKind.ReliableUnordered;
      const keyBytes = kind === DeliveryKind.LatestState ? LATEST_STATE_EXTRA_BYTES : 0;
      const fragmentPayload = room - FRAME_HEADER_BYTES - FRAGMENT_EXTRA_BYTES - keyBytes;
      // A message is at most MESSAGE_WINDOW fragments: the receiver's window must hold all of
      // them at once (reliable kinds) and it bounds reassembly bookkeeping (all kinds).
      const ceiling = MESSAGE_WINDOW * fragmentPayload;
      const fallback = Math.min(reliable ? MIB : 64 * 1024, ceiling);
      const maxMessageBytes = c.maxMessageBytes ?? fallback;
      if (!Number.isInteger(maxMessageBytes) || maxMessageBytes < 0 || maxMessageBytes > ceiling) {
        throw new ChannelConfigError(
          `channel ${i}: maxMessageBytes must be an integer in 0..${ceiling} ` +
            `(${MESSAGE_WINDOW} fragments of ${fragmentPayload} bytes at mtu ${mtu}), got ${c.maxMessageBytes}`,
        );
      }
      const maxKeys = c.maxKeys ?? DEFAULT_MAX_KEYS;
      if (!Number.isInteger(maxKeys) || maxKeys < 1) {
        throw new ChannelConfigError(`channel ${i}: maxKeys must be a positive integer, got ${c.maxKeys}`);
      }
      const priority = c.priority ?? 0;
      if (!Number.isFinite(priority)) throw new ChannelConfigError(`channel ${i}: priority must be a finite number`);
      fecOption(i, c.fec);
      const copies = copiesOption(i, c, reliable);
      if (copies !== 0) copyMask |= 1 << i;
      const maxQueueMs = c.maxQueueMs ?? DEFAULT_MAX_QUEUE_MS;
      if (typeof maxQueueMs !== "number" || !(maxQueueMs > 0)) throw new ChannelConfigError(`channel ${i}: maxQueueMs must be a positive number of ms (Infinity: no limit), got ${String(c.maxQueueMs)}`);
      if (reliable && c.maxQueueMs !== undefined) throw new ChannelConfigError(`channel ${i}: maxQueueMs is for unreliable kinds (reliable data is never dropped unsent)`);
      senders.push(new SendChannel(i, kind, priority, maxMessageBytes, maxKeys, room, this, copies, maxQueueMs));
      receivers.push(new ReceiveChannel(i, kind, maxMessageBytes, maxKeys, this, copies));
    });
    this.copyMask = copyMask;
    if (copyMask === 0) {
      this.piggybackers = NO_SENDERS;
      this.redundant = NO_SENDERS;
    } else {
      const withCopies = senders.filter((s) => s.copyLimit !== 0).sort((a, b) => b.priority - a.priority);
      this.piggybackers = withCopies.filter((s) => s.reliable);
      this.redundant = withCopies.filter((s) => !s.reliable);
    }
    this.senders = senders.slice();
    this.receivers = receivers.slice();
    this.sender0 = senders[0];
    this.receiver0 = receivers[0];
    this.groups = priorityGroups(senders.map((s) => s.priority));
  }

  get channelCount(): number {
    return this.senders.length;
  }

  /** Each channel's largest message (its maxMessageBytes, the default resolved for the mtu). */
  maxMessageBytes(): number[] {
    return this.senders.map((s) => s.maxMessageBytes);
  }

  /** Delivery kind per channel, for the engine config. */
  kinds(): DeliveryKind[] {
    return this.senders.map((s) => s.kind);
  }

  // ---- application commands ----------------------------------------------------------------

  /**
   * Queue `data` on `channel`. The bytes are copied. Returns a receipt id (> 0) when
   * `opts.receipt` is set, else 0. Throws UnknownChannelError, MessageTooLargeError,
   * InvalidKeyError, TooManyKeysError on misuse.
   */
  send(
    now: number,
    channel: number,
    data: Uint8Array,
    opts?: { receipt?: boolean; key?: number; delayMs?: number; deadlineMs?: number; shared?: boolean },
    sentAt = NaN,
  ): number {
    const delayMs = opts?.delayMs;
    checkSendDelay(delayMs);
    const ch = channel === 0 ? this.sender0 : this.senders[channel];
    if (ch === undefined || !Number.isInteger(channel)) throw new UnknownChannelError(channel, this.senders.length);
    if (!(data instanceof Uint8Array)) throw new InvalidDataError(data);
    if (data.length > ch.maxMessageBytes) throw new MessageTooLargeError(channel, data.length, ch.maxMessageBytes);
    const key = opts?.key;
    checkSendKey(channel, ch.kind === DeliveryKind.LatestState, key);
    const deadlineMs = opts?.deadlineMs;
    checkSendDeadline(deadlineMs, ch.kind === DeliveryKind.LatestState);
    const deadline = deadlineMs === undefined ? Infinity : now + deadlineMs;
    if (ch.kind === DeliveryKind.LatestState && !ch.hasKey(key!) && ch.keyCount >= ch.maxKeys) throw new TooManyKeysError(channel, ch.maxKeys);
    let receipt = 0;
    if (opts?.receipt === true) {
      receipt = this.nextReceipt++;
      (this.outstandingReceipts ??= new Set<number>()).add(receipt);
    }
    const shared = opts?.shared === true;
    if (delayMs !== undefined && delayMs > 0) {
      this.hold(now + delayMs, channel, shared ? data : copyExact(data), receipt, key, deadline, shared);
      return receipt;
    }
    this.release(ch, data, receipt, key, sentAt, deadline, shared);
    return receipt;
  }

  /** `sentAt`: the send's own time if the caller knew it, else NaN (SendChannel.enqueue).
   *  `shared`: `data` is never written again (SendOptions.shared): kept, not copied. */
  private release(ch: SendChannel, data: Uint8Array, receipt: number, key: number | undefined, sentAt = NaN, deadline = Infinity, shared = false): void {
    // The channel copies `data` (once: into a pooled buffer for a one-frame message).
    if (ch.kind === DeliveryKind.LatestState) ch.publish(key as number, data, receipt, shared);
    else {
      const m = ch.enqueue(data, receipt, sentAt, shared);
      if (deadline !== Infinity) {
        m.deadline = deadline;
        (this.deadlines ??= new TimeHeap<DeadlineEntry>()).push({ time: deadline, order: this.deadlineOrder++, message: m });
      }
    }
    ch.messagesSent++;
  }

  /**
   * Give up every message whose deadline is at or before `now` (SendChannel.expire). Settled
   * messages leave the queue as their deadlines come, so it holds at most the messages sent
   * within the longest deadline.
   */
  private expireDeadlines(now: number): void {
    const q = this.deadlines;
    if (q === undefined) return;
    for (let e = q.peek(); e !== undefined && e.time <= now; e = q.peek()) {
      q.pop();
      e.message.sender.expire(e.message);
    }
  }

  /** The earliest of the delayed sends' release times and the messages' deadlines (Infinity: none). */
  nextTimerAt(): number {
    const deadline = this.deadlines?.peek()?.time ?? Infinity;
    return Math.min(this.nextDelayedDue(), deadline);
  }

  /** Release the delayed sends due and give up the messages past their deadlines, at `now`. */
  runTimers(now: number): void {
    this.now = now;
    this.releaseDue(now);
    this.expireDeadlines(now);
  }

  /**
   * Hold a delayed message until `due`. It takes its place in the channel (message sequence,
   * order) only when released: later undelayed sends on the same channel may overtake it, and
   * it never blocks the channel while it waits (docs/CHANNELS.md "Delayed sends").
   */
  private hold(due: number, channel: number, data: Uint8Array, receipt: number, key: number | undefined, deadline: number, shared: boolean): void {
    const list = (this.delayed ??= []);
    // Insert after every message due at or before `due` (stable: equal times keep send order).
    let i = list.length;
    while (i > 0 && list[i - 1].due > due) i--;
    list.splice(i, 0, { due, channel, data, receipt, key, deadline, shared });
    this.delayedBytes += data.length;
  }

  /** Release delayed messages due at `now` into their channels, in due order. */
  releaseDue(now: number): void {
    const list = this.delayed;
    if (list === undefined || list.length === 0 || list[0].due > now) return;
    let n = 0;
    while (n < list.length && list[n].due <= now) {
      const m = list[n++];
      this.delayedBytes -= m.data.length;
      // Its deadline counts from send(): one that passed while it waited gives it up unsent.
      if (m.deadline <= now) {
        if (m.receipt !== 0) this.receiptSettled(m.receipt, false);
        this.senders[m.channel].deadlinesMissed++;
        continue;
      }
      this.release(this.senders[m.channel], m.data, m.receipt, m.key, NaN, m.deadline, m.shared);
    }
    list.splice(0, n);
  }

  /** When the earliest delayed message is due (Infinity if none). */
  nextDelayedDue(): number {
    const list = this.delayed;
    return list === undefined || list.length === 0 ? Infinity : list[0].due;
  }

  /**
   * LatestState: delete `key`. Sends a tombstone (an empty value, which is what an empty send()
   * on a latest-state channel means): the peer receives a message with empty `data` and this
   * `key` (if no newer value of the key reached it first), and both sides forget the key, so it
   * no longer counts against maxKeys once the tombstone is acknowledged. Reliable like any
   * value: a lost tombstone is resent while it is the key's newest value. Returns a receipt id
   * as send() does. Throws InvalidKeyError / UnknownChannelError / TooManyKeysError on misuse.
   */
  deleteKey(now: number, channel: number, key: number, opts?: { receipt?: boolean }): number {
    const ch = this.senders[channel];
    if (ch !== undefined && ch.kind !== DeliveryKind.LatestState) {
      throw new InvalidKeyError(channel, `deleteKey() is only meaningful on latest-state channels`);
    }
    return this.send(now, channel, EMPTY, opts?.receipt === true ? { key, receipt: true } : { key });
  }

  /** Connection closed: every outstanding receipt reports lost, all queues are emptied. */
  failAll(now?: number): void {
    void now;
    for (const s of this.senders) s.failAll();
    if (this.delayed !== undefined) this.delayed.length = 0;
    this.delayedBytes = 0;
    if (this.outstandingReceipts !== undefined) {
      const receipts = (this.receipts ??= new Queue<Receipt>());
      for (const id of this.outstandingReceipts) receipts.push({ receipt: id, delivered: false });
      this.outstandingReceipts.clear();
    }
    this.pendingMask = 0;
  }

  /** Bytes of application data queued or awaiting acknowledgement (for back-pressure). */
  queuedBytes(): number {
    let total = this.delayedBytes;
    for (const s of this.senders) total += s.heldBytes;
    return total;
  }

  // ---- packet assembly ---------------------------------------------------------------------

  /** A cleared PacketContents (from a pool shared by all ChannelSets in the process). */
  acquireContents(): PacketContents {
    return acquirePacketContents();
  }

  releaseContents(contents: PacketContents): void {
    releasePacketContents(contents);
  }

  /** Anything to send now: a lost reliable frame, or new data the flow-control window allows. */
  hasPending(now: number): boolean {
    this.runTimers(now);
    // Only channels flagged since their last check are visited; a flagged channel with nothing
    // to write (queue drained, window full) is unflagged until the next send/loss/ack on it.
    while (this.pendingMask !== 0) {
      const bit = this.pendingMask & -this.pendingMask;
      const c = 31 - Math.clz32(bit);
      const s = c === 0 ? this.sender0 : this.senders[c];
      if (s.hasResend() || s.hasFresh()) return true;
      this.pendingMask &= ~bit;
    }
    return false;
  }

  /**
   * Write frames (PROTOCOL.md §3) into bytes[offset .. offset + capacity) and record them in
   * `into`. Order: resends before new data; within each, channels by priority (highest first),
   * frame-by-frame round-robin among equal priorities so one busy channel cannot starve another.
   * Fragments are sized for an empty packet (mtu - DATA_OVERHEAD_BYTES): pass the full room
   * and append connection-level frames after the returned length. (The one exception, a rare
   * ACK_FREQUENCY request, goes first: a fragment then waits for the next packet, while the
   * request would otherwise wait for a whole fragmented transfer.)
   */
  writeFrames(now: number, bytes: Uint8Array, offset: number, capacity: number, into: PacketContents): number {
    this.now = now;
    let pos = offset;
    const end = Math.min(offset + capacity, bytes.length);
    if (this.copyMask !== 0) {
      this.clock.now = now;
      this.clock.datagram++;
      for (let k = 0; k < this.redundant.length; k++) this.redundant[k].expireCopies(now);
    }
    const pending = this.pendingMask;
    if (pending !== 0) {
      for (let pass = 0; pass < 2; pass++) {
        for (let g = 0; g < this.groups.length; g++) {
          const group = this.groups[g];
          // Bit c of `exhausted`: channel c has nothing more (or nothing that fits) this pass.
          // Channels not flagged pending have nothing at all.
          let exhausted = ~pending;
          let active = 0;
          for (let k = 0; k < group.length; k++) if ((pending & (1 << group[k])) !== 0) active++;
          let i = this.writes % group.length;
          // Two or more busy: turns by bytes, not by frames. One frame per turn would give a
          // 1177-byte bulk fragment and a 100-byte game frame the same share, and beside a
          // download on a slow link a 30 Hz stream would fall seconds behind.
          const deficits = active > 1 ? (this.deficits ??= new Float64Array(this.senders.length)) : undefined;
          while (active > 0 && pos < end) {
            const c = group[i];
            if ((exhausted & (1 << c)) === 0) {
              const s = c === 0 ? this.sender0 : this.senders[c];
              if (active === 1 || deficits === undefined) {
                // The group's only channel with anything left (a bulk flow's usual case): it
                // writes until nothing more is due or fits, as this loop would, frame by frame,
                // but without a pass through the loop per frame.
                pos += s.writeRun(bytes, pos, end - pos, into, pass === 0);
                break;
              }
              // Its turn: SHARE_QUANTUM_BYTES more, then frames while it has credit left. A turn
              // that writes nothing (nothing due in this pass, or nothing that fits) adds none.
              const before = deficits[c];
              let credit = Math.min(before + SHARE_QUANTUM_BYTES, SHARE_MAX_CREDIT_BYTES);
              let wrote = false;
              while (credit > 0 && pos < end) {
                const n =
                  pass === 0 ? s.writeResend(bytes, pos, end - pos, into) : s.writeFresh(bytes, pos, end - pos, into);
                if (n === 0) {
                  exhausted |= 1 << c;
                  active--;
                  break;
                }
                pos += n;
                credit -= n;
                wrote = true;
              }
              // Nothing left at all (not just in this pass, or nothing that fits): an idle
              // channel keeps no credit nor debt (deficit round-robin's rule for an empty queue).
              if ((exhausted & (1 << c)) !== 0 && !s.hasResend() && !s.hasFresh()) deficits[c] = 0;
              // A debtor's turn (still no credit) counts, so its debt shrinks a quantum a turn.
              else deficits[c] = wrote || credit <= 0 ? credit : before;
            }
            i = i + 1 === group.length ? 0 : i + 1;
          }
        }
      }
    }
    // Piggyback: spare room after all due data carries copies of recent unacknowledged reliable
    // frames. Only in a datagram that carries channel data anyway (copies never cause a send),
    // and never into the last COPY_RESERVE_BYTES (the connection's own frames go there).
    if (this.copyMask !== 0 && this.piggybackers.length !== 0 && pos > offset) {
      const copyEnd = end - COPY_RESERVE_BYTES;
      for (let k = 0; k < this.piggybackers.length && pos < copyEnd; k++) {
        const s = this.piggybackers[k];
        s.expireCopies(now);
        pos += s.writeCopies(bytes, pos, copyEnd - pos, into);
      }
    }
    this.writes++;
    into.bytes += pos - offset;
    return pos - offset;
  }

  /**
   * The connection's datagrams are now at most `mtu` bytes (path MTU discovery). Messages are cut
   * for min(mtu, the base mtu). A smaller size takes effect only once `confirmed` (the path is
   * known not to carry the larger frames, PathMtu.shrinkConfirmed): until then the messages cut
   * before wait, queued and unsent frames alike, so a channel keeps its order. Then queued
   * messages are cut again and started ones with a frame that no longer fits are sent again as
   * new messages (SendChannel.fitTo). A larger size takes effect at once.
   */
  fitTo(mtu: number, confirmed: boolean): void {
    const room = Math.min(mtu - DATA_OVERHEAD_BYTES, this.baseRoom);
    if (room === this.fittedRoom || (room < this.fittedRoom && !confirmed)) return;
    const shrank = room < this.fittedRoom;
    this.fittedRoom = room;
    for (const s of this.senders) {
      const copies = s.fitTo(room, shrank);
      for (const m of copies) {
        if (m.deadline !== Infinity) (this.deadlines ??= new TimeHeap<DeadlineEntry>()).push({ time: m.deadline, order: this.deadlineOrder++, message: m });
      }
    }
  }

  /** Started messages sent again as new ones because a frame no longer fit (all channels). */
  get mtuResends(): number {
    let n = 0;
    for (const s of this.senders) n += s.mtuResends;
    return n;
  }

  // ---- feedback from the packet layer ------------------------------------------------------

  onDelivered(now: number, contents: PacketContents): void {
    void now;
    contents.settle(false);
  }

  onLost(now: number, contents: PacketContents): void {
    void now;
    contents.settle(true);
  }

  // ---- receive side ------------------------------------------------------------------------

  /** One engine record (Message, Hold, Release or FrameDropped) for this connection. */
  onRecord(now: number, records: Int32Array, index: number, arena: Uint8Array): void {
    void now;
    const type = records[index + RecordHeader.Type];
    switch (type) {
      case RecordType.Message:
      case RecordType.Hold: {
        // Hold has Message's layout (the ABI definition checks it).
        const a = records[index + MessageRecord.Channel];
        const rc = a === 0 ? this.receiver0 : this.receivers[a];
        if (rc === undefined) {
          this.counters.invalid++;
          return;
        }
        const seq = records[index + MessageRecord.MessageSeq] & 0xffff;
        const fragInfo = records[index + MessageRecord.Fragment] >>> 0;
        const offset = records[index + MessageRecord.Offset];
        const length = records[index + MessageRecord.Length];
        if (offset < 0 || length < 0 || offset + length > arena.length) {
          this.counters.invalid++;
          return;
        }
        if (type === RecordType.Message && fragInfo === 0 && rc.kind === DeliveryKind.ReliableOrdered) {
          // The common case, kept short: a whole message in order on a reliable-ordered channel
          // goes straight from the arena to the inbox.
          rc.wholeInOrder(seq);
          if (arena !== this.arena) this.rememberArena(arena);
          this.deliver(rc.index, copyMessageIn(arena, this.arenaBuffer!, this.arenaByteOffset, offset, length), undefined);
        } else if (type === RecordType.Message) {
          rc.onMessage(seq, fragInfo, records[index + MessageRecord.Key], arena, offset, length);
        } else {
          rc.onHold(seq, fragInfo, arena, offset, length);
        }
        return;
      }
      case RecordType.Release: {
        const a = records[index + ReleaseRecord.Channel];
        const rc = a === 0 ? this.receiver0 : this.receivers[a];
        if (rc === undefined) this.counters.invalid++;
        else rc.onRelease(records[index + ReleaseRecord.MessageSeq] & 0xffff);
        return;
      }
      case RecordType.Skip:
      case RecordType.HoldGap: {
        // HoldGap has Skip's layout (the ABI definition checks it).
        const a = records[index + SkipRecord.Channel];
        const rc = a === 0 ? this.receiver0 : this.receivers[a];
        const seq = records[index + SkipRecord.MessageSeq] & 0xffff;
        const count = records[index + SkipRecord.Count];
        if (rc === undefined || rc.kind !== DeliveryKind.ReliableOrdered) this.counters.invalid++;
        else if (type === RecordType.Skip) rc.onSkip(seq, count);
        else rc.onHoldGap(seq, count);
        return;
      }
      case RecordType.FrameDropped: {
        const reason = records[index + FrameDroppedRecord.Reason];
        const channel = records[index + FrameDroppedRecord.Channel];
        const ofCopies = channel >= 0 && channel < MAX_CHANNELS && (this.copyMask & (1 << channel)) !== 0;
        if (ofCopies && (reason === DropReason.DuplicateMessage || reason === DropReason.StaleMessage)) this.counters.copiesDropped++;
        else if (reason === DropReason.DuplicateMessage) this.counters.duplicates++;
        else if (reason === DropReason.StaleMessage || reason === DropReason.TooFarAhead) this.counters.stale++;
        else this.counters.invalid++;
        return;
      }
      default:
        return; // not a channel record: the connection handles it
    }
  }

  private rememberArena(arena: Uint8Array): void {
    this.arena = arena;
    this.arenaBuffer = arena.buffer;
    this.arenaByteOffset = arena.byteOffset;
  }

  pollMessage(): ReceivedMessage | undefined {
    const first = this.firstData;
    if (first !== undefined) {
      this.firstData = undefined;
      return { channel: this.firstChannel, data: first };
    }
    const items = this.inbox;
    const h = this.inboxHead;
    if (h === this.inboxTail) return undefined;
    const channel = items[h] as number;
    const data = items[h + 1] as Uint8Array;
    items[h + 1] = 0;
    if (channel >= 0) {
      this.inboxTaken(h + 2);
      return { channel, data };
    }
    const key = items[h + 2] as number;
    this.inboxTaken(h + 3);
    return { channel: ~channel, data, key };
  }

  /** The inbox head moved to `h`; an emptied inbox starts again at slot 0. */
  private inboxTaken(h: number): void {
    if (h < this.inboxTail) {
      this.inboxHead = h;
      return;
    }
    this.inboxHead = 0;
    this.inboxTail = 0;
    if (this.inbox.length > INBOX_KEPT_SLOTS) this.inbox = [];
  }

  /**
   * Hand every waiting message to `sink`, in the order pollMessage would return them, without
   * building a ReceivedMessage per message.
   */
  takeMessages(sink: MessageSink): void {
    // State is updated before each call: the sink may poll or drain again (re-entrant), and a
    // message delivered meanwhile is handed over in this same loop.
    for (;;) {
      const first = this.firstData;
      if (first !== undefined) {
        this.firstData = undefined;
        sink.onReceivedMessage(this.firstChannel, first, undefined);
        continue;
      }
      const h = this.inboxHead;
      if (h === this.inboxTail) return;
      const items = this.inbox;
      const channel = items[h] as number;
      const data = items[h + 1] as Uint8Array;
      items[h + 1] = 0;
      if (channel >= 0) {
        this.inboxTaken(h + 2);
        sink.onReceivedMessage(channel, data, undefined);
      } else {
        const key = items[h + 2] as number;
        this.inboxTaken(h + 3);
        sink.onReceivedMessage(~channel, data, key);
      }
    }
  }

  pollReceipt(): Receipt | undefined {
    return this.receipts?.shift();
  }

  /** Held + partially reassembled received bytes (with bookkeeping), for the connection's bound. */
  receiveBufferedBytes(): number {
    return this.buffered;
  }

  /**
   * The connection is gone: what it holds leaves the shared budget (the set is dropped with
   * it, and charges nothing more).
   */
  releaseBudget(): void {
    if (this.budget !== undefined) this.budget.total -= this.buffered;
    this.buffered = 0;
  }

  stats(): ChannelStats {
    let resends = 0;
    let copiesSent = 0;
    let copyBytes = 0;
    let expired = 0;
    let deadlinesMissed = 0;
    for (const s of this.senders) {
      deadlinesMissed += s.deadlinesMissed;
      resends += s.resends;
      copiesSent += s.copiesSent;
      copyBytes += s.copyBytes;
      expired += s.expired;
    }
    return {
      messagesSent: this.senders.map((c) => c.messagesSent),
      messagesReceived: this.receivers.map((c) => c.messagesReceived),
      resends,
      duplicates: this.counters.duplicates,
      stale: this.counters.stale,
      invalid: this.counters.invalid,
      evicted: this.counters.evicted,
      copiesSent,
      copyBytes,
      copiesDropped: this.counters.copiesDropped,
      expired,
      deadlinesMissed,
      queuedBytes: this.queuedBytes(),
    };
  }

  // ---- ReceiptSink / ReceiveHost (internal) ------------------------------------------------

  /** @internal */
  receiptSettled(receipt: number, delivered: boolean): void {
    if (this.outstandingReceipts !== undefined && this.outstandingReceipts.delete(receipt)) {
      (this.receipts ??= new Queue<Receipt>()).push({ receipt, delivered });
    }
  }
  /** @internal */
  markPending(index: number): void {
    this.pendingMask |= 1 << index;
  }
  /** @internal One GAP frame per datagram (PROTOCOL §3): true for the first ask in a writeFrames call. */
  takeGapSlot(): boolean {
    if (this.gapWrite === this.writes) return false;
    this.gapWrite = this.writes;
    return true;
  }
  /** @internal */
  deliver(channel: number, data: Uint8Array, key: number | undefined): void {
    const t = this.inboxTail;
    if (t === 0 && key === undefined && this.firstData === undefined) {
      this.firstData = data;
      this.firstChannel = channel;
      return;
    }
    const items = this.inbox;
    // Appends at the array's end (t === length) or reuses a slot of an earlier round.
    if (key === undefined) {
      items[t] = channel;
      items[t + 1] = data;
      this.inboxTail = t + 2;
    } else {
      items[t] = ~channel;
      items[t + 1] = data;
      items[t + 2] = key;
      this.inboxTail = t + 3;
    }
  }
  /** @internal */
  charge(bytes: number): void {
    this.buffered += bytes;
    if (this.budget !== undefined) this.budget.total += bytes;
  }
  /** @internal */
  makeRoomForUnreliable(bytes: number): boolean {
    const budget = this.budget;
    while (this.buffered + bytes > this.maxReceiveBufferBytes || (budget !== undefined && budget.total + bytes > budget.limit)) {
      if (this.unreliablePartials === undefined) return false;
      const oldest = this.unreliablePartials.values().next();
      if (oldest.done) return false;
      const p = oldest.value;
      p.channel.dropPartial(p); // untracks it too
      this.counters.evicted++;
    }
    return true;
  }
  /** @internal */
  trackUnreliable(p: Partial): void {
    (this.unreliablePartials ??= new Set<Partial>()).add(p);
  }
  /** @internal */
  untrackUnreliable(p: Partial): void {
    this.unreliablePartials?.delete(p);
  }
  /** @internal */
  countInvalid(): void {
    this.counters.invalid++;
  }
  /** @internal */
  countStale(): void {
    this.counters.stale++;
  }
  /** @internal */
  countDuplicate(): void {
    this.counters.duplicates++;
  }
  /** @internal */
  countCopyDropped(): void {
    this.counters.copiesDropped++;
  }
}
