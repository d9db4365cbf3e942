/**
 * The PARITY system message's limits (PROTOCOL §3, system channel type 7; its bytes are
 * src/wire/system.ts) and the `fec` channel option.
 *
 * The group is the DATA packets `first + i` (mod 2^16) for each bit i set in `mask` (bit 0, `first`
 * itself, always set); the parity is the XOR of those whole datagrams (header to CRC), each
 * zero-padded to the parity's length, and `lengthXor` the XOR of their lengths. A receiver that
 * holds all of the group but one rebuilds that one, CRC included, and reads it as if it had arrived.
 */
import { ChannelConfigError } from "../channels/errors.js";
import { DATA_OVERHEAD_BYTES, FRAME_HEADER_BYTES, MAX_DATAGRAM_BYTES } from "../engine/abi.js";
import { PARITY_FIELDS_BYTES } from "../wire/system.js";

/** Frame header + the fields: what a parity datagram carries beyond the parity itself. */
export const PARITY_FRAME_OVERHEAD = FRAME_HEADER_BYTES + PARITY_FIELDS_BYTES;
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
