// Packet header encode/decode and the table-driven length rule per packet type
// (docs/PROTOCOL.md §1 "Packet types", §2, §4).

export const TYPE_DATA: u32 = 0;
export const TYPE_KEEPALIVE: u32 = 9;
export const DATA_HEADER_BYTES: usize = 9;
/** A DATA frames area of exactly this length is a pure ack's ack delay, not frames (§2). */
export const ACK_DELAY_TRAILER_BYTES: usize = 2;
export const CRC_BYTES: usize = 4;
export const MIN_DATAGRAM_BYTES: usize = 5;
export const MAX_DATAGRAM_BYTES: usize = 1500;

/** How a type's body length is checked. */
const RULE_UNKNOWN: u8 = 0;
/** body == FIXED */
const RULE_EXACT: u8 = 1;
/** body >= FIXED (DATA: header + frames) */
const RULE_AT_LEAST: u8 = 2;
/** body == FIXED + u16 userDataLength at UDL_AT (datagram offset), userDataLength <= UDL_MAX */
const RULE_USER_DATA: u8 = 3;

// Indexed by packet type 0..15.
//                                    DATA REQ CHAL RESP ACC DENY DISC DACK NOCO KEEP RBRQ RBCH RBRS PNCH
const RULE = memory.data<u8>([2, 1, 1, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0]);
const FIXED = memory.data<u16>([8, 251, 20, 36, 10, 7, 7, 4, 6, 8, 16, 16, 16, 8, 0, 0]);
const UDL_AT = memory.data<u8>([0, 0, 0, 35, 9, 6, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
const UDL_MAX = memory.data<u16>([0, 0, 0, 512, 512, 200, 512, 0, 0, 0, 0, 0, 0, 0, 0, 0]);

/** Type byte bit 4: the ack fields of a DATA/KEEPALIVE packet are meaningful (§2). */
export const ACKS_VALID: u32 = 0x10;

/**
 * Type byte -> packet type, or -1 (UnknownType) for a reserved bit (5-7), an unknown type, or
 * ACKS_VALID on a type other than DATA/KEEPALIVE.
 */
@inline
export function packetType(typeByte: u32): i32 {
  if (typeByte & 0xe0) return -1;
  const type = typeByte & 0x0f;
  if (load<u8>(RULE + type) == RULE_UNKNOWN) return -1;
  if ((typeByte & ACKS_VALID) != 0 && type != TYPE_DATA && type != TYPE_KEEPALIVE) return -1;
  return <i32>type;
}

/** Does the body (datagram minus type byte and CRC) have a legal length for `type`? */
export function lengthIsValid(ptr: usize, length: usize, type: u32): bool {
  const body = length - 1 - CRC_BYTES;
  const rule = load<u8>(RULE + type);
  const fixed = <usize>load<u16>(FIXED + (<usize>type << 1));
  if (rule == RULE_EXACT) return body == fixed;
  if (rule == RULE_AT_LEAST) return body >= fixed;
  if (rule == RULE_USER_DATA) {
    if (body < fixed) return false;
    const userDataLength = <usize>load<u16>(ptr + <usize>load<u8>(UDL_AT + type));
    return userDataLength <= <usize>load<u16>(UDL_MAX + (<usize>type << 1)) && body == fixed + userDataLength;
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
