/**
 * The PARITY system message (PROTOCOL §3, system channel type 7) and the `fec` channel option.
 *
 * Payload after the type byte: u16 first, u16 mask, u16 lengthXor, then the parity bytes. The
 * group is the DATA packets `first + i` (mod 2^16) for each bit i set in `mask` (bit 0, `first`
 * itself, always set); the parity is the XOR of those whole datagrams (header to CRC), each
 * zero-padded to the parity's length, and `lengthXor` the XOR of their lengths. A receiver that
 * holds all of the group but one rebuilds that one, CRC included, and reads it as if it had arrived.
 */
import { ChannelConfigError } from "../channels/errors.js";
import { DATA_OVERHEAD_BYTES, MAX_DATAGRAM_BYTES } from "../engine/abi.js";

/** System message type of PARITY. */
export const SYSTEM_PARITY = 7;
/** Type byte + first + mask + lengthXor. */
export const PARITY_FIELDS_BYTES = 7;
/** Frame header (6) + the fields: what a parity datagram carries beyond the parity itself. */
export const PARITY_FRAME_OVERHEAD = 6 + PARITY_FIELDS_BYTES;
/** Sequences a group may span (the mask's width): bounds the receiver's store. */
export const GROUP_SPAN = 16;
/** Largest group, and the largest fixed `fec` value. */
export const MAX_GROUP = 16;
/** Shortest datagram a group can hold (a DATA packet with no frame). */
export const MIN_MEMBER_BYTES = DATA_OVERHEAD_BYTES;
export const MAX_MEMBER_BYTES = MAX_DATAGRAM_BYTES;

/**
 * Validated `fec` option of channel `i`: 0 = off, -1 = group size follows the measured loss
 * (`true`), 1..MAX_GROUP = that many datagrams per parity.
 */
export function fecOption(i: number, value: unknown): number {
  if (value === undefined || value === false || value === 0) return 0;
  if (value === true) return -1;
  if (typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_GROUP) return value;
  throw new ChannelConfigError(
    `channel ${i}: fec must be true (group size follows the measured loss), false, or a group size 1..${MAX_GROUP}; got ${String(value)}`,
  );
}

/**
 * Group size for a measured loss rate (`true`): about a quarter of a loss expected per group of
 * k datagrams and their parity, so a group rarely loses two (XOR rebuilds one); 0 (no parity)
 * while there is no loss to speak of.
 */
export function adaptiveGroupSize(lossRate: number): number {
  if (!(lossRate >= NO_LOSS_RATE)) return 0;
  const k = Math.round(0.25 / lossRate) - 1;
  return k < 1 ? 1 : k > MAX_GROUP ? MAX_GROUP : k;
}

/** Below this measured loss rate, adaptive parity is off. */
export const NO_LOSS_RATE = 0.005;

/** Frames area walk: true if any frame of [at, end) is on a channel whose `flags[channel]` is set. */
export function carriesChannel(bytes: Uint8Array, at: number, end: number, flags: Uint8Array): boolean {
  while (at + 6 <= end) {
    const channel = bytes[at];
    const f = bytes[at + 1];
    if (flags[channel] !== 0) return true;
    // Header: 6, +4 with FRAGMENT (bit 3), +4 for LatestState (kind 5); length is its last u16.
    const header = 6 + ((f & 8) !== 0 ? 4 : 0) + ((f & 7) === 5 ? 4 : 0);
    if (at + header > end) return false;
    at += header + (bytes[at + header - 2] | (bytes[at + header - 1] << 8));
  }
  return false;
}
