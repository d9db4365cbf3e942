/**
 * Channel frames (docs/PROTOCOL.md §3): channel, flags, messageSeq, [fragIndex, fragCount],
 * [key], length, payload. The engine parses received frames. The channels write their frames
 * themselves (SendChannel.writeFrame and writeGap, once per message on the send path); this
 * file has the layout the session reads back.
 */
import {
  DeliveryKind,
  FRAGMENT_EXTRA_BYTES,
  FRAME_FLAG_FRAGMENT,
  FRAME_FLAG_KIND_MASK,
  FRAME_HEADER_BYTES,
  LATEST_STATE_EXTRA_BYTES,
} from "../engine/abi.js";

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
