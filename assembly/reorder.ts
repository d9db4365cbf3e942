// The reliable-ordered reorder window (docs/PROTOCOL.md §3, kind 3). Per channel: the next
// expected messageSeq and a 1024-bit set of held messageSeqs (bit = seq % 1024). The payload of
// a held message is copied out by the host on its Hold record; the engine only remembers which
// sequences are held and emits Release records, in order, when the gap before them closes.

import {
  storeFrameDroppedRecord, storeHoldGapRecord, storeHoldRecord, storeMessageRecord, storeReleaseRecord,
  storeSkipRecord, CHANNEL_BASE, CHANNEL_BITMAP, DROP_DUPLICATE_MESSAGE, DROP_TOO_FAR_AHEAD, MESSAGE_WINDOW,
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
    releaseFrom(slotIndex, channelBase, channel, (sequence + 1) & 0xffff);
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

/**
 * Release the run of held sequences from `next` on, which now continues the in-order prefix,
 * and make the first one not held the next expected. Bits are only ever set inside the window,
 * so this runs at most MESSAGE_WINDOW - 1 times.
 */
function releaseFrom(slotIndex: i32, channelBase: usize, channel: u32, next: u32): void {
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
}

/**
 * A GAP frame (PROTOCOL §3): the sender gave up the message at `sequence` .. `sequence + count
 * - 1` (its deadline passed) and sends none of it again. What of it arrived is kept; what did
 * not is skipped. The part already behind the in-order point is ignored. At the in-order point
 * each held sequence is released and each run of missing ones is a Skip record; then the held
 * run after the range is released. Ahead of it every sequence of the range is marked held and a
 * HoldGap record tells the host which of them hold nothing (it keeps a marker for those).
 */
export function applyOrderedGap(slotIndex: i32, channelBase: usize, channel: u32, sequence: u32, count: u32): void {
  const expected = load<u32>(channelBase, CHANNEL_BASE);
  let ahead = sequenceDistance(sequence, expected);
  if (ahead >= 0x8000) {
    const behind = sequenceDistance(expected, sequence);
    if (behind >= count) {
      dropFrame(slotIndex, DROP_DUPLICATE_MESSAGE, channel, sequence); // all of it delivered or skipped
      return;
    }
    count -= behind;
    sequence = expected;
    ahead = 0;
  }
  if (ahead + count > MESSAGE_WINDOW) {
    dropFrame(slotIndex, DROP_TOO_FAR_AHEAD, channel, sequence);
    return;
  }
  if (ahead > 0) {
    for (let k: u32 = 0; k < count; k++) {
      const s = (sequence + k) & 0xffff;
      const word = bitWord(channelBase, s);
      store<u32>(word, load<u32>(word) | bitMask(s));
    }
    storeHoldGapRecord(nextRecord(), slotIndex, <i32>channel, <i32>sequence, <i32>count);
    return;
  }
  let run: u32 = 0; // missing sequences before `s`, not yet reported
  for (let k: u32 = 0; k < count; k++) {
    const s = (sequence + k) & 0xffff;
    const word = bitWord(channelBase, s);
    const bits = load<u32>(word);
    const mask = bitMask(s);
    if ((bits & mask) == 0) {
      run++;
      continue;
    }
    if (run > 0) storeSkipRecord(nextRecord(), slotIndex, <i32>channel, <i32>((s - run) & 0xffff), <i32>run);
    run = 0;
    store<u32>(word, bits & ~mask);
    storeReleaseRecord(nextRecord(), slotIndex, <i32>channel, <i32>s);
  }
  const end = (sequence + count) & 0xffff;
  if (run > 0) storeSkipRecord(nextRecord(), slotIndex, <i32>channel, <i32>((end - run) & 0xffff), <i32>run);
  releaseFrom(slotIndex, channelBase, channel, end);
}
