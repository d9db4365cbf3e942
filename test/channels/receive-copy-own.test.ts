/**
 * The receive copy's other strategy (src/channels/receive-copy.ts, the default on Bun): every
 * message gets an exact buffer of its own; nothing depends on the arena afterwards. Behaviour
 * seen by the application is the same as with the slab.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RECORD_INTS, RecordType, encodeRecord } from "../../src/engine/abi.js";
import { ChannelSet, type ChannelOptions } from "../../src/channels/index.js";
import { setOwnSmallCopies } from "../../src/channels/own-copies.js";
import { drainMessages } from "./harness.js";

const make = (channels: ChannelOptions[]) => new ChannelSet({ channels, mtu: 1200, maxReceiveBufferBytes: 1 << 20 });

function recordsOf(list: { type?: RecordType; channel: number; seq: number; offset: number; length: number }[]): Int32Array {
  const r = new Int32Array(16 * RECORD_INTS);
  list.forEach((x, i) => {
    encodeRecord(r, i * RECORD_INTS, {
      type: x.type ?? RecordType.Message,
      channel: x.channel,
      messageSeq: x.seq,
      offset: x.offset,
      length: x.length,
    });
  });
  return r;
}

describe("receive copy, a buffer per message", () => {
  let previous = false;
  beforeAll(() => {
    previous = setOwnSmallCopies(true);
  });
  afterAll(() => {
    setOwnSmallCopies(previous);
  });

  it("each message has an exact buffer of its own and outlives the arena", () => {
    const cs = make([{ mode: "reliable-ordered" }, { mode: "unreliable" }]);
    const arena = new Uint8Array(4096);
    arena.set([1, 2, 3], 106);
    arena.set([4, 5], 115);
    arena.set([6, 7, 8, 9], 123);
    const records = recordsOf([
      { channel: 0, seq: 0, offset: 106, length: 3 },
      { channel: 1, seq: 0, offset: 115, length: 2 },
      { channel: 0, seq: 1, offset: 123, length: 4 },
    ]);
    for (let i = 0; i < 3; i++) cs.onRecord(0, records, i * RECORD_INTS, arena);
    arena.fill(0xee);
    const got = drainMessages(cs);
    expect(got.map((m) => [m.channel, Array.from(m.data)])).toEqual([
      [0, [1, 2, 3]],
      [1, [4, 5]],
      [0, [6, 7, 8, 9]],
    ]);
    for (const m of got) {
      expect(m.data.byteOffset).toBe(0);
      expect(m.data.buffer.byteLength).toBe(m.data.length);
    }
  });

  it("held reliable-ordered messages are released in order", () => {
    const cs = make([{ mode: "reliable-ordered" }]);
    const arena = new Uint8Array(4096);
    arena.set([2], 10);
    arena.set([3], 20);
    const records = recordsOf([
      { type: RecordType.Hold, channel: 0, seq: 1, offset: 10, length: 1 },
      { type: RecordType.Hold, channel: 0, seq: 2, offset: 20, length: 1 },
    ]);
    cs.onRecord(0, records, 0, arena);
    cs.onRecord(0, records, RECORD_INTS, arena);
    arena.fill(0);
    expect(drainMessages(cs)).toEqual([]);
    const later = new Uint8Array(4096);
    later.set([1], 50);
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
