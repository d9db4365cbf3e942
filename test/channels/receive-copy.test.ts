/**
 * The receive copy (src/channels/receive-copy.ts): the unfragmented messages of one datagram
 * share one buffer of their own, each copied only when its own record is handled, and a
 * delivered message never depends on the arena afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RECORD_INTS, RecordField, RecordType } from "../../src/engine/abi.js";
import { ChannelSet, type ChannelOptions } from "../../src/channels/index.js";
import { setOwnSmallCopies } from "../../src/channels/own-copies.js";
import { drainMessages } from "./harness.js";

// These tests are about the shared per-datagram buffer, the V8 strategy; under Bun the channels
// give each message its own buffer (own-copies.ts, tested in receive-copy-own.test.ts).
let previousStrategy = false;
beforeAll(() => {
  previousStrategy = setOwnSmallCopies(false);
});
afterAll(() => {
  setOwnSmallCopies(previousStrategy);
});

const make = (channels: ChannelOptions[]) => new ChannelSet({ channels, mtu: 1200, maxReceiveBufferBytes: 1 << 20 });

interface Rec {
  type?: RecordType;
  slot?: number;
  channel: number;
  seq: number;
  offset: number;
  length: number;
  fragInfo?: number;
}
function recordsOf(list: Rec[], capacity = 16): Int32Array {
  const r = new Int32Array(capacity * RECORD_INTS);
  list.forEach((x, i) => {
    const p = i * RECORD_INTS;
    r[p + RecordField.Type] = x.type ?? RecordType.Message;
    r[p + RecordField.Slot] = x.slot ?? 0;
    r[p + RecordField.A] = x.channel;
    r[p + RecordField.B] = x.seq;
    r[p + RecordField.C] = x.fragInfo ?? 0;
    r[p + RecordField.Offset] = x.offset;
    r[p + RecordField.Length] = x.length;
  });
  return r;
}
function arenaWith(parts: [number, number[]][]): Uint8Array {
  const a = new Uint8Array(4096);
  for (const [at, bytes] of parts) a.set(bytes, at);
  return a;
}

describe("receive copy", () => {
  it("messages of one datagram share one exact buffer and outlive the arena", () => {
    const cs = make([{ mode: "reliable-ordered" }, { mode: "unreliable" }]);
    const arena = arenaWith([
      [106, [1, 2, 3]],
      [115, [4, 5]],
      [123, [6, 7, 8, 9]],
    ]);
    const records = recordsOf([
      { channel: 0, seq: 0, offset: 106, length: 3 },
      { channel: 1, seq: 0, offset: 115, length: 2 },
      { channel: 0, seq: 1, offset: 123, length: 4 },
    ]);
    for (let i = 0; i < 3; i++) cs.onRecord(0, records, i * RECORD_INTS, arena);
    arena.fill(0xee); // the engine reuses its arena
    const got = drainMessages(cs);
    expect(got.map((m) => [m.channel, Array.from(m.data)])).toEqual([
      [0, [1, 2, 3]],
      [1, [4, 5]],
      [0, [6, 7, 8, 9]],
    ]);
    const buffer = got[0].data.buffer;
    expect(got.every((m) => m.data.buffer === buffer)).toBe(true);
    expect(buffer.byteLength).toBe(9);
    expect(got.map((m) => m.data.byteOffset)).toEqual([0, 3, 5]);
  });

  it("a run ends at another connection, a fragment, or a record that is not a message", () => {
    const cs = make([{ mode: "unreliable" }]);
    const arena = arenaWith([
      [10, [1]],
      [20, [2]],
      [30, [3]],
    ]);
    // Record 1 belongs to another slot: record 0 is copied alone.
    const records = recordsOf([
      { channel: 0, seq: 0, offset: 10, length: 1 },
      { slot: 1, channel: 0, seq: 1, offset: 20, length: 1 },
      { channel: 0, seq: 2, offset: 30, length: 1 },
    ]);
    cs.onRecord(0, records, 0, arena);
    cs.onRecord(0, records, 2 * RECORD_INTS, arena);
    const got = drainMessages(cs);
    expect(got.map((m) => Array.from(m.data))).toEqual([[1], [3]]);
    expect(got[0].data.buffer.byteLength).toBe(1);
    expect(got[1].data.buffer.byteLength).toBe(1);
  });

  it("records past the batch only leave unused zero bytes; a skipped record leaves its share unused", () => {
    const cs = make([{ mode: "unreliable" }]);
    const arena = arenaWith([
      [10, [1, 1]],
      [20, [2, 2]],
      [30, [3, 3]],
    ]);
    const records = recordsOf([
      { channel: 0, seq: 0, offset: 10, length: 2 },
      { channel: 0, seq: 1, offset: 20, length: 2 },
      { channel: 0, seq: 2, offset: 30, length: 2 }, // never handed over
    ]);
    cs.onRecord(0, records, 0, arena);
    cs.onRecord(0, records, RECORD_INTS, arena);
    const got = drainMessages(cs);
    expect(got.map((m) => Array.from(m.data))).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect(Array.from(new Uint8Array(got[0].data.buffer))).toEqual([1, 1, 2, 2, 0, 0]);

    // Record 1 dropped as a duplicate of seq 0: record 2 still takes the next part of the run.
    const dup = recordsOf([
      { channel: 0, seq: 5, offset: 10, length: 2 },
      { channel: 0, seq: 5, offset: 20, length: 2 },
      { channel: 0, seq: 6, offset: 30, length: 2 },
    ]);
    for (let i = 0; i < 3; i++) cs.onRecord(0, dup, i * RECORD_INTS, arena);
    const again = drainMessages(cs);
    expect(again.map((m) => Array.from(m.data))).toEqual([
      [1, 1],
      [3, 3],
    ]);
    expect(Array.from(new Uint8Array(again[1].data.buffer))).toEqual([1, 1, 3, 3, 0, 0]);
    expect(cs.stats().duplicates).toBe(1);
  });

  it("held reliable-ordered messages are copied into the run too and released in order", () => {
    const cs = make([{ mode: "reliable-ordered" }]);
    const arena = arenaWith([
      [10, [2]],
      [20, [3]],
    ]);
    const records = recordsOf([
      { type: RecordType.Hold, channel: 0, seq: 1, offset: 10, length: 1 },
      { type: RecordType.Hold, channel: 0, seq: 2, offset: 20, length: 1 },
    ]);
    cs.onRecord(0, records, 0, arena);
    cs.onRecord(0, records, RECORD_INTS, arena);
    arena.fill(0);
    expect(drainMessages(cs)).toEqual([]);
    const later = arenaWith([[50, [1]]]);
    const next = recordsOf([
      { channel: 0, seq: 0, offset: 50, length: 1 },
      { type: RecordType.Release, channel: 0, seq: 1, offset: 0, length: 0 },
      { type: RecordType.Release, channel: 0, seq: 2, offset: 0, length: 0 },
    ]);
    for (let i = 0; i < 3; i++) cs.onRecord(0, next, i * RECORD_INTS, later);
    expect(drainMessages(cs).map((m) => Array.from(m.data))).toEqual([[1], [2], [3]]);
    expect(cs.receiveBufferedBytes()).toBe(0);
  });
});
