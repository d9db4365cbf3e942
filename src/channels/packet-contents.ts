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
  /** @internal fragment index of entry i (0 when not fragmented) */
  fragments: Int32Array = new Int32Array(16);

  /** @internal */
  add(message: OutMessage, fragIndex: number): void {
    const i = this.count;
    if (i === this.fragments.length) {
      const grown = new Int32Array(i * 2);
      grown.set(this.fragments);
      this.fragments = grown;
    }
    this.messages[i] = message;
    this.fragments[i] = fragIndex;
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
