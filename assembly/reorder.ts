// The reliable-ordered reorder window (docs/PROTOCOL.md §3, kind 3). Per channel: the next
// expected messageSeq and a 1024-bit set of held messageSeqs (bit = seq % 1024). The payload of
// a held message is copied out by the host on its Hold record; the engine only remembers which
// sequences are held and emits Release records, in order, when the gap before them closes.

import {
  storeFrameDroppedRecord, storeHoldRecord, storeMessageRecord, storeReleaseRecord, CHANNEL_BASE, CHANNEL_BITMAP,
  DROP_DUPLICATE_MESSAGE, DROP_TOO_FAR_AHEAD, MESSAGE_WINDOW,
} from "./abi.generated";
import { sequenceDistance } from "./sequence";
import { countDrop, nextRecord } from "./records";

@inline
export function bitWord(channelBase: usize, sequence: u32): usize {
  return channelBase + CHANNEL_BITMAP + (<usize>((sequence & (MESSAGE_WINDOW - 1)) >>> 5) << 2);
}

@inline
export function bitMask(sequence: u32): u32 {
  return <u32>1 << (sequence & 31);
}

@inline
function dropFrame(slotIndex: i32, reason: i32, channel: u32, sequence: u32): void {
  countDrop(reason);
  storeFrameDroppedRecord(nextRecord(), slotIndex, reason, <i32>channel, <i32>sequence);
}

export function applyOrdered(
  slotIndex: i32, channelBase: usize, channel: u32, sequence: u32, fragment: i32,
  payloadOffset: i32, payloadLength: i32,
): void {
  const expected = load<u32>(channelBase, CHANNEL_BASE);
  const ahead = sequenceDistance(sequence, expected);
  if (ahead == 0) {
    storeMessageRecord(nextRecord(), slotIndex, <i32>channel, <i32>sequence, fragment, 0, payloadOffset, payloadLength);
    // Release the run of held messages that now continues the in-order prefix. Bits are only
    // ever set inside the window, so this runs at most MESSAGE_WINDOW - 1 times.
    let next = (sequence + 1) & 0xffff;
    for (;;) {
      const word = bitWord(channelBase, next);
      const mask = bitMask(next);
      const bits = load<u32>(word);
      if ((bits & mask) == 0) break;
      store<u32>(word, bits & ~mask);
      storeReleaseRecord(nextRecord(), slotIndex, <i32>channel, <i32>next);
      next = (next + 1) & 0xffff;
    }
    store<u32>(channelBase, next, CHANNEL_BASE);
    return;
  }
  if (ahead >= 0x8000) {
    dropFrame(slotIndex, DROP_DUPLICATE_MESSAGE, channel, sequence); // behind: already delivered
    return;
  }
  if (ahead >= MESSAGE_WINDOW) {
    dropFrame(slotIndex, DROP_TOO_FAR_AHEAD, channel, sequence);
    return;
  }
  const word = bitWord(channelBase, sequence);
  const mask = bitMask(sequence);
  const bits = load<u32>(word);
  if (bits & mask) {
    dropFrame(slotIndex, DROP_DUPLICATE_MESSAGE, channel, sequence);
    return;
  }
  store<u32>(word, bits | mask);
  storeHoldRecord(nextRecord(), slotIndex, <i32>channel, <i32>sequence, fragment, 0, payloadOffset, payloadLength);
}
