// An encoder and decoder of ackwire datagrams written from docs/PROTOCOL.md alone: it imports
// nothing of the project, so the conformance test checks the document, not the codec against
// itself. Section numbers are PROTOCOL.md's.

// ---- §1: CRC-32C (Castagnoli, reflected 0x82F63B78, init and final xor 0xFFFFFFFF) -----------

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32c(...parts: Uint8Array[]): number {
  let crc = 0xffffffff;
  for (const part of parts) for (const byte of part) crc = CRC_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

// ---- little-endian fields ---------------------------------------------------------------------

export class Writer {
  private readonly bytes: number[] = [];
  u8(v: number): this {
    this.bytes.push(v & 0xff);
    return this;
  }
  u16(v: number): this {
    return this.u8(v).u8(v >>> 8);
  }
  u32(v: number): this {
    return this.u16(v & 0xffff).u16(v >>> 16);
  }
  raw(b: Uint8Array): this {
    for (const x of b) this.bytes.push(x);
    return this;
  }
  zeros(n: number): this {
    for (let i = 0; i < n; i++) this.bytes.push(0);
    return this;
  }
  finish(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

export const u16At = (b: Uint8Array, at: number): number => b[at] | (b[at + 1] << 8);
export const u32At = (b: Uint8Array, at: number): number => (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0;

// ---- §1: prefixes and sealing -----------------------------------------------------------------

export const Type = {
  Data: 0,
  ConnectRequest: 1,
  Challenge: 2,
  ConnectResponse: 3,
  Accept: 4,
  Deny: 5,
  Disconnect: 6,
  DisconnectAck: 7,
  NoConnection: 8,
  Keepalive: 9,
  RebindRequest: 10,
  RebindChallenge: 11,
  RebindResponse: 12,
  NatPunch: 13,
} as const;
export const ACKS_VALID = 0x10;

export function protocolPrefix(protocolId: number): Uint8Array {
  return new Writer().u32(0x776b6361).u32(protocolId).finish();
}

export function connectionPrefix(protocolId: number, clientSalt: number, sessionId: number): Uint8Array {
  return new Writer().raw(protocolPrefix(protocolId)).u32(clientSalt).u32(sessionId).finish();
}

/** The datagram: `body` (type byte first) followed by CRC-32C over prefix || body. */
export function seal(prefix: Uint8Array, body: Uint8Array): Uint8Array {
  return new Writer().raw(body).u32(crc32c(prefix, body)).finish();
}

/** The datagram's bytes before its CRC if the CRC matches under `prefix`, else undefined. */
export function open(prefix: Uint8Array, datagram: Uint8Array): Uint8Array | undefined {
  if (datagram.length < 5) return undefined;
  const body = datagram.subarray(0, datagram.length - 4);
  return crc32c(prefix, body) === u32At(datagram, datagram.length - 4) ? body : undefined;
}

// ---- §4: handshake ----------------------------------------------------------------------------

export function connectRequest(wireVersion: number, appVersion: number, clientSalt: number): Uint8Array {
  return new Writer().u8(Type.ConnectRequest).u16(wireVersion).u32(appVersion).u32(clientSalt).zeros(241).finish();
}

export function connectResponse(
  clientSalt: number,
  cookie: Uint8Array,
  wireVersion: number,
  appVersion: number,
  channelConfigHash: number,
  userData: Uint8Array,
): Uint8Array {
  return new Writer()
    .u8(Type.ConnectResponse)
    .u32(clientSalt)
    .raw(cookie)
    .u16(wireVersion)
    .u32(appVersion)
    .u32(channelConfigHash)
    .u32(0)
    .u16(userData.length)
    .raw(userData)
    .finish();
}

/** §4: FNV-1a (32-bit) over the channel count as one byte, then each channel's kind as one byte. */
export function channelConfigHash(kinds: readonly number[]): number {
  let h = 0x811c9dc5;
  for (const byte of [kinds.length, ...kinds]) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h;
}

export function disconnect(sessionId: number, reason: number, userData: Uint8Array): Uint8Array {
  return new Writer().u8(Type.Disconnect).u32(sessionId).u8(reason).u16(userData.length).raw(userData).finish();
}

export function disconnectAck(sessionId: number): Uint8Array {
  return new Writer().u8(Type.DisconnectAck).u32(sessionId).finish();
}

export type Control =
  | { type: "CHALLENGE"; clientSalt: number; cookie: Uint8Array }
  | { type: "ACCEPT"; clientSalt: number; sessionId: number; userData: Uint8Array }
  | { type: "DENY"; clientSalt: number; reason: number; userData: Uint8Array }
  | { type: "DISCONNECT"; sessionId: number; reason: number; userData: Uint8Array }
  | { type: "DISCONNECT_ACK"; sessionId: number }
  | { type: "NO_CONNECTION"; sequence: number; crc: number };

/** A control datagram (types 1-8, protocol prefix) decoded by §4's tables, or a reason it is not one. */
export function decodeControl(protocolId: number, datagram: Uint8Array): Control | string {
  const type = datagram[0];
  const body = open(protocolPrefix(protocolId), datagram);
  if (body === undefined) return `type ${type}: bad CRC under the protocol prefix`;
  const n = body.length - 1; // body length after the type byte
  const withUserData = (fixed: number, lengthAt: number, max: number): Uint8Array | string => {
    const length = u16At(body, lengthAt);
    if (length > max || n !== fixed + length) return `type ${type}: body ${n} bytes, userDataLength ${length}`;
    return body.slice(lengthAt + 2);
  };
  switch (type) {
    case Type.Challenge:
      if (n !== 20) return `CHALLENGE body ${n} bytes`;
      return { type: "CHALLENGE", clientSalt: u32At(body, 1), cookie: body.slice(5, 21) };
    case Type.Accept: {
      const userData = withUserData(10, 9, 512);
      if (typeof userData === "string") return userData;
      return { type: "ACCEPT", clientSalt: u32At(body, 1), sessionId: u32At(body, 5), userData };
    }
    case Type.Deny: {
      const userData = withUserData(7, 6, 200);
      if (typeof userData === "string") return userData;
      return { type: "DENY", clientSalt: u32At(body, 1), reason: body[5], userData };
    }
    case Type.Disconnect: {
      const userData = withUserData(7, 6, 512);
      if (typeof userData === "string") return userData;
      return { type: "DISCONNECT", sessionId: u32At(body, 1), reason: body[5], userData };
    }
    case Type.DisconnectAck:
      return n === 4 ? { type: "DISCONNECT_ACK", sessionId: u32At(body, 1) } : `DISCONNECT_ACK body ${n} bytes`;
    case Type.NoConnection:
      return n === 6 ? { type: "NO_CONNECTION", sequence: u16At(body, 1), crc: u32At(body, 3) } : `NO_CONNECTION body ${n} bytes`;
    default:
      return `type ${type} is not a handshake reply`;
  }
}

// ---- §2, §3: DATA and KEEPALIVE ---------------------------------------------------------------

export const Kind = {
  Unreliable: 0,
  UnreliableSequenced: 1,
  ReliableUnordered: 2,
  ReliableOrdered: 3,
  ReliableSequenced: 4,
  LatestState: 5,
} as const;
export const FRAGMENT = 0x08;
/** §3: a ReliableOrdered frame whose u16 payload is a count of message sequences to skip. */
export const GAP = 0x10;
export const SYSTEM_CHANNEL = 255;
export const System = { ClockRequest: 1, ClockReply: 2, AckDelay: 3, Padding: 4, AckFrequency: 5, ReceiveTime: 6, Parity: 7, LateAck: 8 } as const;

export interface Frame {
  channel: number;
  kind: number;
  messageSeq: number;
  fragment?: { index: number; count: number };
  /** §3 GAP: `payload` is a u16 count of sequences from `messageSeq` on that will never come. */
  gap?: boolean;
  key?: number;
  payload: Uint8Array;
}

export interface Header {
  type: number; // 0 DATA or 9 KEEPALIVE
  acksValid: boolean;
  sequence: number;
  ack: number;
  ackBits: number;
}

export function encodeFrame(f: Frame): Uint8Array {
  const w = new Writer().u8(f.channel).u8(f.kind | (f.fragment ? FRAGMENT : 0) | (f.gap ? GAP : 0)).u16(f.messageSeq);
  if (f.fragment) w.u16(f.fragment.index).u16(f.fragment.count);
  if (f.kind === Kind.LatestState) w.u32(f.key ?? 0);
  return w.u16(f.payload.length).raw(f.payload).finish();
}

/** A DATA (frames, or a 2-byte ackDelay for a pure ack) or KEEPALIVE (no frames) body, unsealed. */
export function dataBody(h: Header, frames: Uint8Array[] | { ackDelay: number }): Uint8Array {
  const w = new Writer()
    .u8(h.type | (h.acksValid ? ACKS_VALID : 0))
    .u16(h.sequence)
    .u16(h.acksValid ? h.ack : 0)
    .u32(h.acksValid ? h.ackBits : 0);
  if (Array.isArray(frames)) for (const f of frames) w.raw(f);
  else w.u16(frames.ackDelay);
  return w.finish();
}

export interface Data {
  header: Header;
  /** Frames in order; empty for KEEPALIVE and pure acks. */
  frames: Frame[];
  /** A 15-byte pure ack's ackDelay (0.1 ms units). */
  ackDelay?: number;
  /** The datagram's CRC field (NO_CONNECTION echoes it). */
  crc: number;
}

/** A DATA/KEEPALIVE datagram checked under the connection prefix and decoded by §2 and §3. */
export function decodeData(prefix: Uint8Array, datagram: Uint8Array): Data | string {
  const body = open(prefix, datagram);
  if (body === undefined) return `type ${datagram[0]}: bad CRC under the connection prefix`;
  const type = body[0] & 0x0f;
  if ((body[0] & 0xe0) !== 0 || (type !== Type.Data && type !== Type.Keepalive)) return `type byte ${body[0]}`;
  if (body.length < 9) return `DATA/KEEPALIVE of ${datagram.length} bytes`;
  const header: Header = { type, acksValid: (body[0] & ACKS_VALID) !== 0, sequence: u16At(body, 1), ack: u16At(body, 3), ackBits: u32At(body, 5) };
  const crc = u32At(datagram, datagram.length - 4);
  if (type === Type.Keepalive) return body.length === 9 ? { header, frames: [], crc } : `KEEPALIVE body ${body.length - 1} bytes`;
  if (body.length === 11) return { header, frames: [], ackDelay: u16At(body, 9), crc };
  const frames: Frame[] = [];
  let p = 9;
  while (p < body.length) {
    if (p + 6 > body.length) return `frame header runs past the end at ${p}`;
    const channel = body[p];
    const flags = body[p + 1];
    if ((flags & 0xe0) !== 0) return `reserved flag bits ${flags}`;
    const frame: Frame = { channel, kind: flags & 0x07, messageSeq: u16At(body, p + 2), payload: new Uint8Array(0) };
    if (flags & GAP) frame.gap = true;
    p += 4;
    if (flags & FRAGMENT) {
      frame.fragment = { index: u16At(body, p), count: u16At(body, p + 2) };
      p += 4;
    }
    if (frame.kind === Kind.LatestState) {
      frame.key = u32At(body, p);
      p += 4;
    }
    if (p + 2 > body.length) return `frame length runs past the end at ${p}`;
    const length = u16At(body, p);
    p += 2;
    if (p + length > body.length) return `payload of ${length} runs past the end at ${p}`;
    frame.payload = body.slice(p, p + length);
    p += length;
    frames.push(frame);
  }
  return { header, frames, crc };
}

/** §2: `a` is newer than `b`. */
export const newer = (a: number, b: number): boolean => {
  const d = (a - b) & 0xffff;
  return d >= 1 && d <= 32767;
};
