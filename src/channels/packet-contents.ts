/**
 * What the channel layer wrote into one outgoing packet: the connection keeps one of these per
 * packet sequence (as the `T` of its DeliveryNotificationManager) and hands it back to
 * ChannelSet.onDelivered / onLost. Entries are (message, fragment index) pairs in flat arrays;
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
  /** @internal message of entry i */
  messages: (OutMessage | undefined)[] = [];
  /** @internal fragment index of entry i (0 when not fragmented); small integers, so a plain
   *  array of SMIs (no ArrayBuffer per packet record) */
  fragments: number[] = [];

  /** @internal */
  add(message: OutMessage, fragIndex: number): void {
    const i = this.count;
    if (i === this.messages.length) {
      this.messages.push(message);
      this.fragments.push(fragIndex);
    } else {
      this.messages[i] = message;
      this.fragments[i] = fragIndex;
    }
    this.count = i + 1;
  }

  /** Forget everything (drops references so message buffers can be collected). */
  clear(): void {
    for (let i = 0; i < this.count; i++) this.messages[i] = undefined;
    this.count = 0;
    this.bytes = 0;
    this.resends = 0;
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
