/**
 * Soak messages check themselves. Every message names its client life, its stream and its
 * place in that stream, and ends with an FNV-1a checksum over everything before it; the body
 * bytes derive from (life, stream, seq), so a receiver proves a message intact and in the right
 * stream without keeping a copy. All integers little-endian.
 *
 *   life u32 | seq u32 | stream u8 | key u8 | pad u16 | body (derived) | fnv u32
 *
 * `seq` is the message's number in its stream (0, 1, 2...), or on the latest-state stream the
 * value's version (1, 2, 3... per key); `key` is the latest-state key (0 elsewhere).
 */
import { fnv1a, mix } from "../../demo/payloads.js";

export const HEADER_BYTES = 12;
export const MIN_MESSAGE_BYTES = HEADER_BYTES + 4;

/** The streams of one client life. "Up" streams go client -> server, "down" streams server -> client. */
export const Stream = {
  UpOrdered: 1,
  UpUnordered: 2,
  UpMove: 3,
  UpState: 4,
  UpBulk: 5,
  DownOrdered: 6,
  DownSnapshot: 7,
  DownBulk: 8,
} as const;
export type StreamId = (typeof Stream)[keyof typeof Stream];

export interface SoakMessage {
  life: number;
  seq: number;
  stream: number;
  key: number;
}

/** A message of `length` bytes (at least MIN_MESSAGE_BYTES) for (life, stream, seq, key). */
export function encodeSoak(life: number, stream: StreamId, seq: number, length: number, key = 0): Uint8Array {
  if (!(length >= MIN_MESSAGE_BYTES)) throw new RangeError(`soak message needs at least ${MIN_MESSAGE_BYTES} bytes, got ${length}`);
  const b = new Uint8Array(length);
  const v = new DataView(b.buffer);
  v.setUint32(0, life, true);
  v.setUint32(4, seq, true);
  b[8] = stream;
  b[9] = key;
  let r = mix(mix(life, stream), seq);
  const end = length - 4;
  let i = HEADER_BYTES;
  for (; i + 4 <= end; i += 4) {
    r = mix(r, i);
    v.setUint32(i, r, true);
  }
  for (; i < end; i++) b[i] = mix(r, i) & 0xff;
  v.setUint32(end, fnv1a(b, 0, end), true);
  return b;
}

/** The message's header if its checksum holds, else undefined. */
export function decodeSoak(b: Uint8Array): SoakMessage | undefined {
  if (b.length < MIN_MESSAGE_BYTES) return undefined;
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (v.getUint32(b.length - 4, true) !== fnv1a(b, 0, b.length - 4)) return undefined;
  return { life: v.getUint32(0, true), seq: v.getUint32(4, true), stream: b[8]!, key: b[9]! };
}
