/**
 * The receive copy (src/channels/receive-copy.ts), V8 strategy: messages of 65..1024 bytes are
 * carved in turn out of a process-wide 32 KiB slab, smaller and larger ones and held frames get a
 * buffer of their own; a delivered message never changes afterwards, whatever arrives later or
 * whatever the engine does with its arena.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { RECORD_INTS, RecordType, encodeRecord } from "../../src/engine/abi.js";
import { ChannelSet, type ChannelOptions } from "../../src/channels/index.js";
import { setOwnSmallCopies } from "../../src/channels/own-copies.js";
import { resetSlab, SLAB_BYTES, SLAB_MAX_MESSAGE_BYTES } from "../../src/channels/receive-copy.js";
import { drainMessages } from "./harness.js";

// These tests are about the slab, the V8 strategy; under Bun the channels give each message its
// own buffer (own-copies.ts, tested in receive-copy-own.test.ts).
let previousStrategy = false;
beforeAll(() => {
  previousStrategy = setOwnSmallCopies(false);
});
afterAll(() => {
  setOwnSmallCopies(previousStrategy);
});
beforeEach(() => resetSlab());

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
    encodeRecord(r, i * RECORD_INTS, {
      type: x.type ?? RecordType.Message,
      slot: x.slot ?? 0,
      channel: x.channel,
      messageSeq: x.seq,
      fragment: x.fragInfo ?? 0,
      offset: x.offset,
      length: x.length,
    });
  });
  return r;
}
/** `length` bytes that tell their message apart: (tag + i) & 0xff. */
function pattern(tag: number, length: number): number[] {
  return Array.from({ length }, (_, i) => (tag + i) & 0xff);
}

describe("receive copy (slab)", () => {
  it("messages of one datagram are carved in turn from one slab and outlive the arena", () => {
    const cs = make([{ mode: "reliable-ordered" }, { mode: "unreliable" }]);
    const arena = new Uint8Array(4096);
    arena.set(pattern(1, 100), 106);
    arena.set(pattern(2, 70), 210);
    arena.set(pattern(3, 300), 300);
    const records = recordsOf([
      { channel: 0, seq: 0, offset: 106, length: 100 },
      { channel: 1, seq: 0, offset: 210, length: 70 },
      { channel: 0, seq: 1, offset: 300, length: 300 },
    ]);
    for (let i = 0; i < 3; i++) cs.onRecord(0, records, i * RECORD_INTS, arena);
    arena.fill(0xee); // the engine reuses its arena
    const got = drainMessages(cs);
    expect(got.map((m) => [m.channel, Array.from(m.data)])).toEqual([
      [0, pattern(1, 100)],
      [1, pattern(2, 70)],
      [0, pattern(3, 300)],
    ]);
    const buffer = got[0].data.buffer;
    expect(buffer.byteLength).toBe(SLAB_BYTES);
    expect(got.every((m) => m.data.buffer === buffer)).toBe(true);
    // 8-byte aligned parts, in arrival order.
    expect(got.map((m) => m.data.byteOffset)).toEqual([0, 104, 176]);
  });

  it("a received message does not change when later messages arrive, across slabs and connections", () => {
    const a = make([{ mode: "unreliable" }]);
    const b = make([{ mode: "unreliable" }]);
    const arena = new Uint8Array(4096);
    const kept: { tag: number; data: Uint8Array }[] = [];
    // 300 messages of 200 B: about eight slabs' worth, alternating between two connections.
    for (let n = 0; n < 300; n++) {
      const cs = n % 2 === 0 ? a : b;
      arena.set(pattern(n, 200), 1000);
      cs.onRecord(0, recordsOf([{ channel: 0, seq: n, offset: 1000, length: 200 }]), 0, arena);
      arena.fill(n & 0xff); // arena reused
      for (const m of drainMessages(cs)) kept.push({ tag: n, data: m.data });
    }
    expect(kept.length).toBe(300);
    for (const { tag, data } of kept) expect(Array.from(data)).toEqual(pattern(tag, 200));
    const slabs = new Set(kept.map((k) => k.data.buffer));
    expect(slabs.size).toBeGreaterThan(1);
    for (const s of slabs) expect(s.byteLength).toBe(SLAB_BYTES);
  });

  it("a message that does not fit the rest of the slab starts a new one", () => {
    const cs = make([{ mode: "unreliable" }]);
    const arena = new Uint8Array(4096);
    arena.set(pattern(9, 1000), 0);
    const seen: Uint8Array[] = [];
    // Parts of 1000 (1000 is 8-aligned): `fit` of them fill the slab but for less than 1000
    // bytes, and the next needs a new slab.
    const fit = Math.floor(SLAB_BYTES / 1000);
    for (let n = 0; n <= fit; n++) {
      cs.onRecord(0, recordsOf([{ channel: 0, seq: n, offset: 0, length: 1000 }]), 0, arena);
      seen.push(...drainMessages(cs).map((m) => m.data));
    }
    expect(seen.length).toBe(fit + 1);
    expect(seen[fit - 1].buffer).toBe(seen[0].buffer);
    expect(seen[fit - 1].byteOffset).toBe((fit - 1) * 1000);
    expect(seen[fit].buffer).not.toBe(seen[0].buffer);
    expect(seen[fit].byteOffset).toBe(0);
    for (const d of seen) expect(Array.from(d)).toEqual(pattern(9, 1000));
  });

  it("small (<= 64 B) and large (> 1 KiB) messages get buffers of their own", () => {
    const cs = make([{ mode: "unreliable" }]);
    const arena = new Uint8Array(4096);
    arena.set(pattern(4, 64), 10);
    arena.set(pattern(5, SLAB_MAX_MESSAGE_BYTES + 1), 100);
    const records = recordsOf([
      { channel: 0, seq: 0, offset: 10, length: 64 },
      { channel: 0, seq: 1, offset: 100, length: SLAB_MAX_MESSAGE_BYTES + 1 },
      { channel: 0, seq: 2, offset: 10, length: 0 },
    ]);
    for (let i = 0; i < 3; i++) cs.onRecord(0, records, i * RECORD_INTS, arena);
    arena.fill(0);
    const got = drainMessages(cs);
    expect(got.map((m) => Array.from(m.data))).toEqual([pattern(4, 64), pattern(5, SLAB_MAX_MESSAGE_BYTES + 1), []]);
    for (const m of got) {
      expect(m.data.byteOffset).toBe(0);
      expect(m.data.buffer.byteLength).toBe(m.data.length);
    }
  });

  it("held reliable-ordered frames get buffers of their own and are released in order", () => {
    const cs = make([{ mode: "reliable-ordered" }]);
    const arena = new Uint8Array(4096);
    arena.set(pattern(2, 100), 100);
    arena.set(pattern(3, 100), 300);
    const records = recordsOf([
      { type: RecordType.Hold, channel: 0, seq: 1, offset: 100, length: 100 },
      { type: RecordType.Hold, channel: 0, seq: 2, offset: 300, length: 100 },
    ]);
    cs.onRecord(0, records, 0, arena);
    cs.onRecord(0, records, RECORD_INTS, arena);
    arena.fill(0);
    expect(drainMessages(cs)).toEqual([]);
    expect(cs.receiveBufferedBytes()).toBe(2 * (100 + 16));
    const later = new Uint8Array(4096);
    later.set(pattern(1, 100), 500);
    const next = recordsOf([
      { channel: 0, seq: 0, offset: 500, length: 100 },
      { type: RecordType.Release, channel: 0, seq: 1, offset: 0, length: 0 },
      { type: RecordType.Release, channel: 0, seq: 2, offset: 0, length: 0 },
    ]);
    for (let i = 0; i < 3; i++) cs.onRecord(0, next, i * RECORD_INTS, later);
    later.fill(0);
    const got = drainMessages(cs);
    expect(got.map((m) => Array.from(m.data))).toEqual([pattern(1, 100), pattern(2, 100), pattern(3, 100)]);
    expect(got[0].data.buffer.byteLength).toBe(SLAB_BYTES);
    expect(got[1].data.buffer.byteLength).toBe(100);
    expect(got[2].data.buffer.byteLength).toBe(100);
    expect(cs.receiveBufferedBytes()).toBe(0);
  });

  it("duplicates dropped by the channel take no part of the slab", () => {
    const cs = make([{ mode: "unreliable" }]);
    const arena = new Uint8Array(4096);
    arena.set(pattern(6, 80), 10);
    arena.set(pattern(7, 80), 200);
    const dup = recordsOf([
      { channel: 0, seq: 5, offset: 10, length: 80 },
      { channel: 0, seq: 5, offset: 10, length: 80 },
      { channel: 0, seq: 6, offset: 200, length: 80 },
    ]);
    for (let i = 0; i < 3; i++) cs.onRecord(0, dup, i * RECORD_INTS, arena);
    const got = drainMessages(cs);
    expect(got.map((m) => Array.from(m.data))).toEqual([pattern(6, 80), pattern(7, 80)]);
    expect(got.map((m) => m.data.byteOffset)).toEqual([0, 80]);
    expect(cs.stats().duplicates).toBe(1);
  });
});
