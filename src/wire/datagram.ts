/**
 * Datagram-level fields the session reads or writes itself (docs/PROTOCOL.md §1-2); the engine
 * seals and parses the rest.
 */
import { ACK_DELAY_TRAILER_BYTES, ACKS_VALID, DATA_HEADER_BYTES, DATA_OVERHEAD_BYTES, FRAME_HEADER_BYTES } from "../engine/abi.js";
import { readU16, readU32, writeU16 } from "./bytes.js";
import {
  ACK_DELAY_FRAME,
  ACK_DELAY_LENGTH,
  ackDelayMs,
  ackDelayUnits,
  isSystemFrame,
  LATE_ACK_RANGE_BYTES,
  readSystemPayloadLength,
  SYSTEM_ACK_DELAY,
  SYSTEM_FRAME_HEAD,
  SYSTEM_LATE_ACK,
} from "./system.js";

/** §1: the crc32c field at `at` (the datagram's last CRC_BYTES), a u32. */
export const readCrc: (b: Uint8Array, at: number) => number = readU32;

/** §1: the packet type (bits 0-3 of the type byte). */
export function readPacketType(b: Uint8Array, at: number): number {
  return b[at] & 0x0f;
}

/** §2: the `sequence` field of the DATA/KEEPALIVE datagram at `at`. */
export function readDataSequence(b: Uint8Array, at: number): number {
  return readU16(b, at + 1);
}

/** §2: the header's `ack` of the DATA/KEEPALIVE datagram at `at`, or -1 without ACKS_VALID
 *  (the field then names nothing). */
export function readDataAck(b: Uint8Array, at: number): number {
  return (b[at] & ACKS_VALID) !== 0 ? readU16(b, at + 3) : -1;
}

/** §2: a pure ack's u16 ackDelay, where the frames would be. Returns the bytes written. */
export function writeAckDelayTrailer(b: Uint8Array, framesAt: number, waitedMs: number): number {
  writeU16(b, framesAt, ackDelayUnits(waitedMs));
  return ACK_DELAY_TRAILER_BYTES;
}

/** §2: the ackDelay of the pure ack at `at`, in ms. */
export function readAckDelayTrailerMs(b: Uint8Array, at: number): number {
  return ackDelayMs(readU16(b, at + DATA_HEADER_BYTES));
}

/**
 * §2: true if the DATA datagram at `b[at]` (`length` bytes, CRC included, frames already checked
 * by the engine) is an ack only: its frames are one LATE_ACK, optionally followed by one
 * ACK_DELAY. Such a packet is not ack-eliciting, as a pure ack is not.
 */
export function isAckOnly(b: Uint8Array, at: number, length: number): boolean {
  const frames = at + DATA_HEADER_BYTES;
  const framesLength = length - DATA_OVERHEAD_BYTES;
  if (framesLength < SYSTEM_FRAME_HEAD + LATE_ACK_RANGE_BYTES || !isSystemFrame(b, frames, SYSTEM_LATE_ACK)) return false;
  const first = FRAME_HEADER_BYTES + readSystemPayloadLength(b, frames);
  if (first === framesLength) return true;
  const p = frames + first;
  return framesLength - first === ACK_DELAY_FRAME && isSystemFrame(b, p, SYSTEM_ACK_DELAY) && readSystemPayloadLength(b, p) === ACK_DELAY_LENGTH;
}
