/**
 * The unsequenced packets (docs/PROTOCOL.md §4 handshake, §5 REBIND, §7 NAT_PUNCH) and the
 * connection key of §1. What only a server reads or writes (the REQUEST and RESPONSE it reads,
 * the CHALLENGE, ACCEPT and DENY it writes) is ./control-server.ts.
 *
 * Encoders write the type byte and body at `at` and return the length before the CRC (the
 * caller seals it with `engine.sealControl`). Decoders read a body (after the type byte, before
 * the CRC) whose length the engine already checked against §1's table; they still bounds-check
 * everything they read and return undefined on anything malformed.
 */
import { CONNECTION_KEY_BYTES, PacketType, PUNCH_BODY_BYTES, REBIND_BODY_BYTES, WIRE_VERSION } from "../engine/abi.js";
import { readU16, readU32, writeU16, writeU32 } from "./bytes.js";

/** §4 CONNECT_REQUEST: the body is padded to this, so the datagram is 256 bytes. */
export const REQUEST_BODY_BYTES = 251;
/** §4 CHALLENGE: salt and cookie. */
export const CHALLENGE_BODY_BYTES = 20;
/** §4 CONNECT_RESPONSE before the user data. */
export const RESPONSE_FIXED_BYTES = 36;
/** §4 ACCEPT before the user data. */
export const ACCEPT_FIXED_BYTES = 10;
/** §4 DENY and DISCONNECT body before the user data: u32 id, u8 reason, u16 length. */
export const ID_REASON_FIXED_BYTES = 7;
/** §4 DISCONNECT_ACK: the session id. */
export const DISCONNECT_ACK_BODY_BYTES = 4;
/** §4 NO_CONNECTION: the sequence and CRC field it echoes. */
export const NO_CONNECTION_BODY_BYTES = 6;
export const MAX_RESPONSE_USER_DATA = 512;
export const MAX_ACCEPT_USER_DATA = 512;
export const MAX_DENY_USER_DATA = 200;
export const MAX_DISCONNECT_USER_DATA = 512;
export const COOKIE_BYTES = 16;
/** §5: the REBIND proof covers type, sessionId and token, the packet's first 13 bytes. */
export const REBIND_PROVEN_BYTES = 13;

/** §4 DENY reasons. */
export const enum DenyCode {
  ServerFull = 1,
  VersionMismatch = 2,
  ChannelMismatch = 3,
  Refused = 4,
  RateLimited = 5,
}

// ---- §1 ------------------------------------------------------------------------------------------

/**
 * §1 connection prefix: the connection's key, u32 clientSalt then u32 sessionId, joined to the
 * CRC prefix of its DATA and KEEPALIVE packets.
 */
export function connectionKey(salt: number, sessionId: number): Uint8Array {
  const key = new Uint8Array(CONNECTION_KEY_BYTES);
  writeU32(key, 0, salt);
  writeU32(key, 4, sessionId);
  return key;
}

// ---- §4 encoders ---------------------------------------------------------------------------------

/** §4 CONNECT_REQUEST. */
export function encodeRequest(b: Uint8Array, at: number, appVersion: number, salt: number): number {
  b[at] = PacketType.ConnectRequest;
  writeU16(b, at + 1, WIRE_VERSION);
  writeU32(b, at + 3, appVersion);
  writeU32(b, at + 7, salt);
  b.fill(0, at + 11, at + 1 + REQUEST_BODY_BYTES); // padding: the anti-amplification margin
  return 1 + REQUEST_BODY_BYTES;
}

/** §4 CONNECT_RESPONSE. */
export function encodeResponse(
  b: Uint8Array,
  at: number,
  salt: number,
  cookie: Uint8Array,
  appVersion: number,
  channelHash: number,
  userData: Uint8Array,
): number {
  b[at] = PacketType.ConnectResponse;
  writeU32(b, at + 1, salt);
  b.set(cookie.subarray(0, COOKIE_BYTES), at + 5);
  writeU16(b, at + 21, WIRE_VERSION);
  writeU32(b, at + 23, appVersion);
  writeU32(b, at + 27, channelHash);
  writeU32(b, at + 31, 0);
  writeU16(b, at + 35, userData.length);
  b.set(userData, at + 37);
  return 1 + RESPONSE_FIXED_BYTES + userData.length;
}

/** §4: DENY and DISCONNECT share one body layout: u32 id, u8 reason, u16 length, user data.
 *  The id is the client's salt (DENY) or the session id (DISCONNECT). */
export function encodeIdReasonData(b: Uint8Array, at: number, type: PacketType, id: number, reason: number, userData: Uint8Array): number {
  b[at] = type;
  writeU32(b, at + 1, id);
  b[at + 5] = reason;
  writeU16(b, at + 6, userData.length);
  b.set(userData, at + 8);
  return 1 + ID_REASON_FIXED_BYTES + userData.length;
}

/** §4 DISCONNECT. */
export function encodeDisconnect(b: Uint8Array, at: number, sessionId: number, reason: number, userData: Uint8Array): number {
  return encodeIdReasonData(b, at, PacketType.Disconnect, sessionId, reason, userData);
}

/** §4 DISCONNECT_ACK. */
export function encodeDisconnectAck(b: Uint8Array, at: number, sessionId: number): number {
  b[at] = PacketType.DisconnectAck;
  writeU32(b, at + 1, sessionId);
  return 1 + DISCONNECT_ACK_BODY_BYTES;
}

/** §4 NO_CONNECTION, echoing the sequence and CRC field of the DATA/KEEPALIVE it answers. */
export function encodeNoConnection(b: Uint8Array, at: number, sequence: number, crc: number): number {
  b[at] = PacketType.NoConnection;
  writeU16(b, at + 1, sequence);
  writeU32(b, at + 3, crc);
  return 1 + NO_CONNECTION_BODY_BYTES;
}

// ---- §4 decoders (body = bytes after the type byte, before the CRC) ----------------------------

export interface ChallengeFields {
  salt: number;
  cookie: Uint8Array;
}

/** §4 CHALLENGE (the cookie copied). */
export function decodeChallenge(b: Uint8Array, at: number, length: number): ChallengeFields | undefined {
  if (length !== CHALLENGE_BODY_BYTES) return undefined;
  return { salt: readU32(b, at), cookie: b.slice(at + 4, at + 4 + COOKIE_BYTES) };
}

export interface AcceptFields {
  salt: number;
  sessionId: number;
  userData: Uint8Array;
}

/** §4 ACCEPT. */
export function decodeAccept(b: Uint8Array, at: number, length: number): AcceptFields | undefined {
  if (length < ACCEPT_FIXED_BYTES) return undefined;
  const userLength = readU16(b, at + 8);
  if (userLength > MAX_ACCEPT_USER_DATA || ACCEPT_FIXED_BYTES + userLength !== length) return undefined;
  return { salt: readU32(b, at), sessionId: readU32(b, at + 4), userData: b.slice(at + 10, at + 10 + userLength) };
}

export interface DenyFields {
  salt: number;
  reason: number;
  userData: Uint8Array;
}

/** The shared DENY / DISCONNECT body (see encodeIdReasonData), or undefined if malformed. */
function decodeIdReasonData(b: Uint8Array, at: number, length: number, maxUserData: number): { id: number; reason: number; userData: Uint8Array } | undefined {
  if (length < ID_REASON_FIXED_BYTES) return undefined;
  const userLength = readU16(b, at + 5);
  if (userLength > maxUserData || ID_REASON_FIXED_BYTES + userLength !== length) return undefined;
  return { id: readU32(b, at), reason: b[at + 4], userData: b.slice(at + 7, at + 7 + userLength) };
}

/** §4 DENY. */
export function decodeDeny(b: Uint8Array, at: number, length: number): DenyFields | undefined {
  const f = decodeIdReasonData(b, at, length, MAX_DENY_USER_DATA);
  return f && { salt: f.id, reason: f.reason, userData: f.userData };
}

export interface DisconnectFields {
  sessionId: number;
  reason: number;
  userData: Uint8Array;
}

/** §4 DISCONNECT. */
export function decodeDisconnect(b: Uint8Array, at: number, length: number): DisconnectFields | undefined {
  const f = decodeIdReasonData(b, at, length, MAX_DISCONNECT_USER_DATA);
  return f && { sessionId: f.id, reason: f.reason, userData: f.userData };
}

/** §4 DISCONNECT_ACK: its session id. */
export function decodeDisconnectAck(b: Uint8Array, at: number, length: number): number | undefined {
  return length === DISCONNECT_ACK_BODY_BYTES ? readU32(b, at) : undefined;
}

export interface NoConnectionFields {
  /** Sequence and CRC field of the packet it answers: ours, if the NO_CONNECTION is genuine. */
  sequence: number;
  crc: number;
}

/** §4 NO_CONNECTION. */
export function decodeNoConnection(b: Uint8Array, at: number, length: number): NoConnectionFields | undefined {
  return length === NO_CONNECTION_BODY_BYTES ? { sequence: readU16(b, at), crc: readU32(b, at + 2) } : undefined;
}

// ---- §5 REBIND_REQUEST / REBIND_CHALLENGE / REBIND_RESPONSE -------------------------------------

export type RebindType = PacketType.RebindRequest | PacketType.RebindChallenge | PacketType.RebindResponse;

/**
 * §5: type, sessionId and token of a REBIND packet; the proof over these REBIND_PROVEN_BYTES
 * follows with writeRebindProof. REQUEST: token = (counter, 0); CHALLENGE and RESPONSE:
 * token = (tag, counter). Returns the length before the CRC.
 */
export function encodeRebindFields(b: Uint8Array, at: number, type: RebindType, sessionId: number, tokenLow: number, tokenHigh: number): number {
  b[at] = type;
  writeU32(b, at + 1, sessionId);
  writeU32(b, at + 5, tokenLow);
  writeU32(b, at + 9, tokenHigh);
  return 1 + REBIND_BODY_BYTES;
}

/** §5: the proof field of the REBIND packet at `at`. */
export function writeRebindProof(b: Uint8Array, at: number, proof: number): void {
  writeU32(b, at + REBIND_PROVEN_BYTES, proof);
}

export interface RebindFields {
  sessionId: number;
  tokenLow: number;
  tokenHigh: number;
  /** The proof field as read (checked with rebindProofValid). */
  proof: number;
}

/** §5: a REBIND body. */
export function decodeRebind(b: Uint8Array, at: number, length: number): RebindFields | undefined {
  if (length !== REBIND_BODY_BYTES) return undefined;
  return { sessionId: readU32(b, at), tokenLow: readU32(b, at + 4), tokenHigh: readU32(b, at + 8), proof: readU32(b, at + 12) };
}

// ---- §7 NAT_PUNCH ----------------------------------------------------------------------------------

/** §7 NAT_PUNCH: type, then the 8-byte token. */
export function encodePunch(b: Uint8Array, at: number, token: Uint8Array): number {
  b[at] = PacketType.NatPunch;
  b.set(token.subarray(0, PUNCH_BODY_BYTES), at + 1);
  return 1 + PUNCH_BODY_BYTES;
}
