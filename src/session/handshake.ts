/**
 * The connection handshake, docs/PROTOCOL.md §4, in one file:
 *
 *   client                                   server
 *   CONNECT_REQUEST (256 B, salt) ---------> (rate limit; versions) no state kept
 *            <----------------------------- CHALLENGE (25 B): salt, cookie
 *   CONNECT_RESPONSE (salt, cookie, ...) --> cookie checked for this and the previous window;
 *                                            versions, channel hash, limits, accept hook;
 *                                            only now a connection slot is allocated
 *            <----------------------------- ACCEPT (sessionId, userData) or DENY (reason)
 *
 * cookie = SipHash-2-4-128(secret, address || clientSalt || window), window = floor(now / W).
 * The secret is drawn from the endpoint's secret (EndpointConfig.secret). Nothing about an address is stored before a
 * response carrying a cookie only that address could have received (anti-spoofing), and every
 * reply to an unvalidated address is smaller than the request it answers (anti-amplification:
 * the request is padded to 256 bytes, a CHALLENGE is 25 and a DENY without user data 12).
 *
 * Encoders write the type byte and body at `at` in the given buffer and return the length
 * before the CRC (the caller seals it with `engine.sealControl`). Parsers read a body (after the
 * type byte, before the CRC) whose length the engine already checked against §1's table; they
 * still bounds-check everything they read and return undefined on anything malformed.
 */
import { CONNECTION_KEY_BYTES, PacketType, WIRE_VERSION } from "../engine/abi.js";
import { addressBytes } from "./address.js";
import { cookiesEqual, sipHash128, type SipKey } from "./cookie.js";
import type { Address, DenyReason } from "./types.js";

export const REQUEST_BODY_BYTES = 251;
export const CHALLENGE_BODY_BYTES = 20;
export const RESPONSE_FIXED_BYTES = 36;
export const ACCEPT_FIXED_BYTES = 10;
/** DENY and DISCONNECT body before the user data: u32 id, u8 reason, u16 length. */
export const ID_REASON_FIXED_BYTES = 7;
export const MAX_RESPONSE_USER_DATA = 512;
export const MAX_ACCEPT_USER_DATA = 512;
export const MAX_DENY_USER_DATA = 200;
export const MAX_DISCONNECT_USER_DATA = 512;
export const COOKIE_BYTES = 16;

export const enum DenyCode {
  ServerFull = 1,
  VersionMismatch = 2,
  ChannelMismatch = 3,
  Refused = 4,
  RateLimited = 5,
}

const DENY_NAMES: Record<number, DenyReason> = {
  1: "server-full",
  2: "version-mismatch",
  3: "channel-mismatch",
  4: "refused",
  5: "rate-limited",
};

export function denyReasonName(code: number): DenyReason {
  return DENY_NAMES[code] ?? "refused";
}

// ---- little-endian helpers over a byte array (bounds are the caller's, checked once per packet)

export function readU16(b: Uint8Array, at: number): number {
  return b[at] | (b[at + 1] << 8);
}
export function readU32(b: Uint8Array, at: number): number {
  return (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0;
}
export function writeU16(b: Uint8Array, at: number, v: number): void {
  b[at] = v;
  b[at + 1] = v >>> 8;
}
export function writeU32(b: Uint8Array, at: number, v: number): void {
  b[at] = v;
  b[at + 1] = v >>> 8;
  b[at + 2] = v >>> 16;
  b[at + 3] = v >>> 24;
}

// ---- encoders -------------------------------------------------------------------------------

export function encodeRequest(b: Uint8Array, at: number, appVersion: number, salt: number): number {
  b[at] = PacketType.ConnectRequest;
  writeU16(b, at + 1, WIRE_VERSION);
  writeU32(b, at + 3, appVersion);
  writeU32(b, at + 7, salt);
  b.fill(0, at + 11, at + 1 + REQUEST_BODY_BYTES); // padding: the anti-amplification margin
  return 1 + REQUEST_BODY_BYTES;
}

export function encodeChallenge(b: Uint8Array, at: number, salt: number, cookie: Uint8Array): number {
  b[at] = PacketType.Challenge;
  writeU32(b, at + 1, salt);
  b.set(cookie.subarray(0, COOKIE_BYTES), at + 5);
  return 1 + CHALLENGE_BODY_BYTES;
}

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

export function encodeAccept(b: Uint8Array, at: number, salt: number, sessionId: number, userData: Uint8Array): number {
  b[at] = PacketType.Accept;
  writeU32(b, at + 1, salt);
  writeU32(b, at + 5, sessionId);
  writeU16(b, at + 9, userData.length);
  b.set(userData, at + 11);
  return 1 + ACCEPT_FIXED_BYTES + userData.length;
}

/** DENY and DISCONNECT share one body layout (PROTOCOL §4): u32 id, u8 reason, u16 length,
 *  user data. The id is the client's salt (DENY) or the session id (DISCONNECT). */
function encodeIdReasonData(b: Uint8Array, at: number, type: PacketType, id: number, reason: number, userData: Uint8Array): number {
  b[at] = type;
  writeU32(b, at + 1, id);
  b[at + 5] = reason;
  writeU16(b, at + 6, userData.length);
  b.set(userData, at + 8);
  return 1 + ID_REASON_FIXED_BYTES + userData.length;
}

export function encodeDeny(b: Uint8Array, at: number, salt: number, reason: DenyCode, userData: Uint8Array): number {
  return encodeIdReasonData(b, at, PacketType.Deny, salt, reason, userData);
}

export function encodeDisconnect(b: Uint8Array, at: number, sessionId: number, reason: number, userData: Uint8Array): number {
  return encodeIdReasonData(b, at, PacketType.Disconnect, sessionId, reason, userData);
}

export function encodeDisconnectAck(b: Uint8Array, at: number, sessionId: number): number {
  b[at] = PacketType.DisconnectAck;
  writeU32(b, at + 1, sessionId);
  return 5;
}

/** NO_CONNECTION echoing the sequence and CRC field of the DATA/KEEPALIVE it answers (§4). */
export function encodeNoConnection(b: Uint8Array, at: number, sequence: number, crc: number): number {
  b[at] = PacketType.NoConnection;
  writeU16(b, at + 1, sequence);
  writeU32(b, at + 3, crc);
  return 7;
}

// ---- parsers (body = bytes after the type byte, before the CRC) --------------------------------

export interface RequestFields {
  wireVersion: number;
  appVersion: number;
  salt: number;
}

export function parseRequest(b: Uint8Array, at: number, length: number): RequestFields | undefined {
  if (length !== REQUEST_BODY_BYTES) return undefined;
  for (let i = at + 10; i < at + length; i++) if (b[i] !== 0) return undefined; // padding must be zero
  return { wireVersion: readU16(b, at), appVersion: readU32(b, at + 2), salt: readU32(b, at + 6) };
}

export interface ChallengeFields {
  salt: number;
  cookie: Uint8Array;
}

export function parseChallenge(b: Uint8Array, at: number, length: number): ChallengeFields | undefined {
  if (length !== CHALLENGE_BODY_BYTES) return undefined;
  return { salt: readU32(b, at), cookie: b.slice(at + 4, at + 4 + COOKIE_BYTES) };
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

export function parseResponse(b: Uint8Array, at: number, length: number): ResponseFields | undefined {
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

/**
 * A server connection's CONNECT_RESPONSE as accepted, kept until the first packet of its
 * session arrives: a RESPONSE from another address that repeats it is the same attempt, whose
 * client moved after its RESPONSE left (the endpoint's acceptedElsewhere). `left`: the
 * addresses the connection was moved away from, which never get it back.
 */
export interface AcceptedResponse {
  appVersion: number;
  channelHash: number;
  userData: Uint8Array;
  left: string[];
}

/** Whether a RESPONSE repeats the accepted one (the same attempt of the same client). */
export function sameResponse(accepted: AcceptedResponse, res: ResponseFields): boolean {
  if (res.appVersion !== accepted.appVersion || res.channelHash !== accepted.channelHash) return false;
  const a = accepted.userData;
  const b = res.userData;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export interface AcceptFields {
  salt: number;
  sessionId: number;
  userData: Uint8Array;
}

export function parseAccept(b: Uint8Array, at: number, length: number): AcceptFields | undefined {
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
function parseIdReasonData(b: Uint8Array, at: number, length: number, maxUserData: number): { id: number; reason: number; userData: Uint8Array } | undefined {
  if (length < ID_REASON_FIXED_BYTES) return undefined;
  const userLength = readU16(b, at + 5);
  if (userLength > maxUserData || ID_REASON_FIXED_BYTES + userLength !== length) return undefined;
  return { id: readU32(b, at), reason: b[at + 4], userData: b.slice(at + 7, at + 7 + userLength) };
}

export function parseDeny(b: Uint8Array, at: number, length: number): DenyFields | undefined {
  const f = parseIdReasonData(b, at, length, MAX_DENY_USER_DATA);
  return f && { salt: f.id, reason: f.reason, userData: f.userData };
}

export interface DisconnectFields {
  sessionId: number;
  reason: number;
  userData: Uint8Array;
}

export function parseDisconnect(b: Uint8Array, at: number, length: number): DisconnectFields | undefined {
  const f = parseIdReasonData(b, at, length, MAX_DISCONNECT_USER_DATA);
  return f && { sessionId: f.id, reason: f.reason, userData: f.userData };
}

export function parseDisconnectAck(b: Uint8Array, at: number, length: number): number | undefined {
  return length === 4 ? readU32(b, at) : undefined;
}

export interface NoConnectionFields {
  /** Sequence and CRC field of the packet it answers: ours, if the NO_CONNECTION is genuine. */
  sequence: number;
  crc: number;
}

export function parseNoConnection(b: Uint8Array, at: number, length: number): NoConnectionFields | undefined {
  return length === 6 ? { sequence: readU16(b, at), crc: readU32(b, at + 2) } : undefined;
}

/**
 * A connection's key (PROTOCOL §1): the client's salt (random, in its requests) and the session
 * id (random, in the server's ACCEPT), which only the two ends have seen. Joined to the CRC
 * prefix of the connection's DATA and KEEPALIVE packets, so that a sender that saw neither
 * cannot make a packet the connection accepts. (Not the cookie: a client may switch cookies
 * when a late CHALLENGE from a new window arrives after the server accepted the old one.)
 */
export function connectionKey(salt: number, sessionId: number): Uint8Array {
  const key = new Uint8Array(CONNECTION_KEY_BYTES);
  writeU32(key, 0, salt);
  writeU32(key, 4, sessionId);
  return key;
}

// ---- the server's stateless cookie ------------------------------------------------------------

/**
 * Mints and checks cookies. Holds only the secret and scratch space: no per-address state.
 */
export class CookieJar {
  private readonly scratch = new Uint8Array(320);
  private readonly out = new Uint8Array(COOKIE_BYTES);

  constructor(
    private readonly secret: SipKey,
    /** Length of one time window in ms (PROTOCOL §4: default 10 s). */
    readonly windowMs: number,
  ) {}

  /** The cookie for (address, salt) in the window containing `now` (or `windowOffset` windows earlier). */
  mint(now: number, address: Address, salt: number, windowOffset = 0): Uint8Array {
    const window = (Math.floor(now / this.windowMs) - windowOffset) >>> 0;
    const n = addressBytes(address, this.scratch, 0);
    writeU32(this.scratch, n, salt);
    writeU32(this.scratch, n + 4, window);
    sipHash128(this.secret, this.scratch, 0, n + 8, this.out, 0);
    return this.out;
  }

  /** True if the cookie at `b[at..at+16)` is valid for the current or the previous window. */
  check(now: number, address: Address, salt: number, b: Uint8Array, at: number): boolean {
    if (cookiesEqual(this.mint(now, address, salt, 0), 0, b, at)) return true;
    return cookiesEqual(this.mint(now, address, salt, 1), 0, b, at);
  }
}

// ---- the client's attempt ----------------------------------------------------------------------

export const enum AttemptPhase {
  /** Sending CONNECT_REQUEST until a CHALLENGE arrives. */
  Request = 0,
  /** Sending CONNECT_RESPONSE until ACCEPT or DENY. */
  Response = 1,
}

/**
 * Client-side handshake state. Resends with exponential backoff (initial, x2, capped) until
 * the connection's connect timeout; the connection owns the timers.
 */
export class ClientAttempt {
  phase = AttemptPhase.Request;
  cookie: Uint8Array | undefined;
  sends = 0;
  /** When the next (re)send is due. */
  nextSendAt: number;
  /** When the current phase's first packet left (NaN before it). */
  firstSentAt = NaN;
  /**
   * The round trip of a request sent once and answered by a CHALLENGE, or NaN. A resent
   * request's answer cannot say which copy it answers (Karn), so that one is not timed.
   */
  challengeRttMs = NaN;

  constructor(
    readonly salt: number,
    readonly userData: Uint8Array,
    now: number,
    private readonly initialResendMs: number,
    private readonly maxResendMs: number,
  ) {
    this.nextSendAt = now;
  }

  /** A CHALLENGE for this attempt arrived: switch to sending responses, at once. */
  onChallenge(now: number, fields: ChallengeFields): boolean {
    if (fields.salt !== this.salt) return false;
    if (this.phase === AttemptPhase.Response && this.cookie !== undefined && cookiesEqual(this.cookie, 0, fields.cookie, 0)) {
      return false; // a duplicate: the response already went out
    }
    if (this.phase === AttemptPhase.Request && this.sends === 1) this.challengeRttMs = now - this.firstSentAt;
    this.phase = AttemptPhase.Response;
    this.cookie = fields.cookie;
    this.sends = 0;
    this.nextSendAt = now;
    return true;
  }

  /** Call after each send: schedules the next one with backoff. */
  onSent(now: number): void {
    const delay = Math.min(this.maxResendMs, this.initialResendMs * 2 ** Math.min(this.sends, 16));
    if (this.sends === 0) this.firstSentAt = now;
    this.sends++;
    this.nextSendAt = now + delay;
  }

  /**
   * The handshake's RTT sample when the ACCEPT arrives at `now` (RFC 9002 §5.2: the first
   * sample may come from the handshake): the request's round trip, or else the response's if it
   * was sent once; NaN if every packet was resent. The request's is preferred: the server
   * answers it statelessly at once, while a response waits for the application's accept hook.
   */
  rttSampleOnAccept(now: number): number {
    if (!Number.isNaN(this.challengeRttMs)) return this.challengeRttMs;
    return this.phase === AttemptPhase.Response && this.sends === 1 ? now - this.firstSentAt : NaN;
  }

  /** Write the packet due now; returns the length before the CRC. */
  encode(b: Uint8Array, at: number, appVersion: number, channelHash: number): number {
    if (this.phase === AttemptPhase.Request || this.cookie === undefined) return encodeRequest(b, at, appVersion, this.salt);
    return encodeResponse(b, at, this.salt, this.cookie, appVersion, channelHash, this.userData);
  }
}
