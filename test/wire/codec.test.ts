/**
 * src/wire against docs/PROTOCOL.md's tables: each encoder puts its fields at the offsets the
 * document gives, each decoder reads back what the encoder wrote and refuses a body of the
 * wrong length, and the migration and handshake state that the endpoint drives through
 * methods keeps PROTOCOL §4-5's rules.
 */
import { describe, expect, it } from "vitest";
import { DATA_OVERHEAD_BYTES, PacketType, SYSTEM_CHANNEL } from "../../src/engine/abi.js";
import { readF64, readU16, readU32, writeF64, writeU16, writeU32 } from "../../src/wire/bytes.js";
import {
  decodeAccept,
  decodeChallenge,
  decodeDeny,
  decodeDisconnect,
  decodeDisconnectAck,
  decodeNoConnection,
  decodeRebind,
  DenyCode,
  encodeDisconnect,
  encodeDisconnectAck,
  encodeNoConnection,
  encodePunch,
  encodeRebindFields,
  encodeRequest,
  encodeResponse,
  writeRebindProof,
} from "../../src/wire/control.js";
import { decodeRequest, decodeResponse, encodeAccept, encodeChallenge, encodeDeny } from "../../src/wire/control-server.js";
import { isAckOnly, readDataAck } from "../../src/wire/datagram.js";
import { frameHeaderBytes, writeFragmentFields, writeFrameLength, writeFrameStart, writeGapFrame, writeKeyField } from "../../src/wire/frame.js";
import {
  ACK_DELAY_DELAY_AT,
  ACK_DELAY_SEQUENCE_AT,
  CLOCK_REPLY_ECHO_AT,
  CLOCK_REPLY_SERVER_TIME_AT,
  encodeAckDelay,
  encodeAckFrequency,
  encodeClockReply,
  encodeClockRequest,
  encodePadding,
  encodeReceiveTime,
  RECEIVE_TIME_MICROS_AT,
  RECEIVE_TIME_SEQUENCE_AT,
  SYSTEM_ACK_DELAY,
  SYSTEM_ACK_FREQUENCY,
  SYSTEM_CLOCK_REPLY,
  SYSTEM_CLOCK_REQUEST,
  SYSTEM_PADDING,
  SYSTEM_RECEIVE_TIME,
  writeLateAckHead,
  writeLateAckRange,
} from "../../src/wire/system.js";
import { RebindCounters, REBIND_COUNTER_LEAD } from "../../src/session/rebind.js";
import { AcceptedResponse, MAX_HANDSHAKE_MOVES } from "../../src/session/server-handshake.js";

const USER = new Uint8Array([9, 8, 7]);

describe("little-endian fields", () => {
  it("round-trip at odd offsets, low byte first", () => {
    const b = new Uint8Array(16);
    writeU16(b, 1, 0xbeef);
    writeU32(b, 3, 0xdeadbeef);
    writeF64(b, 7, -1234.5);
    expect([b[1], b[2]]).toEqual([0xef, 0xbe]);
    expect([b[3], b[6]]).toEqual([0xef, 0xde]);
    expect(readU16(b, 1)).toBe(0xbeef);
    expect(readU32(b, 3)).toBe(0xdeadbeef);
    expect(readF64(b, 7)).toBe(-1234.5);
  });
});

describe("handshake and control packets (PROTOCOL §4, §5, §7)", () => {
  const b = new Uint8Array(600);
  const body = (n: number): [Uint8Array, number, number] => [b, 1, n - 1];

  it("CONNECT_REQUEST is 252 bytes before the CRC, zero-padded, and its padding is checked", () => {
    const n = encodeRequest(b, 0, 77, 0x01020304);
    expect(n).toBe(252);
    expect(b[0]).toBe(PacketType.ConnectRequest);
    expect(decodeRequest(...body(n))).toEqual({ wireVersion: 9, appVersion: 77, salt: 0x01020304 });
    b[200] = 1;
    expect(decodeRequest(...body(n))).toBeUndefined();
    expect(decodeRequest(b, 1, n - 2)).toBeUndefined();
  });

  it("CHALLENGE, RESPONSE and ACCEPT carry their fields where §4 puts them", () => {
    const cookie = new Uint8Array(16).map((_, i) => i + 1);
    let n = encodeChallenge(b, 0, 5, cookie);
    expect(n).toBe(21);
    expect(decodeChallenge(...body(n))).toEqual({ salt: 5, cookie });
    n = encodeResponse(b, 0, 5, cookie, 3, 0xd2abfbe9, USER);
    expect(n).toBe(37 + USER.length);
    expect(readU32(b, 27)).toBe(0xd2abfbe9);
    const res = decodeResponse(...body(n))!;
    expect(res).toMatchObject({ salt: 5, cookieAt: 5, wireVersion: 9, appVersion: 3, channelHash: 0xd2abfbe9, userData: USER });
    expect(decodeResponse(b, 1, n - 2)).toBeUndefined();
    n = encodeAccept(b, 0, 5, 0xcafe, USER);
    expect(n).toBe(11 + USER.length);
    expect(decodeAccept(...body(n))).toEqual({ salt: 5, sessionId: 0xcafe, userData: USER });
  });

  it("DENY and DISCONNECT share one body; their user data is bounded", () => {
    let n = encodeDeny(b, 0, 5, DenyCode.ChannelMismatch, USER);
    expect([b[0], b[5], readU16(b, 6)]).toEqual([PacketType.Deny, DenyCode.ChannelMismatch, USER.length]);
    expect(decodeDeny(...body(n))).toEqual({ salt: 5, reason: DenyCode.ChannelMismatch, userData: USER });
    n = encodeDisconnect(b, 0, 0xcafe, 64, new Uint8Array(513));
    expect(decodeDisconnect(...body(n))).toBeUndefined();
    n = encodeDisconnect(b, 0, 0xcafe, 64, USER);
    expect(decodeDisconnect(...body(n))).toEqual({ sessionId: 0xcafe, reason: 64, userData: USER });
    n = encodeDisconnectAck(b, 0, 0xcafe);
    expect(decodeDisconnectAck(...body(n))).toBe(0xcafe);
  });

  it("NO_CONNECTION echoes a sequence and a CRC; REBIND and NAT_PUNCH have fixed bodies", () => {
    let n = encodeNoConnection(b, 0, 0x1234, 0x89abcdef);
    expect(n).toBe(7);
    expect(decodeNoConnection(...body(n))).toEqual({ sequence: 0x1234, crc: 0x89abcdef });
    n = encodeRebindFields(b, 0, PacketType.RebindChallenge, 0xcafe, 11, 22);
    writeRebindProof(b, 0, 0x55aa55aa);
    expect(n).toBe(17);
    expect(decodeRebind(...body(n))).toEqual({ sessionId: 0xcafe, tokenLow: 11, tokenHigh: 22, proof: 0x55aa55aa });
    expect(decodeRebind(b, 1, 15)).toBeUndefined();
    const token = new Uint8Array(8).fill(3);
    expect(encodePunch(b, 0, token)).toBe(9);
    expect([...b.subarray(0, 9)]).toEqual([PacketType.NatPunch, ...token]);
  });
});

describe("system messages (PROTOCOL §3)", () => {
  const b = new Uint8Array(64);
  const header = (type: number, length: number): void => {
    expect([b[0], b[1], readU16(b, 2), readU16(b, 4), b[6]]).toEqual([SYSTEM_CHANNEL, 0, 0, length, type]);
  };

  it("each encoder writes channel 255, kind 0, seq 0, its length, its type, then its fields", () => {
    expect(encodeClockRequest(b, 0, 0xfffffffe)).toBe(11);
    header(SYSTEM_CLOCK_REQUEST, 5);
    expect(readU32(b, 7)).toBe(0xfffffffe);
    expect(encodeClockReply(b, 0, 42, 1e12 + 0.25)).toBe(19);
    header(SYSTEM_CLOCK_REPLY, 13);
    expect([readU32(b, 6 + CLOCK_REPLY_ECHO_AT), readF64(b, 6 + CLOCK_REPLY_SERVER_TIME_AT)]).toEqual([42, 1e12 + 0.25]);
    expect(encodeAckDelay(b, 0, 0xabcd, 12.37)).toBe(11);
    header(SYSTEM_ACK_DELAY, 5);
    expect([readU16(b, 6 + ACK_DELAY_SEQUENCE_AT), readU16(b, 6 + ACK_DELAY_DELAY_AT)]).toEqual([0xabcd, 123]);
    encodeAckDelay(b, 0, 1, 1e6);
    expect(readU16(b, 6 + ACK_DELAY_DELAY_AT)).toBe(0xffff); // saturates
    expect(encodeAckFrequency(b, 0, 200, 0x83)).toBe(9);
    header(SYSTEM_ACK_FREQUENCY, 3);
    expect([b[7], b[8]]).toEqual([200, 0x83]);
    expect(encodeReceiveTime(b, 0, 7, 4294967.2965)).toBe(13);
    header(SYSTEM_RECEIVE_TIME, 7);
    expect([readU16(b, 6 + RECEIVE_TIME_SEQUENCE_AT), readU32(b, 6 + RECEIVE_TIME_MICROS_AT)]).toEqual([7, 4294967296 % 2 ** 32]);
    b.fill(0xff);
    expect(encodePadding(b, 0, 40)).toBe(40);
    header(SYSTEM_PADDING, 34);
    expect(b.subarray(7, 40).every((x) => x === 0)).toBe(true);
    expect(b[40]).toBe(0xff);
  });

  it("a DATA packet whose frames are one LATE_ACK, then at most one ACK_DELAY, is ack-only", () => {
    const d = new Uint8Array(64);
    const frames = 9;
    writeLateAckRange(d, frames, 0, 100, 2);
    writeLateAckRange(d, frames, 1, 90, 0);
    const late = writeLateAckHead(d, frames, 2);
    expect(late).toBe(13);
    expect(isAckOnly(d, 0, DATA_OVERHEAD_BYTES + late)).toBe(true);
    const delay = encodeAckDelay(d, frames + late, 5, 3);
    expect(isAckOnly(d, 0, DATA_OVERHEAD_BYTES + late + delay)).toBe(true);
    encodeClockRequest(d, frames + late, 1);
    expect(isAckOnly(d, 0, DATA_OVERHEAD_BYTES + late + 11)).toBe(false);
    d[0] = 0x10;
    writeU16(d, 3, 0x4321);
    expect(readDataAck(d, 0)).toBe(0x4321);
    d[0] = 0;
    expect(readDataAck(d, 0)).toBe(-1);
  });
});

describe("channel frames (PROTOCOL §3)", () => {
  it("the header's optional fields come between messageSeq and length, sized by the flags", () => {
    const b = new Uint8Array(32);
    let p = writeFrameStart(b, 0, 3, 5 | 8, 0x1234);
    p = writeFragmentFields(b, p, 1, 2);
    p = writeKeyField(b, p, 0xa1b2c3d4);
    p = writeFrameLength(b, p, 300);
    expect(p).toBe(frameHeaderBytes(b[1]));
    expect(p).toBe(14);
    expect([...b.subarray(0, 14)]).toEqual([3, 13, 0x34, 0x12, 1, 0, 2, 0, 0xd4, 0xc3, 0xb2, 0xa1, 300 & 0xff, 300 >> 8]);
    expect(writeGapFrame(b, 0, 1, 3, 0xfffe, 4)).toBe(8);
    expect([...b.subarray(0, 8)]).toEqual([1, 3 | 0x10, 0xfe, 0xff, 2, 0, 4, 0]);
    expect(frameHeaderBytes(3)).toBe(6);
  });
});

describe("state the endpoint drives through methods", () => {
  it("REBIND counters: fresh requests within the lead, responses only above the last move", () => {
    const c = new RebindCounters();
    expect(c.requestFresh(0)).toBe(false); // never above a move of counter 0
    expect(c.requestFresh(1)).toBe(true);
    expect(c.requestFresh(REBIND_COUNTER_LEAD + 1)).toBe(false);
    c.requested(3);
    expect([c.requestFresh(2), c.requestFresh(3), c.requestFresh(3 + REBIND_COUNTER_LEAD)]).toEqual([false, true, true]);
    expect(c.responseFresh(2)).toBe(true);
    c.moved();
    expect([c.responseFresh(3), c.requestFresh(3), c.requestFresh(4)]).toEqual([false, false, true]);
    const client = new RebindCounters();
    expect([client.next(), client.next()]).toEqual([1, 2]);
  });

  it("an accepted RESPONSE: repeated only by the same contents, never back to an address it left", () => {
    const a = new AcceptedResponse({ appVersion: 1, channelHash: 2, userData: USER });
    expect(a.repeatedBy({ salt: 0, cookieAt: 0, wireVersion: 9, appVersion: 1, channelHash: 2, userData: USER.slice() })).toBe(true);
    expect(a.repeatedBy({ salt: 0, cookieAt: 0, wireVersion: 9, appVersion: 1, channelHash: 2, userData: new Uint8Array([9, 8]) })).toBe(false);
    a.leave("1.1.1.1:1");
    expect([a.mayMoveTo("1.1.1.1:1"), a.mayMoveTo("2.2.2.2:2")]).toEqual([false, true]);
    for (let i = 1; i < MAX_HANDSHAKE_MOVES; i++) a.leave(`3.3.3.${i}:1`);
    expect(a.mayMoveTo("2.2.2.2:2")).toBe(false);
  });
});
