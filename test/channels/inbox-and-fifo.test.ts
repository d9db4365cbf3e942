/**
 * The received-message inbox (a lone key-less message waits in ChannelSet fields, the rest in a
 * flat array) keeps arrival order across pollMessage / takeMessages and a re-entrant sink; the
 * sender's FIFO (acknowledged messages leave at their ack when oldest, others are trimmed later)
 * keeps the flow-control window exact whatever the ack order.
 */
import { describe, expect, it } from "vitest";
import { RECORD_INTS, RecordType, encodeRecord } from "../../src/engine/abi.js";
import { ChannelSet, type ChannelOptions, type MessageSink, type PacketContents } from "../../src/channels/index.js";
import { decodeFrames, drainMessages } from "./harness.js";

const make = (channels: ChannelOptions[]) => new ChannelSet({ channels, mtu: 1200, maxReceiveBufferBytes: 1 << 20 });

/** Hand one engine Message record (own records array and arena) to `cs`. */
function receive(cs: ChannelSet, channel: number, seq: number, bytes: number[], key = 0): void {
  const arena = new Uint8Array(64);
  arena.set(bytes, 8);
  const records = new Int32Array(2 * RECORD_INTS);
  encodeRecord(records, 0, { type: RecordType.Message, channel, messageSeq: seq, key, offset: 8, length: bytes.length });
  cs.onRecord(0, records, 0, arena);
}

const CHANNELS: ChannelOptions[] = [{ mode: "reliable-ordered" }, { mode: "latest-state" }, { mode: "unreliable" }];

describe("inbox order", () => {
  it("keeps arrival order for key-less and keyed messages, through poll and take alike", () => {
    const cs = make(CHANNELS);
    receive(cs, 0, 0, [1]);
    receive(cs, 1, 0, [2], 7);
    receive(cs, 2, 0, [3]);
    receive(cs, 0, 1, [4]);
    expect(cs.pollMessage()).toEqual({ channel: 0, data: new Uint8Array([1]) });
    // Arrives while older messages still wait: after them.
    receive(cs, 2, 1, [5]);
    const got: [number, number[], number | undefined][] = [];
    const sink: MessageSink = { onReceivedMessage: (c, d, k) => void got.push([c, Array.from(d), k]) };
    cs.takeMessages(sink);
    expect(got).toEqual([
      [1, [2], 7],
      [2, [3], undefined],
      [0, [4], undefined],
      [2, [5], undefined],
    ]);
    expect(cs.pollMessage()).toBeUndefined();
    // A keyed message first, then a key-less one: still in order.
    receive(cs, 1, 1, [6], 8);
    receive(cs, 0, 2, [7]);
    expect(drainMessages(cs).map((m) => [m.channel, Array.from(m.data), m.key])).toEqual([
      [1, [6], 8],
      [0, [7], undefined],
    ]);
    expect(cs.stats().messagesReceived).toEqual([3, 2, 2]);
  });

  it("a sink that polls or receives while being handed messages sees them once, in order", () => {
    const cs = make(CHANNELS);
    receive(cs, 0, 0, [1]);
    receive(cs, 0, 1, [2]);
    receive(cs, 0, 2, [3]);
    const seen: number[] = [];
    let fed = false;
    const sink: MessageSink = {
      onReceivedMessage(_c, d) {
        seen.push(d[0]);
        if (d[0] === 1) {
          const m = cs.pollMessage(); // takes message 2 out of the drain
          if (m !== undefined) seen.push(100 + m.data[0]);
        }
        if (!fed) {
          fed = true;
          receive(cs, 2, 0, [4]); // arrives during the drain: handed over in the same drain
        }
      },
    };
    cs.takeMessages(sink);
    expect(seen).toEqual([1, 102, 3, 4]);
    expect(cs.pollMessage()).toBeUndefined();
  });
});

describe("sender FIFO", () => {
  it("the window stays exact when acknowledgements come out of order", () => {
    const cs = make([{ mode: "reliable-ordered" }]);
    const bytes = new Uint8Array(1200);
    const data = new Uint8Array(500); // two frames per packet
    const send = (n: number) => {
      for (let i = 0; i < n; i++) cs.send(0, 0, data);
    };
    const write = (): { contents: PacketContents; seqs: number[] } | undefined => {
      if (!cs.hasPending(0)) return undefined;
      const contents = cs.acquireContents();
      const n = cs.writeFrames(0, bytes, 0, 1187, contents);
      if (n === 0) {
        cs.releaseContents(contents);
        return undefined;
      }
      return { contents, seqs: decodeFrames(bytes, 0, n).map((f) => f.seq) };
    };
    send(1100);
    const packets: { contents: PacketContents; seqs: number[] }[] = [];
    for (let p = write(); p !== undefined && packets.length < 1000; p = write()) packets.push(p);
    expect(packets.flatMap((p) => p.seqs).length).toBe(1024);
    // Acknowledge everything but the first packet, newest first: the window cannot move.
    for (let i = packets.length - 1; i >= 1; i--) {
      cs.onDelivered(0, packets[i].contents);
      cs.releaseContents(packets[i].contents);
    }
    expect(write()).toBeUndefined();
    // The oldest packet (seqs 0 and 1): the window moves by exactly everything acknowledged.
    cs.onDelivered(0, packets[0].contents);
    cs.releaseContents(packets[0].contents);
    const more: number[] = [];
    for (let p = write(); p !== undefined && more.length < 2000; p = write()) {
      more.push(...p.seqs);
      cs.onDelivered(0, p.contents);
      cs.releaseContents(p.contents);
    }
    expect(more).toEqual(Array.from({ length: 76 }, (_, i) => 1024 + i));
    expect(cs.queuedBytes()).toBe(0);
  });
});
