/**
 * LatestState supersession and deletion, pooled send buffers, the pending flag, lazily grown
 * rings (held frames, notification records). Frames are checked with the PROTOCOL.md decoder.
 */
import { describe, expect, it } from "vitest";
import { DATA_OVERHEAD_BYTES, DeliveryKind, RECORD_INTS, RecordType } from "../../src/engine/abi.js";
import { ChannelSet, DeliveryNotificationManager, InvalidKeyError, TooManyKeysError, type ChannelOptions } from "../../src/channels/index.js";
import { Pair, Peer, decodeFrames, drainMessages } from "./harness.js";

const MTU = 1200;
const ROOM = MTU - DATA_OVERHEAD_BYTES;
const make = (channels: ChannelOptions[]) => new ChannelSet({ channels, mtu: MTU, maxReceiveBufferBytes: 1 << 20 });

function write(cs: ChannelSet) {
  const bytes = new Uint8Array(2048);
  const contents = cs.acquireContents();
  const n = cs.writeFrames(0, bytes, 100, ROOM, contents);
  return { n, frames: decodeFrames(bytes, 100, 100 + n), contents };
}

function record(records: Int32Array, type: number, a: number, b: number, c: number, d: number, off: number, len: number) {
  records.set([type, 0, a, b, c, d, off, len], 0);
}

describe("LatestState supersession", () => {
  it("a lost superseded value is never resent, whether the newer one is queued, in flight or delivered", () => {
    const cs = make([{ mode: "latest-state" }]);
    const v = (x: number) => new Uint8Array([x, x, x]);
    cs.send(0, 0, v(1), { key: 9 });
    const p1 = write(cs); // v1 in flight
    cs.send(0, 0, v(2), { key: 9 });
    const p2 = write(cs); // v2 in flight
    cs.send(0, 0, v(3), { key: 9 }); // v3 queued
    cs.onLost(0, p1.contents); // v1: superseded by v2 (in flight) and v3 (queued)
    cs.onLost(0, p2.contents); // v2: superseded by v3 (queued)
    const p3 = write(cs);
    expect(p3.frames.map((f) => f.payload[0])).toEqual([3]);
    cs.onDelivered(0, p3.contents); // v3 delivered
    expect(cs.hasPending(0)).toBe(false);
    expect(write(cs).n).toBe(0);
    expect(cs.stats().resends).toBe(0);
    expect(cs.queuedBytes()).toBe(0);
  });

  it("many updates of one key before the next packet leave as one frame carrying the newest value", () => {
    const cs = make([{ mode: "latest-state" }, { mode: "reliable-unordered" }]);
    for (let version = 1; version <= 50; version++) {
      cs.send(0, 0, new Uint8Array([version]), { key: 1 });
      cs.send(0, 1, new Uint8Array([version]));
    }
    const frames = write(cs).frames;
    expect(frames.filter((f) => f.channel === 0).map((f) => f.payload[0])).toEqual([50]);
    expect(frames.filter((f) => f.channel === 1)).toHaveLength(50);
  });
});

describe("LatestState deletion (tombstones)", () => {
  it("deleteKey sends an empty value; the peer reports the deletion and both sides free the key", () => {
    const configs: ChannelOptions[] = [{ mode: "latest-state", maxKeys: 2 }];
    const kinds = [DeliveryKind.LatestState];
    const pair = new Pair(new Peer(kinds, configs, MTU, 100), new Peer(kinds, configs, MTU, 200), { seed: 11, loss: 0.3, latencyMs: 20, jitterMs: 10 });
    const [a, b] = pair.peers;
    const got: [number, number][] = [];
    const drain = () => {
      for (const m of drainMessages(b.channels)) got.push([m.key!, m.data.length === 0 ? -1 : m.data[0]]);
    };
    a.channels.send(0, 0, new Uint8Array([1]), { key: 10 });
    a.channels.send(0, 0, new Uint8Array([2]), { key: 20 });
    expect(() => a.channels.send(0, 0, new Uint8Array([3]), { key: 30 })).toThrow(TooManyKeysError);
    const receipt = a.channels.deleteKey(0, 0, 10, { receipt: true });
    expect(receipt).toBeGreaterThan(0);
    let settled: boolean | undefined;
    pair.run(2_000, () => settled !== undefined && a.dnm.inFlight === 0 && !a.channels.hasPending(pair.now), () => {
      drain();
      for (let r = a.channels.pollReceipt(); r; r = a.channels.pollReceipt()) if (r.receipt === receipt) settled = r.delivered;
    });
    drain();
    expect(settled).toBe(true);
    // Key 10's value was replaced by the tombstone before it was sent (coalesced), so the peer
    // sees only the deletion of 10, and 20's value.
    expect(got.filter(([k]) => k === 10)).toEqual([[10, -1]]);
    expect(got.filter(([k]) => k === 20)).toEqual([[20, 2]]);
    // Key 10 no longer counts on either side: a new key fits under maxKeys = 2 and is delivered.
    a.channels.send(pair.now, 0, new Uint8Array([3]), { key: 30 });
    pair.run(2_000, () => got.some(([k]) => k === 30), drain);
    expect(got.filter(([k]) => k === 30)).toEqual([[30, 3]]);
    expect(b.channels.stats().invalid).toBe(0);
  });

  it("an older value arriving after the tombstone does not resurrect the key", () => {
    const cs = make([{ mode: "latest-state" }]);
    const arena = new Uint8Array(64).fill(7);
    const records = new Int32Array(RECORD_INTS);
    const feed = (seq: number, length: number) => {
      record(records, RecordType.Message, 0, seq, 0, 5, 0, length);
      cs.onRecord(0, records, 0, arena);
    };
    feed(10, 4); // value
    feed(12, 0); // tombstone
    feed(11, 4); // delayed older value: stale
    feed(13, 4); // newer value: the key lives again
    const got = drainMessages(cs).map((m) => [m.key, m.data.length]);
    expect(got).toEqual([
      [5, 4],
      [5, 0],
      [5, 4],
    ]);
    expect(cs.stats().stale).toBe(1);
  });

  it("deleteKey on a channel that is not latest-state is a typed error", () => {
    const cs = make([{ mode: "reliable-ordered" }]);
    expect(() => cs.deleteKey(0, 0, 1)).toThrow(InvalidKeyError);
  });
});

describe("send buffers", () => {
  it("the caller may reuse its buffer at once, and recycled buffers never leak old bytes into frames", () => {
    const cs = make([{ mode: "reliable-ordered" }, { mode: "unreliable" }]);
    const mine = new Uint8Array(100);
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 5; i++) {
        mine.fill(round * 10 + i);
        cs.send(0, round % 2, mine.subarray(0, 40 + i));
        mine.fill(0xee); // overwritten after send: must not matter
      }
      const p = write(cs);
      expect(p.frames.map((f) => [f.payload.length, f.payload.every((x) => x === f.payload[0]) ? f.payload[0] : -1])).toEqual(
        [0, 1, 2, 3, 4].map((i) => [40 + i, round * 10 + i]),
      );
      if (round % 3 === 2) cs.onLost(0, p.contents);
      else cs.onDelivered(0, p.contents);
      cs.releaseContents(p.contents);
      if (round % 3 === 2 && round % 2 === 0) {
        // reliable frames of a lost packet come back unchanged, after their buffers' neighbours were recycled
        const again = write(cs);
        expect(again.frames.map((f) => f.payload[0])).toEqual([0, 1, 2, 3, 4].map((i) => round * 10 + i));
        cs.onDelivered(0, again.contents);
      }
    }
    expect(cs.queuedBytes()).toBe(0);
  });
});

describe("pending flag", () => {
  it("a window-blocked channel becomes pending again when an acknowledgement moves the window", () => {
    const cs = make([{ mode: "reliable-unordered" }]);
    for (let i = 0; i < 1100; i++) cs.send(0, 0, new Uint8Array([i & 0xff]));
    const packets = [];
    while (cs.hasPending(0) && packets.length < 200) packets.push(write(cs));
    const sent = packets.reduce((n, p) => n + p.frames.length, 0);
    expect(sent).toBe(1024); // the message window
    expect(cs.hasPending(0)).toBe(false);
    cs.onDelivered(0, packets[0].contents);
    expect(cs.hasPending(0)).toBe(true);
    // the window moved by the first packet's frames; 1100 - 1024 messages were waiting
    expect(packets[0].frames.length).toBeGreaterThan(1100 - 1024);
    expect(write(cs).frames.length).toBe(1100 - 1024);
  });
});

describe("rings that grow on demand", () => {
  it("ReliableOrdered holds many out-of-order frames (held ring grows) and releases them in order", () => {
    const cs = make([{ mode: "reliable-ordered" }]);
    const arena = new Uint8Array(2048).map((_, i) => i & 0xff);
    const records = new Int32Array(RECORD_INTS);
    // Hold 1000 frames whose seqs collide in any small ring (1000..1999, 65530.. across the wrap).
    const seqs: number[] = [];
    for (let i = 0; i < 1000; i++) seqs.push((65000 + i) & 0xffff);
    for (const s of seqs) {
      record(records, RecordType.Hold, 0, s, 0, 0, s & 0x3ff, 1);
      cs.onRecord(0, records, 0, arena);
    }
    for (const s of seqs) {
      record(records, RecordType.Release, 0, s, 0, 0, 0, 0);
      cs.onRecord(0, records, 0, arena);
    }
    expect(drainMessages(cs).map((m) => m.data[0])).toEqual(seqs.map((s) => arena[s & 0x3ff]));
    expect(cs.receiveBufferedBytes()).toBe(0);
    expect(cs.stats().invalid).toBe(0);
  });

  it("the notification ring grows from one slot to capacity, then reports the oldest dropped", () => {
    const events: string[] = [];
    const dnm = new DeliveryNotificationManager<number>(
      { onDelivered: (s, d) => events.push(`+${s}:${d}`), onDropped: (s, d) => events.push(`-${s}:${d}`) },
      { capacity: 64, initialCapacity: 1 },
    );
    for (let i = 0; i < 70; i++) dnm.dispatch((65500 + i) & 0xffff, i, 10, i);
    // 70 dispatched into at most 64 slots: the 6 oldest were reported dropped.
    expect(events).toEqual([0, 1, 2, 3, 4, 5].map((i) => `-${65500 + i}:${i}`));
    events.length = 0;
    for (let i = 69; i >= 6; i--) dnm.acknowledge((65500 + i) & 0xffff, 100);
    expect(events).toHaveLength(64);
    for (let i = 6; i < 70; i++) expect(events).toContain(`+${(65500 + i) & 0xffff}:${i}`);
    expect(dnm.inFlight).toBe(0);
    expect(dnm.bytesInFlight).toBe(0);
    expect(() => new DeliveryNotificationManager<number>({ onDelivered() {}, onDropped() {} }, { capacity: 64, initialCapacity: 3 })).toThrow(RangeError);
  });
});

describe("reassembly with one copy", () => {
  /** Fragments of a `total`-byte message cut at `size` bytes, as the sender does. */
  function cut(total: number, size: number): { index: number; offset: number; length: number }[] {
    const count = Math.ceil(total / size);
    return Array.from({ length: count }, (_, index) => ({ index, offset: index * size, length: Math.min(size, total - index * size) }));
  }
  /** mulberry32 permutation of 0..n-1 for `seed`. */
  function shuffled(n: number, seed: number): number[] {
    let a = seed >>> 0;
    const next = () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = Math.imul(a ^ (a >>> 15), a | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const out = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  it("unordered kinds: any arrival order (last fragment first included) rebuilds the exact bytes", () => {
    const arena = new Uint8Array(8192).map((_, i) => (i * 7 + 3) & 0xff);
    const records = new Int32Array(RECORD_INTS);
    for (let seed = 1; seed <= 30; seed++) {
      const cs = make([{ mode: "reliable-unordered" }, { mode: "unreliable" }]);
      const total = 1000 + seed * 97;
      const frags = cut(total, 700);
      const order = shuffled(frags.length, seed);
      if (seed % 3 === 0) order.unshift(...order.splice(order.indexOf(frags.length - 1), 1)); // last one first
      const seqBase = (65530 + seed) & 0xffff;
      for (const i of order) {
        const f = frags[i];
        record(records, RecordType.Message, seed & 1, (seqBase + i) & 0xffff, (i << 16) | frags.length, 0, f.offset, f.length);
        cs.onRecord(0, records, 0, arena);
      }
      const got = drainMessages(cs);
      expect(got.length, `seed ${seed}`).toBe(1);
      expect(Array.from(got[0].data), `seed ${seed}`).toEqual(Array.from(arena.subarray(0, total)));
      expect(cs.receiveBufferedBytes()).toBe(0);
    }
  });

  it("reliable-ordered: fragments held out of order go straight into the message and are released in order", () => {
    const arena = new Uint8Array(8192).map((_, i) => (i * 5 + 1) & 0xff);
    const records = new Int32Array(RECORD_INTS);
    const cs = make([{ mode: "reliable-ordered" }]);
    const frags = cut(3000, 1000); // seqs 100..102, then a small message at 103
    // 101 and 102 arrive before 100 (held), 103 too; then 100 arrives and the engine releases the rest.
    for (const i of [2, 1]) {
      record(records, RecordType.Hold, 0, 100 + i, (i << 16) | 3, 0, frags[i].offset, frags[i].length);
      cs.onRecord(0, records, 0, arena);
    }
    record(records, RecordType.Hold, 0, 103, 0, 0, 5000, 10);
    cs.onRecord(0, records, 0, arena);
    expect(cs.receiveBufferedBytes()).toBeGreaterThan(0);
    record(records, RecordType.Message, 0, 100, (0 << 16) | 3, 0, frags[0].offset, frags[0].length);
    cs.onRecord(0, records, 0, arena);
    expect(cs.pollMessage()).toBeUndefined(); // not before its last fragment is released
    for (const seq of [101, 102, 103]) {
      record(records, RecordType.Release, 0, seq, 0, 0, 0, 0);
      cs.onRecord(0, records, 0, arena);
    }
    const got = drainMessages(cs);
    expect(got.map((m) => m.data.length)).toEqual([3000, 10]);
    expect(Array.from(got[0].data)).toEqual(Array.from(arena.subarray(0, 3000)));
    expect(Array.from(got[1].data)).toEqual(Array.from(arena.subarray(5000, 5010)));
    expect(cs.receiveBufferedBytes()).toBe(0);
    expect(cs.stats().invalid).toBe(0);
  });
});
