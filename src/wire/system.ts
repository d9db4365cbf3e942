/**
 * System-channel messages (docs/PROTOCOL.md §3, "System channel (255)"): frames on channel 255,
 * delivery kind Unreliable, messageSeq 0, whose payload starts with the system message type.
 *
 * Encoders write the whole frame (header, type, fields) at `at` and return its length. A
 * received message is read at the offset of its payload (the type byte), as the engine's
 * message records give it, after its length is checked against the message's *_LENGTH: its
 * fields are at the *_AT offsets from there.
 */
import { ACK_DELAY_UNITS_PER_MS, DeliveryKind, FRAME_HEADER_BYTES, SYSTEM_CHANNEL } from "../engine/abi.js";
import { readU16, writeF64, writeU16, writeU32 } from "./bytes.js";

/** System message types (the payload's first byte). */
export const SYSTEM_CLOCK_REQUEST = 1;
export const SYSTEM_CLOCK_REPLY = 2;
export const SYSTEM_ACK_DELAY = 3;
export const SYSTEM_PADDING = 4;
export const SYSTEM_ACK_FREQUENCY = 5;
export const SYSTEM_RECEIVE_TIME = 6;
export const SYSTEM_PARITY = 7;
export const SYSTEM_LATE_ACK = 8;

/** Frame header + type byte: where a system message's fields start, from the frame. */
export const SYSTEM_FRAME_HEAD = FRAME_HEADER_BYTES + 1;

/** Payload lengths (type byte included) and frame lengths of the fixed-size messages. */
export const CLOCK_REQUEST_LENGTH = 1 + 4;
export const CLOCK_REQUEST_FRAME = FRAME_HEADER_BYTES + CLOCK_REQUEST_LENGTH;
export const CLOCK_REPLY_LENGTH = 1 + 4 + 8;
export const CLOCK_REPLY_FRAME = FRAME_HEADER_BYTES + CLOCK_REPLY_LENGTH;
export const ACK_DELAY_LENGTH = 1 + 2 + 2;
export const ACK_DELAY_FRAME = FRAME_HEADER_BYTES + ACK_DELAY_LENGTH;
export const ACK_FREQUENCY_LENGTH = 1 + 1 + 1;
export const ACK_FREQUENCY_FRAME = FRAME_HEADER_BYTES + ACK_FREQUENCY_LENGTH;
/** ACK_FREQUENCY threshold byte, bit 7: report receive times. Bits 5-6 must be 0. */
export const RECEIVE_TIMES_FLAG = 0x80;
export const RECEIVE_TIME_LENGTH = 1 + 2 + 4;
export const RECEIVE_TIME_FRAME = FRAME_HEADER_BYTES + RECEIVE_TIME_LENGTH;
/** PARITY before the parity bytes: type, first, mask, lengthXor. */
export const PARITY_FIELDS_BYTES = 1 + 2 + 2 + 2;
/** A LATE_ACK range: u16 first, u8 extra. */
export const LATE_ACK_RANGE_BYTES = 3;

/** The frame header of a system message of `payloadLength` bytes (type byte included). */
export function writeSystemFrameHeader(b: Uint8Array, at: number, payloadLength: number): void {
  b[at] = SYSTEM_CHANNEL;
  b[at + 1] = DeliveryKind.Unreliable;
  writeU16(b, at + 2, 0);
  writeU16(b, at + 4, payloadLength);
}

/** Is the frame at `at` (its header within the frames area) a system message of `type`? */
export function isSystemFrame(b: Uint8Array, at: number, type: number): boolean {
  return b[at] === SYSTEM_CHANNEL && b[at + 1] === DeliveryKind.Unreliable && b[at + FRAME_HEADER_BYTES] === type;
}

/** A frame's payload length (the header's last u16; system frames are never fragmented). */
export function readSystemPayloadLength(b: Uint8Array, at: number): number {
  return readU16(b, at + 4);
}

// ---- CLOCK_REQUEST (1): u32 clientSendTime ------------------------------------------------------

export function encodeClockRequest(b: Uint8Array, at: number, sendTime: number): number {
  writeSystemFrameHeader(b, at, CLOCK_REQUEST_LENGTH);
  b[at + 6] = SYSTEM_CLOCK_REQUEST;
  writeU32(b, at + 7, sendTime);
  return CLOCK_REQUEST_FRAME;
}

/** u32 clientSendTime. */
export const CLOCK_REQUEST_SEND_TIME_AT = 1;

// ---- CLOCK_REPLY (2): u32 clientSendTime (echo), f64 serverTime ---------------------------------

export function encodeClockReply(b: Uint8Array, at: number, echo: number, serverTime: number): number {
  writeSystemFrameHeader(b, at, CLOCK_REPLY_LENGTH);
  b[at + 6] = SYSTEM_CLOCK_REPLY;
  writeU32(b, at + 7, echo);
  writeF64(b, at + 11, serverTime);
  return CLOCK_REPLY_FRAME;
}

/** u32 clientSendTime (the echo), f64 serverTime. */
export const CLOCK_REPLY_ECHO_AT = 1;
export const CLOCK_REPLY_SERVER_TIME_AT = 5;

// ---- ACK_DELAY (3): u16 sequence, u16 delay in 0.1 ms, saturating --------------------------------

/** A wait in ms as the u16 delay field of ACK_DELAY and of a pure ack (§2). */
export function ackDelayUnits(waitedMs: number): number {
  return Math.min(0xffff, Math.floor(waitedMs * ACK_DELAY_UNITS_PER_MS));
}

export function encodeAckDelay(b: Uint8Array, at: number, sequence: number, waitedMs: number): number {
  writeSystemFrameHeader(b, at, ACK_DELAY_LENGTH);
  b[at + 6] = SYSTEM_ACK_DELAY;
  writeU16(b, at + 7, sequence);
  writeU16(b, at + 9, ackDelayUnits(waitedMs));
  return ACK_DELAY_FRAME;
}

/** u16 sequence; u16 delay (ackDelayMs). */
export const ACK_DELAY_SEQUENCE_AT = 1;
export const ACK_DELAY_DELAY_AT = 3;

/** A u16 delay field (ACK_DELAY's, a pure ack's) in ms. */
export function ackDelayMs(units: number): number {
  return units / ACK_DELAY_UNITS_PER_MS;
}

// ---- PADDING (4): zeros, ignored -----------------------------------------------------------------

/** A PADDING frame filling exactly `frameLength` bytes. */
export function encodePadding(b: Uint8Array, at: number, frameLength: number): number {
  writeSystemFrameHeader(b, at, frameLength - FRAME_HEADER_BYTES);
  b[at + 6] = SYSTEM_PADDING;
  b.fill(0, at + 7, at + frameLength);
  return frameLength;
}

// ---- ACK_FREQUENCY (5): u8 requestSeq, u8 threshold | 0x80 for receive times --------------------

export function encodeAckFrequency(b: Uint8Array, at: number, requestSeq: number, threshold: number): number {
  writeSystemFrameHeader(b, at, ACK_FREQUENCY_LENGTH);
  b[at + 6] = SYSTEM_ACK_FREQUENCY;
  b[at + 7] = requestSeq;
  b[at + 8] = threshold;
  return ACK_FREQUENCY_FRAME;
}

/** u8 requestSeq; u8 threshold byte as sent (threshold | RECEIVE_TIMES_FLAG). */
export const ACK_FREQUENCY_REQUEST_SEQ_AT = 1;
export const ACK_FREQUENCY_THRESHOLD_AT = 2;

// ---- RECEIVE_TIME (6): u16 sequence, u32 receiveTime in microseconds, wrapping -------------------

export function encodeReceiveTime(b: Uint8Array, at: number, sequence: number, receivedAtMs: number): number {
  writeSystemFrameHeader(b, at, RECEIVE_TIME_LENGTH);
  b[at + 6] = SYSTEM_RECEIVE_TIME;
  writeU16(b, at + 7, sequence);
  writeU32(b, at + 9, Math.floor(receivedAtMs * 1000) >>> 0);
  return RECEIVE_TIME_FRAME;
}

/** u16 sequence; u32 receiveTime in microseconds. */
export const RECEIVE_TIME_SEQUENCE_AT = 1;
export const RECEIVE_TIME_MICROS_AT = 3;

// ---- PARITY (7): u16 first, u16 mask, u16 lengthXor, parity bytes ---------------------------------

/** The PARITY message's type and fields at `at` (the payload, after the frame header); the
 *  parity bytes follow at `at + PARITY_FIELDS_BYTES`. */
export function writeParityFields(b: Uint8Array, at: number, first: number, mask: number, lengthXor: number): void {
  b[at] = SYSTEM_PARITY;
  writeU16(b, at + 1, first);
  writeU16(b, at + 3, mask);
  writeU16(b, at + 5, lengthXor);
}

export function readParityFirst(b: Uint8Array, at: number): number {
  return readU16(b, at + 1);
}

export function readParityMask(b: Uint8Array, at: number): number {
  return readU16(b, at + 3);
}

export function readParityLengthXor(b: Uint8Array, at: number): number {
  return readU16(b, at + 5);
}

// ---- LATE_ACK (8): 1..32 ranges of u16 first, u8 extra ---------------------------------------------

/** The frame header and type of a LATE_ACK of `ranges` ranges (written after them); returns
 *  the frame length. */
export function writeLateAckHead(b: Uint8Array, at: number, ranges: number): number {
  const length = SYSTEM_FRAME_HEAD + ranges * LATE_ACK_RANGE_BYTES;
  writeSystemFrameHeader(b, at, length - FRAME_HEADER_BYTES);
  b[at + 6] = SYSTEM_LATE_ACK;
  return length;
}

/** Range `r` of the LATE_ACK frame at `at`: sequences first .. first + extra were received. */
export function writeLateAckRange(b: Uint8Array, at: number, r: number, first: number, extra: number): void {
  const p = at + SYSTEM_FRAME_HEAD + r * LATE_ACK_RANGE_BYTES;
  writeU16(b, p, first);
  b[p + 2] = extra;
}

/** `first` of range `r` of the LATE_ACK payload at `at` (its type byte). */
export function readLateAckFirst(b: Uint8Array, at: number, r: number): number {
  return readU16(b, at + 1 + r * LATE_ACK_RANGE_BYTES);
}

/** `extra` of range `r` of the LATE_ACK payload at `at`. */
export function readLateAckExtra(b: Uint8Array, at: number, r: number): number {
  return b[at + 1 + r * LATE_ACK_RANGE_BYTES + 2];
}
