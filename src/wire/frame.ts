/**
 * Channel frames (docs/PROTOCOL.md §3): channel, flags, messageSeq, [fragIndex, fragCount],
 * [key], length, payload. The engine parses received frames; the channels write them
 * (SendChannel.writeFrame, writeGap) with the writers here: one small function per field
 * group, which V8 inlines into the per-message writer.
 */
import {
  DeliveryKind,
  FRAGMENT_EXTRA_BYTES,
  FRAME_FLAG_FRAGMENT,
  FRAME_FLAG_GAP,
  FRAME_FLAG_KIND_MASK,
  FRAME_HEADER_BYTES,
  GAP_PAYLOAD_BYTES,
  LATEST_STATE_EXTRA_BYTES,
} from "../engine/abi.js";
import { writeU16, writeU32 } from "./bytes.js";

/** The header's first fields: channel, flags, messageSeq. Returns where the next field goes. */
export function writeFrameStart(b: Uint8Array, pos: number, channel: number, flags: number, seq: number): number {
  b[pos] = channel;
  b[pos + 1] = flags;
  writeU16(b, pos + 2, seq);
  return pos + 4;
}

/** With FRAGMENT: u16 fragIndex, u16 fragCount. */
export function writeFragmentFields(b: Uint8Array, p: number, fragIndex: number, fragCount: number): number {
  writeU16(b, p, fragIndex);
  writeU16(b, p + 2, fragCount);
  return p + FRAGMENT_EXTRA_BYTES;
}

/** For LatestState: u32 key. */
export function writeKeyField(b: Uint8Array, p: number, key: number): number {
  writeU32(b, p, key);
  return p + LATEST_STATE_EXTRA_BYTES;
}

/** The header's last field, u16 payload length. Returns where the payload goes. */
export function writeFrameLength(b: Uint8Array, p: number, length: number): number {
  writeU16(b, p, length);
  return p + 2;
}

/** A GAP frame's length: header and its u16 count. */
export const GAP_FRAME_BYTES = FRAME_HEADER_BYTES + GAP_PAYLOAD_BYTES;

/** A GAP frame (flags = kind | GAP, length 2, u16 count): sequences seq .. seq + count - 1
 *  will never be sent again. Returns its length. */
export function writeGapFrame(b: Uint8Array, pos: number, channel: number, kind: number, seq: number, count: number): number {
  const p = writeFrameLength(b, writeFrameStart(b, pos, channel, kind | FRAME_FLAG_GAP, seq), GAP_PAYLOAD_BYTES);
  writeU16(b, p, count);
  return GAP_FRAME_BYTES;
}

/** Header length of a frame with these flags. */
export function frameHeaderBytes(flags: number): number {
  return (
    FRAME_HEADER_BYTES +
    ((flags & FRAME_FLAG_FRAGMENT) !== 0 ? FRAGMENT_EXTRA_BYTES : 0) +
    ((flags & FRAME_FLAG_KIND_MASK) === DeliveryKind.LatestState ? LATEST_STATE_EXTRA_BYTES : 0)
  );
}

/** Frames area walk: true if any frame of [at, end) is on a channel whose `flags[channel]` is set. */
export function carriesChannel(b: Uint8Array, at: number, end: number, flags: Uint8Array): boolean {
  while (at + FRAME_HEADER_BYTES <= end) {
    const channel = b[at];
    const f = b[at + 1];
    if (flags[channel] !== 0) return true;
    const header = frameHeaderBytes(f);
    if (at + header > end) return false;
    // The length is the header's last u16.
    at += header + (b[at + header - 2] | (b[at + header - 1] << 8));
  }
  return false;
}
