/**
 * The server's half of the handshake codec (docs/PROTOCOL.md §4): the CONNECT_REQUEST and
 * CONNECT_RESPONSE it reads, the CHALLENGE, ACCEPT and DENY it writes. Conventions as in
 * ./control.ts.
 */
import { PacketType } from "../engine/abi.js";
import { readU16, readU32, writeU16, writeU32 } from "./bytes.js";
import {
  ACCEPT_FIXED_BYTES,
  CHALLENGE_BODY_BYTES,
  COOKIE_BYTES,
  encodeIdReasonData,
  MAX_RESPONSE_USER_DATA,
  REQUEST_BODY_BYTES,
  RESPONSE_FIXED_BYTES,
  type DenyCode,
} from "./control.js";

/** §4 CHALLENGE. */
export function encodeChallenge(b: Uint8Array, at: number, salt: number, cookie: Uint8Array): number {
  b[at] = PacketType.Challenge;
  writeU32(b, at + 1, salt);
  b.set(cookie.subarray(0, COOKIE_BYTES), at + 5);
  return 1 + CHALLENGE_BODY_BYTES;
}

/** §4 ACCEPT. */
export function encodeAccept(b: Uint8Array, at: number, salt: number, sessionId: number, userData: Uint8Array): number {
  b[at] = PacketType.Accept;
  writeU32(b, at + 1, salt);
  writeU32(b, at + 5, sessionId);
  writeU16(b, at + 9, userData.length);
  b.set(userData, at + 11);
  return 1 + ACCEPT_FIXED_BYTES + userData.length;
}

/** §4 DENY. */
export function encodeDeny(b: Uint8Array, at: number, salt: number, reason: DenyCode, userData: Uint8Array): number {
  return encodeIdReasonData(b, at, PacketType.Deny, salt, reason, userData);
}

export interface RequestFields {
  wireVersion: number;
  appVersion: number;
  salt: number;
}

/** §4 CONNECT_REQUEST; undefined if its padding is not zero. */
export function decodeRequest(b: Uint8Array, at: number, length: number): RequestFields | undefined {
  if (length !== REQUEST_BODY_BYTES) return undefined;
  for (let i = at + 10; i < at + length; i++) if (b[i] !== 0) return undefined;
  return { wireVersion: readU16(b, at), appVersion: readU32(b, at + 2), salt: readU32(b, at + 6) };
}

export interface ResponseFields {
  salt: number;
  /** Offset of the 16 cookie bytes in `b` (not copied: checked in place). */
  cookieAt: number;
  wireVersion: number;
  appVersion: number;
  channelHash: number;
  userData: Uint8Array;
}

/** §4 CONNECT_RESPONSE. */
export function decodeResponse(b: Uint8Array, at: number, length: number): ResponseFields | undefined {
  if (length < RESPONSE_FIXED_BYTES) return undefined;
  const userLength = readU16(b, at + 34);
  if (userLength > MAX_RESPONSE_USER_DATA || RESPONSE_FIXED_BYTES + userLength !== length) return undefined;
  return {
    salt: readU32(b, at),
    cookieAt: at + 4,
    wireVersion: readU16(b, at + 20),
    appVersion: readU32(b, at + 22),
    channelHash: readU32(b, at + 26),
    userData: b.slice(at + 36, at + 36 + userLength),
  };
}
