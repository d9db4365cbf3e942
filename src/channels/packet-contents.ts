/**
 * What the channel layer wrote into one outgoing packet: the connection keeps one of these per
 * packet sequence (as the `T` of its DeliveryNotificationManager) and hands it back to
 * ChannelSet.onDelivered / onLost. Entries are (message, fragment index) pairs in one flat array;
 * instances are pooled by the ChannelSet (acquireContents / releaseContents), so steady-state
 * sending allocates no per-packet objects.
 */
import type { OutMessage } from "./out-message.js";

export class PacketContents {
  /** Frames in this packet. */
  count = 0;
  /** Frame bytes written by the channel layer into this packet (headers included). */
  bytes = 0;
  /** Resent frames among them. */
  resends = 0;
  /** The earliest first send of the messages it resends (Infinity when it resends none): the
   *  start of their transmission ping. */
  firstSentAt = Infinity;
  /**
   * @internal The first entry, in fields: most packets carry one message, and its ack then
   * reaches the message without a cold line for the entries array.
   */
  first: OutMessage | undefined = undefined;
  /** @internal The first entry's fragment index (0 when not fragmented). */
  firstFrag = 0;
  /**
   * @internal Entries after the first: entry i (i >= 1) has its message at [2(i-1)] and its
   * fragment index at [2(i-1) + 1]. One array for both: one object less to reach per packet.
   */
  entries: (OutMessage | number | undefined)[] = [];

  /** @internal */
  add(message: OutMessage, fragIndex: number): void {
    const count = this.count;
    if (count === 0) {
      this.first = message;
      this.firstFrag = fragIndex;
    } else {
      const at = (count - 1) * 2;
      const entries = this.entries;
      if (at === entries.length) {
        entries.push(message, fragIndex);
      } else {
        entries[at] = message;
        entries[at + 1] = fragIndex;
      }
    }
    this.count = count + 1;
  }
  /**
   * @internal The packet was acknowledged (`lost` false) or judged lost: report each entry to
   * its message's sender.
   */
  settle(lost: boolean): void {
    const first = this.first;
    if (first === undefined) return;
    if (lost) first.sender.lostFragment(first, this.firstFrag);
    else first.sender.delivered(first, this.firstFrag);
    const entries = this.entries;
    const n = 2 * (this.count - 1);
    for (let i = 0; i < n; i += 2) {
      const m = entries[i] as OutMessage;
      if (lost) m.sender.lostFragment(m, entries[i + 1] as number);
      else m.sender.delivered(m, entries[i + 1] as number);
    }
  }
  /** Forget everything (drops references so message buffers can be collected). */
  clear(): void {
    this.first = undefined;
    const entries = this.entries;
    for (let i = 0; i < 2 * (this.count - 1); i += 2) entries[i] = undefined;
    this.count = 0;
    this.bytes = 0;
    this.resends = 0;
    this.firstSentAt = Infinity;
  }
}

/**
 * Idle PacketContents shared by every ChannelSet in the process: a connection that once had
 * many packets in flight does not keep that many records afterwards (they are interchangeable).
 */
const idle: PacketContents[] = [];
const MAX_IDLE = 4096;

/** @internal */
export function acquirePacketContents(): PacketContents {
  return idle.pop() ?? new PacketContents();
}

/** @internal */
export function releasePacketContents(contents: PacketContents): void {
  contents.clear();
  if (idle.length < MAX_IDLE) idle.push(contents);
}
