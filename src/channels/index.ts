/**
 * Channels: delivery modes, aggregation, fragmentation, receipts, and the packet-level
 * DeliveryNotificationManager. See docs/CHANNELS.md.
 *
 * Contract with the connection (src/session/connection.ts), as agreed, with these additions:
 *
 *  - PacketContents are pooled here: `const c = channels.acquireContents()`, pass `c` to
 *    `writeFrames`, keep it as the DeliveryNotificationManager's T for that packet sequence,
 *    and after `onDelivered(now, c)` / `onLost(now, c)` call `channels.releaseContents(c)`.
 *    If writeFrames returned 0 (nothing written) release it at once. The connection may append
 *    its own frames (system channel 255) after the bytes writeFrames wrote.
 *  - `failAll(now)`: on close, every outstanding receipt reports lost (delivered: false);
 *    queues are emptied. Call it once when the connection closes.
 *  - `queuedBytes()`: bytes of application data waiting or unacknowledged (for back-pressure).
 *  - The constructor accepts `ChannelOptions` = ChannelConfig plus `maxKeys` (LatestState key
 *    bound, default 4096). Lead: please add `maxKeys?: number` to ChannelConfig in types.ts.
 *  - stats() returns the agreed fields plus `invalid` (fragments/messages this layer rejected:
 *    inconsistent fragments, oversize reassembly, unknown LatestState key past the bound) and
 *    `evicted` (unreliable partial messages evicted to respect the receive-buffer bound).
 *  - Receipts on ReliableSequenced: a message superseded by a newer one before it was fully
 *    acknowledged reports delivered: false (it will never be delivered, by design of the mode).
 *    LatestState: a receipt reports delivered once the peer has acknowledged this value or a
 *    newer one of the same key.
 *  - `deleteKey(now, channel, key, { receipt? })` (added beside `send`): LatestState key deletion
 *    by tombstone (an empty value); the peer gets a message with empty `data` and the `key`.
 *    The connection/API may expose it as is; nothing else changes for the connection.
 *  - PacketContents records and one-frame send buffers are pooled process-wide (bounded), so a
 *    connection keeps no pool of its own; acquire/release work exactly as before.
 *  - Copies (docs/CHANNELS.md "Copies"): ChannelOptions also accepts `redundancy` (0..3,
 *    unreliable kinds) and `piggyback` (0..3, reliable kinds). Lead: please add both to
 *    ChannelConfig in types.ts (doc comments as on ChannelOptions in channel-set.ts). Nothing
 *    changes for the connection: copies are written inside writeFrames (piggyback stays out of
 *    the last COPY_RESERVE_BYTES = 64 bytes, where the connection appends its clock frames), are
 *    recorded in the same PacketContents, and settle through onDelivered/onLost as before.
 *    stats() gains `copiesSent`, `copyBytes` (sender) and `copiesDropped` (receiver: copies
 *    discarded on channels configured with copies, kept out of `duplicates`/`stale`).
 *  - `DeliveryNotificationManager<T>` takes a handler object `{ onDelivered, onDropped }` at
 *    construction; feed it `dispatch(seq, now, bytes, contents)`, `acknowledge(seq, now)` for
 *    each engine Settled record, and `detectLosses(now, rtoMs)` each pass (packet-threshold
 *    and timeout losses); `oldestSentTime()` arms the loss timer. See delivery-notification.ts.
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
