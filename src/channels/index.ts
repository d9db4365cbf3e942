/**
 * Channels: delivery modes, aggregation, fragmentation, receipts, and the packet-level
 * DeliveryNotificationManager. See docs/CHANNELS.md.
 *
 * What the connection (src/session/connection.ts) relies on:
 *
 *  - PacketContents are pooled process-wide (bounded): `const c = channels.acquireContents()`,
 *    pass `c` to `writeFrames`, keep it with the packet's sequence (the host side of the sent
 *    ring, src/recovery/sent-ring.ts), and after `onDelivered(now, c)` / `onLost(now, c)` call
 *    `channels.releaseContents(c)`. If writeFrames returned 0 (nothing written) release it at
 *    once. The connection may append its own frames (system channel 255) after the bytes
 *    writeFrames wrote; copies (redundancy, piggyback) stay out of the last
 *    COPY_RESERVE_BYTES, where it appends its clock frames.
 *  - `failAll(now)`: on close, every outstanding receipt reports lost (delivered: false) and
 *    the queues are emptied. Called once when the connection closes.
 *  - `queuedBytes()`: bytes of application data waiting or unacknowledged (back-pressure).
 *  - `ChannelOptions` is the public ChannelConfig (maxKeys, redundancy, piggyback included).
 *  - stats() counts, beside deliveries, `invalid` (fragments and messages this layer rejected:
 *    inconsistent fragments, oversize reassembly, an unknown LatestState key past the bound),
 *    `evicted` (unreliable partial messages evicted for the receive-buffer bound), and the
 *    copies sent, their bytes and the copies dropped on receipt.
 *  - Receipts on ReliableSequenced: a message superseded by a newer one before it was fully
 *    acknowledged reports delivered: false (it will never be delivered, by design of the mode).
 *    LatestState: a receipt reports delivered once the peer has acknowledged this value or a
 *    newer one of the same key.
 *  - `deleteKey(now, channel, key, { receipt? })`: LatestState key deletion by tombstone (an
 *    empty value); the peer gets a message with empty `data` and the `key`.
 *  - `DeliveryNotificationManager<T>` is for applications that build their own replication on
 *    packet acknowledgements; the session itself uses the engine's sent ring. It takes a
 *    handler `{ onDelivered, onDropped }`; feed it `dispatch(seq, now, bytes, contents)`,
 *    `acknowledge(seq, now)` per acknowledgement and `detectLosses(now, rtoMs)` each pass.
 */
export { ChannelSet, COPY_RESERVE_BYTES, deliveryKindOf, DEFAULT_MAX_KEYS, MAX_CHANNELS, MAX_COPIES } from "./channel-set.js";
export { COPY_MAX_AGE_MS } from "./copy-ring.js";
export type { ChannelOptions, ChannelSetConfig, ChannelStats, MessageSink, ReceivedMessage, Receipt } from "./channel-set.js";
export { PacketContents } from "./packet-contents.js";
export { DeliveryNotificationManager } from "./delivery-notification.js";
export type { DeliveryHandler, DeliveryNotificationOptions } from "./delivery-notification.js";
export {
  ChannelError,
  UnknownChannelError,
  MessageTooLargeError,
  InvalidKeyError,
  TooManyKeysError,
  InvalidDeadlineError,
  InvalidDelayError,
  ChannelConfigError,
} from "./errors.js";
