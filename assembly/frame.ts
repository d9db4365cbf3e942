// Frame decode (docs/PROTOCOL.md §3). Strict: every read is bounds-checked against the end of
// the frames area; the first bad frame rejects the whole datagram (MalformedFrame).
//
//   channel u8 | flags u8 | messageSeq u16 | [fragIndex u16, fragCount u16] | [key u32] | length u16 | payload

import {
  FRAGMENT_EXTRA_BYTES, FRAME_FLAG_FRAGMENT, FRAME_FLAG_GAP, FRAME_FLAG_KIND_MASK, FRAME_FLAG_RESERVED,
  FRAME_HEADER_BYTES, GAP_PAYLOAD_BYTES, KIND_LATEST_STATE, KIND_RELIABLE_ORDERED, LATEST_STATE_EXTRA_BYTES,
  MAX_FRAGMENT_COUNT, SYSTEM_CHANNEL,
} from "./abi.generated";
import { channelCount, channelKind } from "./layout";

/** Header bytes of a frame with these flags (kind is flags & 7). */
@inline
export function frameHeaderBytes(flags: u32): usize {
  let h = FRAME_HEADER_BYTES;
  if (flags & FRAME_FLAG_FRAGMENT) h += FRAGMENT_EXTRA_BYTES;
  if ((flags & FRAME_FLAG_KIND_MASK) == KIND_LATEST_STATE) h += LATEST_STATE_EXTRA_BYTES;
  return h;
}

/**
 * Validate every frame in [start, end). Returns the number of frames, or -1 if any frame is
 * malformed. Reads nothing at or past `end`. A GAP frame (reliable-ordered, unfragmented, a u16
 * count of 1..MAX_FRAGMENT_COUNT as its payload) may appear once per datagram: each can set a
 * window's worth of held bits, and processBatch's record bound allows for one.
 */
export function validateFrames(start: usize, end: usize): i32 {
  let p = start;
  let count = 0;
  let gaps = 0;
  while (p < end) {
    if (end - p < FRAME_HEADER_BYTES) return -1;
    const channel = <u32>load<u8>(p);
    const flags = <u32>load<u8>(p, 1);
    if (flags & FRAME_FLAG_RESERVED) return -1;
    const kind = flags & FRAME_FLAG_KIND_MASK;
    if (channel == SYSTEM_CHANNEL) {
      if (kind != 0 || (flags & FRAME_FLAG_FRAGMENT) != 0) return -1;
    } else if (channel >= channelCount || kind != channelKind(channel)) {
      return -1;
    }
    const header = frameHeaderBytes(flags);
    if (end - p < header) return -1;
    if (flags & FRAME_FLAG_FRAGMENT) {
      const fragIndex = <u32>load<u16>(p, 4);
      const fragCount = <u32>load<u16>(p, 6);
      if (fragCount < 2 || fragCount > MAX_FRAGMENT_COUNT || fragIndex >= fragCount) return -1;
    }
    const length = <usize>load<u16>(p + header - 2);
    if (end - p - header < length) return -1;
    if (flags & FRAME_FLAG_GAP) {
      if (kind != KIND_RELIABLE_ORDERED || (flags & FRAME_FLAG_FRAGMENT) != 0 || length != GAP_PAYLOAD_BYTES || ++gaps > 1) return -1;
      const skipped = <u32>load<u16>(p + header);
      if (skipped < 1 || skipped > MAX_FRAGMENT_COUNT) return -1;
    }
    p += header + length;
    count++;
  }
  return count;
}
