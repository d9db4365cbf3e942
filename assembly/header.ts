// Packet header encode/decode and the table-driven length rule per packet type
// (docs/PROTOCOL.md §1 "Packet types", §2, §4). The tables come from the ABI definition.

import {
  ACKS_VALID, CRC_BYTES, LENGTH_RULE_AT_LEAST, LENGTH_RULE_EXACT, LENGTH_RULE_UNKNOWN, LENGTH_RULE_USER_DATA,
  PACKET_LENGTH_FIXED, PACKET_LENGTH_RULE, PACKET_LENGTH_USER_DATA_AT, PACKET_LENGTH_USER_DATA_MAX, TYPE_DATA,
  TYPE_KEEPALIVE,
} from "./abi.generated";

/**
 * Type byte -> packet type, or -1 (UnknownType) for a reserved bit (5-7), an unknown type, or
 * ACKS_VALID on a type other than DATA/KEEPALIVE.
 */
@inline
export function packetType(typeByte: u32): i32 {
  if (typeByte & 0xe0) return -1;
  const type = typeByte & 0x0f;
  if (load<u8>(PACKET_LENGTH_RULE + type) == LENGTH_RULE_UNKNOWN) return -1;
  if ((typeByte & ACKS_VALID) != 0 && type != TYPE_DATA && type != TYPE_KEEPALIVE) return -1;
  return <i32>type;
}

/** Does the body (datagram minus type byte and CRC) have a legal length for `type`? */
export function lengthIsValid(ptr: usize, length: usize, type: u32): bool {
  const body = length - 1 - CRC_BYTES;
  const rule = load<u8>(PACKET_LENGTH_RULE + type);
  const fixed = <usize>load<u16>(PACKET_LENGTH_FIXED + (<usize>type << 1));
  if (rule == LENGTH_RULE_EXACT) return body == fixed;
  if (rule == LENGTH_RULE_AT_LEAST) return body >= fixed;
  if (rule == LENGTH_RULE_USER_DATA) {
    if (body < fixed) return false;
    const userDataLength = <usize>load<u16>(ptr + <usize>load<u8>(PACKET_LENGTH_USER_DATA_AT + type));
    return userDataLength <= <usize>load<u16>(PACKET_LENGTH_USER_DATA_MAX + (<usize>type << 1)) && body == fixed + userDataLength;
  }
  return false;
}

// DATA / KEEPALIVE header: type u8, sequence u16, ack u16, ackBits u32 (§2).
@inline
export function readSequence(ptr: usize): u32 {
  return <u32>load<u16>(ptr, 1);
}
@inline
export function readAck(ptr: usize): u32 {
  return <u32>load<u16>(ptr, 3);
}
@inline
export function readAckBits(ptr: usize): u32 {
  return load<u32>(ptr, 5);
}

export function writeDataHeader(ptr: usize, type: u32, sequence: u32, ack: u32, ackBits: u32): void {
  store<u8>(ptr, <u8>type);
  store<u16>(ptr, <u16>sequence, 1);
  store<u16>(ptr, <u16>ack, 3);
  store<u32>(ptr, ackBits, 5);
}
