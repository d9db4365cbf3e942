// Receiver rules per delivery kind (docs/PROTOCOL.md §3 table) for one valid frame.

import {
  storeFrameDroppedRecord, storeMessageRecord, CHANNEL_BASE, CHANNEL_BITMAP, CHANNEL_FLAGS, CHANNEL_FLAG_DELIVERED,
  DROP_DUPLICATE_MESSAGE, DROP_STALE_MESSAGE, KIND_LATEST_STATE, KIND_RELIABLE_ORDERED, KIND_RELIABLE_SEQUENCED,
  KIND_RELIABLE_UNORDERED, KIND_UNRELIABLE, KIND_UNRELIABLE_SEQUENCED, MESSAGE_WINDOW,
} from "./abi.generated";
import { sequenceDistance, sequenceGreaterThan } from "./sequence";
import { countDrop, nextRecord } from "./records";
import { applyOrdered, bitMask, bitWord } from "./reorder";

@inline
function dropFrame(slotIndex: i32, reason: i32, channel: u32, sequence: u32): void {
  countDrop(reason);
  storeFrameDroppedRecord(nextRecord(), slotIndex, reason, <i32>channel, <i32>sequence);
}

/**
 * Apply one validated frame. `fragment` is (fragIndex << 16) | fragCount, or 0. `channelBase`
 * is unused for the system channel and Unreliable.
 */
export function applyFrame(
  slotIndex: i32, channelBase: usize, channel: u32, kind: u32, sequence: u32,
  fragment: i32, key: i32, payloadOffset: i32, payloadLength: i32,
): void {
  if (kind == KIND_UNRELIABLE) {
    storeMessageRecord(nextRecord(), slotIndex, <i32>channel, <i32>sequence, fragment, 0, payloadOffset, payloadLength);
    return;
  }
  if (kind == KIND_RELIABLE_ORDERED) {
    applyOrdered(slotIndex, channelBase, channel, sequence, fragment, payloadOffset, payloadLength);
    return;
  }
  if (kind == KIND_UNRELIABLE_SEQUENCED || kind == KIND_RELIABLE_SEQUENCED) {
    // Newest message id wins; fragments of the newest message pass (the host reassembles).
    // Message id of a fragment = messageSeq - fragIndex.
    const id = (sequence - (<u32>fragment >>> 16)) & 0xffff;
    const started = (load<u32>(channelBase, CHANNEL_FLAGS) & CHANNEL_FLAG_DELIVERED) != 0;
    const newest = load<u32>(channelBase, CHANNEL_BASE);
    if (started && !sequenceGreaterThan(id, newest)) {
      if (id != newest) {
        dropFrame(slotIndex, DROP_STALE_MESSAGE, channel, sequence);
        return;
      }
      if (fragment == 0) {
        dropFrame(slotIndex, DROP_DUPLICATE_MESSAGE, channel, sequence);
        return;
      }
    }
    store<u32>(channelBase, id, CHANNEL_BASE);
    store<u32>(channelBase, CHANNEL_FLAG_DELIVERED, CHANNEL_FLAGS);
    storeMessageRecord(nextRecord(), slotIndex, <i32>channel, <i32>sequence, fragment, 0, payloadOffset, payloadLength);
    return;
  }
  // ReliableUnordered and LatestState: exactly once within a 1024-wide window ending at the
  // highest seen (like an anti-replay window). Bits that slide out are cleared as it advances.
  assert(kind == KIND_RELIABLE_UNORDERED || kind == KIND_LATEST_STATE);
  const highest = load<u32>(channelBase, CHANNEL_BASE);
  if (sequenceGreaterThan(sequence, highest)) {
    const advance = sequenceDistance(sequence, highest);
    if (advance >= MESSAGE_WINDOW) {
      memory.fill(channelBase + CHANNEL_BITMAP, 0, MESSAGE_WINDOW >>> 3);
    } else {
      for (let k: u32 = 1; k < advance; k++) {
        const s = highest + k;
        const word = bitWord(channelBase, s);
        store<u32>(word, load<u32>(word) & ~bitMask(s));
      }
    }
    store<u32>(channelBase, sequence, CHANNEL_BASE);
  } else {
    if (sequenceDistance(highest, sequence) >= MESSAGE_WINDOW) {
      dropFrame(slotIndex, DROP_STALE_MESSAGE, channel, sequence);
      return;
    }
    if (load<u32>(bitWord(channelBase, sequence)) & bitMask(sequence)) {
      dropFrame(slotIndex, DROP_DUPLICATE_MESSAGE, channel, sequence);
      return;
    }
  }
  const word = bitWord(channelBase, sequence);
  store<u32>(word, load<u32>(word) | bitMask(sequence));
  storeMessageRecord(nextRecord(), slotIndex, <i32>channel, <i32>sequence, fragment, key, payloadOffset, payloadLength);
}
