import { describe, expect, it } from "vitest";
import { DATA_OVERHEAD_BYTES, DeliveryKind, MESSAGE_WINDOW } from "../../src/engine/abi.js";
import {
  ChannelConfigError,
  ChannelSet,
  InvalidKeyError,
  MessageTooLargeError,
  TooManyKeysError,
  UnknownChannelError,
  type ChannelOptions,
} from "../../src/channels/index.js";
import { decodeFrames } from "./harness.js";

const MTU = 1200;
const ROOM = MTU - DATA_OVERHEAD_BYTES;
const make = (channels: ChannelOptions[], mtu = MTU) => new ChannelSet({ channels, mtu, maxReceiveBufferBytes: 1 << 20 });

function write(cs: ChannelSet, room = ROOM) {
  const bytes = new Uint8Array(2048);
  const contents = cs.acquireContents();
  const n = cs.writeFrames(0, bytes, 100, room, contents);
  return { n, frames: decodeFrames(bytes, 100, 100 + n), contents };
}

describe("packet assembly (frames checked by a decoder written from PROTOCOL.md §3)", () => {
  it("aggregates many small messages into one datagram, byte-exact and in sequence", () => {
    const cs = make([{ mode: "reliable-ordered" }]);
    for (let i = 0; i < 100; i++) cs.send(0, 0, new Uint8Array(10).fill(i));
    const first = write(cs);
    // 6-byte header + 10 payload per frame: floor(1187 / 16) = 74 frames fit.
    expect(first.frames.length).toBe(Math.floor(ROOM / 16));
    expect(first.n).toBe(first.frames.length * 16);
    first.frames.forEach((f, i) => {
      expect(f).toMatchObject({ channel: 0, kind: DeliveryKind.ReliableOrdered, fragmented: false, seq: i });
      expect(Array.from(f.payload)).toEqual(new Array(10).fill(i));
    });
    const second = write(cs);
    expect(second.frames.map((f) => f.seq)).toEqual(Array.from({ length: 26 }, (_, i) => 74 + i));
    expect(cs.hasPending(0)).toBe(false);
  });

  it("fragments a large message: every fragment consumes one messageSeq and carries index/count", () => {
    const cs = make([{ mode: "reliable-unordered" }, { mode: "latest-state" }]);
    const data = new Uint8Array(5000).map((_, i) => i * 7);
    cs.send(0, 0, data);
    const all = [];
    for (let i = 0; i < 10 && cs.hasPending(0); i++) all.push(...write(cs).frames);
    expect(all.length).toBe(Math.ceil(5000 / (ROOM - 10)));
    all.forEach((f, i) => expect(f).toMatchObject({ fragmented: true, seq: i, fragIndex: i, fragCount: all.length }));
    const joined = new Uint8Array(all.reduce((n, f) => n + f.payload.length, 0));
    let p = 0;
    for (const f of all) {
      joined.set(f.payload, p);
      p += f.payload.length;
    }
    expect(joined).toEqual(data);
    // LatestState frames carry the key (4 more header bytes).
    cs.send(0, 1, new Uint8Array([1, 2, 3]), { key: 0xfeedbeef });
    const ls = write(cs).frames;
    expect(ls).toEqual([
      { channel: 1, kind: 5, fragmented: false, seq: 0, fragIndex: 0, fragCount: 0, key: 0xfeedbeef, payload: new Uint8Array([1, 2, 3]) },
    ]);
  });

  it("serves higher priority first and shares a datagram between equal priorities by bytes (turns of 256)", () => {
    const cs = make([{ mode: "unreliable" }, { mode: "unreliable" }, { mode: "unreliable", priority: 5 }]);
    for (let i = 0; i < 200; i++) {
      cs.send(0, 0, new Uint8Array(20));
      cs.send(0, 1, new Uint8Array(20));
    }
    for (let i = 0; i < 5; i++) cs.send(0, 2, new Uint8Array(20));
    const { frames } = write(cs);
    expect(frames.slice(0, 5).every((f) => f.channel === 2)).toBe(true);
    const rest = frames.slice(5).map((f) => f.channel);
    const zeros = rest.filter((c) => c === 0).length;
    const ones = rest.filter((c) => c === 1).length;
    // 26-byte frames: a turn is ten of them (the tenth overdraws), and the next channel's follows.
    expect(Math.abs(zeros - ones)).toBeLessThanOrEqual(10);
    let run = 1;
    for (let i = 1; i < rest.length; i++) {
      run = rest[i] === rest[i - 1] ? run + 1 : 1;
      expect(run).toBeLessThanOrEqual(10);
    }
    expect(rest.slice(0, 20)).toEqual([...Array(10).fill(rest[0]), ...Array(10).fill(1 - rest[0]!)]);
  });

  it("resends lost reliable frames before new data, in new packets, and never resends unreliable ones", () => {
    const cs = make([{ mode: "reliable-ordered" }, { mode: "unreliable" }]);
    cs.send(0, 0, new Uint8Array([1]));
    cs.send(0, 1, new Uint8Array([2]), { receipt: true });
    const p1 = write(cs);
    expect(p1.frames.length).toBe(2);
    cs.send(0, 0, new Uint8Array([3]));
    cs.onLost(0, p1.contents);
    const p2 = write(cs);
    expect(p2.frames.map((f) => [f.channel, f.seq, f.payload[0]])).toEqual([
      [0, 0, 1],
      [0, 1, 3],
    ]);
    expect(cs.stats().resends).toBe(1);
    expect(cs.pollReceipt()).toEqual({ receipt: 1, delivered: false });
  });

  it("never sends a reliable messageSeq a full window past the oldest unacknowledged one", () => {
    const cs = make([{ mode: "reliable-unordered" }]);
    for (let i = 0; i < 3000; i++) cs.send(0, 0, new Uint8Array(4));
    const sent: ReturnType<typeof write>[] = [];
    for (let i = 0; i < 100 && cs.hasPending(0); i++) sent.push(write(cs));
    const seqs = sent.flatMap((p) => p.frames.map((f) => f.seq));
    expect(seqs.length).toBe(MESSAGE_WINDOW);
    expect(Math.max(...seqs)).toBe(MESSAGE_WINDOW - 1);
    // Ack the first packet: exactly that many more may go.
    cs.onDelivered(0, sent[0].contents);
    const more = write(cs).frames;
    expect(more.length).toBe(sent[0].frames.length);
    expect(more[0].seq).toBe(MESSAGE_WINDOW);
  });

  it("ReliableSequenced resends a lost message only while no newer one has been sent", () => {
    const cs = make([{ mode: "reliable-sequenced" }]);
    const r1 = cs.send(0, 0, new Uint8Array([1]), { receipt: true });
    const p1 = write(cs);
    const r2 = cs.send(0, 0, new Uint8Array([2]), { receipt: true });
    const p2 = write(cs);
    cs.onLost(0, p1.contents);
    expect(cs.hasPending(0)).toBe(false);
    expect(cs.pollReceipt()).toEqual({ receipt: r1, delivered: false });
    cs.onLost(0, p2.contents);
    const p3 = write(cs);
    expect(p3.frames.map((f) => [f.seq, f.payload[0]])).toEqual([[1, 2]]);
    cs.onDelivered(0, p3.contents);
    expect(cs.pollReceipt()).toEqual({ receipt: r2, delivered: true });
    // Queued-but-unsent older messages are superseded at once.
    cs.send(0, 0, new Uint8Array([3]));
    cs.send(0, 0, new Uint8Array([4]));
    expect(write(cs).frames.map((f) => f.payload[0])).toEqual([4]);
  });

  it("LatestState resends the current value of a lost key unless a newer one is in flight", () => {
    const cs = make([{ mode: "latest-state" }]);
    cs.send(0, 0, new Uint8Array([10]), { key: 7 });
    cs.send(0, 0, new Uint8Array([11]), { key: 7 }); // coalesced: not yet sent
    const p1 = write(cs);
    expect(p1.frames.map((f) => f.payload[0])).toEqual([11]);
    cs.send(0, 0, new Uint8Array([12]), { key: 7 });
    const p2 = write(cs);
    cs.onLost(0, p1.contents); // v11 lost, v12 in flight: nothing to resend
    expect(cs.hasPending(0)).toBe(false);
    cs.onLost(0, p2.contents); // current value lost: resend it
    const p3 = write(cs);
    expect(p3.frames.map((f) => [f.key, f.payload[0]])).toEqual([[7, 12]]);
    cs.send(0, 0, new Uint8Array([13]), { key: 7 }); // newer queued
    cs.onLost(0, p3.contents); // v12 lost again but v13 is queued: only v13 goes
    expect(write(cs).frames.map((f) => f.payload[0])).toEqual([13]);
  });
});

describe("typed errors", () => {
  it("say what to do for misuse", () => {
    const cs = make([{ mode: "reliable-ordered", maxMessageBytes: 100 }, { mode: "latest-state", maxKeys: 2 }]);
    expect(() => cs.send(0, 2, new Uint8Array(1))).toThrow(UnknownChannelError);
    expect(() => cs.send(0, -1, new Uint8Array(1))).toThrow(UnknownChannelError);
    expect(() => cs.send(0, 0.5, new Uint8Array(1))).toThrow(UnknownChannelError);
    const tooLarge = (() => {
      try {
        cs.send(0, 0, new Uint8Array(101));
      } catch (e) {
        return e;
      }
    })();
    expect(tooLarge).toBeInstanceOf(MessageTooLargeError);
    expect((tooLarge as MessageTooLargeError).code).toBe("ERR_MESSAGE_TOO_LARGE");
    expect((tooLarge as Error).message).toMatch(/maxMessageBytes/);
    expect(() => cs.send(0, 1, new Uint8Array(1))).toThrow(InvalidKeyError);
    expect(() => cs.send(0, 0, new Uint8Array(1), { key: 1 })).toThrow(InvalidKeyError);
    cs.send(0, 1, new Uint8Array(1), { key: 1 });
    cs.send(0, 1, new Uint8Array(1), { key: 2 });
    cs.send(0, 1, new Uint8Array(1), { key: 2 });
    expect(() => cs.send(0, 1, new Uint8Array(1), { key: 3 })).toThrow(TooManyKeysError);
    expect(() => make([])).toThrow(ChannelConfigError);
    expect(() => make([{ mode: "bogus" as never }])).toThrow(ChannelConfigError);
    // at mtu 200 a reliable message is at most 1024 fragments of 177 bytes
    expect(() => make([{ mode: "reliable-ordered", maxMessageBytes: 1 << 20 }], 200)).toThrow(ChannelConfigError);
    expect(() => make([{ mode: "reliable-ordered" }], 200)).not.toThrow();
  });

  it("refuses an unknown key in a channel config, naming the closest known one (a typo left its default in force; found by a review)", () => {
    const make = (c: object) => new ChannelSet({ channels: [c as ChannelOptions], mtu: 1200, maxReceiveBufferBytes: 1 << 20 });
    expect(() => make({ mode: "unreliable", redundnacy: 2 })).toThrow(ChannelConfigError);
    expect(() => make({ mode: "unreliable", redundnacy: 2 })).toThrow(/channel 0: unknown option "redundnacy" \(did you mean "redundancy"\?\)/);
    expect(() => make({ mode: "reliable-ordered", maxMesageBytes: 10 })).toThrow(/did you mean "maxMessageBytes"/);
    expect(() => make({ mode: "reliable-ordered", maxMessageBytes: undefined })).not.toThrow();
  });
});
