/**
 * writeFrames hands the rest of a datagram to a priority group's only active channel in one call
 * (SendChannel.writeRun) and writes a one-frame message's first frame
 * directly (writeWhole). The frames and their order must be exactly those of the byte-wise
 * round-robin between busy channels (deficit round-robin, 256 bytes a turn: about two 106-byte
 * frames and a third that overdraws): checked here frame by frame, across datagrams, for new
 * data and for resends.
 */
import { describe, expect, it } from "vitest";
import { FRAME_HEADER_BYTES } from "../../src/engine/abi.js";
import { ChannelSet } from "../../src/channels/index.js";

const SIZE = 100;
const FRAME = FRAME_HEADER_BYTES + SIZE;

/** (channel, messageSeq, first payload byte) of each frame in bytes[0 .. length). */
function framesOf(bytes: Uint8Array, length: number): [number, number, number][] {
  const out: [number, number, number][] = [];
  let p = 0;
  while (p < length) {
    const len = bytes[p + 4] | (bytes[p + 5] << 8);
    out.push([bytes[p], bytes[p + 2] | (bytes[p + 3] << 8), bytes[p + 6]]);
    p += FRAME_HEADER_BYTES + len;
  }
  expect(p).toBe(length);
  return out;
}

describe("writing runs of frames", () => {
  it("two channels take turns of 256 bytes until one is empty; the other then fills the rest, across datagrams", () => {
    const cs = new ChannelSet({ channels: [{ mode: "reliable-ordered" }, { mode: "reliable-ordered" }], mtu: 1200, maxReceiveBufferBytes: 1 << 20 });
    for (let i = 0; i < 3; i++) cs.send(0, 0, new Uint8Array(SIZE).fill(i));
    for (let i = 0; i < 10; i++) cs.send(0, 1, new Uint8Array(SIZE).fill(100 + i));
    const bytes = new Uint8Array(2048);
    // Room for 8 frames and a bit: channel 0's turn (its three frames: 256 - 3 x 106 < 0, and it
    // is empty), then channel 1 alone for the rest.
    const first = cs.acquireContents();
    const n1 = cs.writeFrames(0, bytes, 0, 8 * FRAME + 50, first);
    expect(framesOf(bytes, n1)).toEqual([
      [0, 0, 0], [0, 1, 1], [0, 2, 2], [1, 0, 100], [1, 1, 101], [1, 2, 102], [1, 3, 103], [1, 4, 104],
    ]);
    expect(first.count).toBe(8);
    // Next datagram: only channel 1 has data; it writes the rest in order.
    const second = cs.acquireContents();
    const n2 = cs.writeFrames(0, bytes, 0, 1187, second);
    expect(framesOf(bytes, n2)).toEqual([[1, 5, 105], [1, 6, 106], [1, 7, 107], [1, 8, 108], [1, 9, 109]]);
    expect(cs.hasPending(0)).toBe(false);

    // The first datagram is lost: its frames are resent first, by turns while both channels
    // have some (the round-robin starts at writes % 2 = 0 on the third datagram), then channel 1's.
    cs.onLost(1, first);
    cs.releaseContents(first);
    expect(cs.hasPending(1)).toBe(true);
    const third = cs.acquireContents();
    const n3 = cs.writeFrames(1, bytes, 0, 1187, third);
    expect(framesOf(bytes, n3)).toEqual([
      [0, 0, 0], [0, 1, 1], [0, 2, 2], [1, 0, 100], [1, 1, 101], [1, 2, 102], [1, 3, 103], [1, 4, 104],
    ]);
    expect(third.resends).toBe(8);
    const s = cs.stats();
    expect(s.resends).toBe(8);
  });

  it("a lone channel stops at the flow-control window and at the datagram's room, and resumes where it stopped", () => {
    const cs = new ChannelSet({ channels: [{ mode: "reliable-ordered" }], mtu: 1200, maxReceiveBufferBytes: 1 << 20 });
    const total = 1030; // more than the 1024-message window
    for (let i = 0; i < total; i++) cs.send(0, 0, new Uint8Array(SIZE).fill(i & 0xff));
    const bytes = new Uint8Array(2048);
    const seen: number[] = [];
    const packets = [];
    for (let d = 0; d < 200 && cs.hasPending(0); d++) {
      const c = cs.acquireContents();
      const n = cs.writeFrames(0, bytes, 0, 1187, c);
      expect(n).toBeGreaterThan(0);
      const frames = framesOf(bytes, n);
      expect(frames.length).toBeLessThanOrEqual(Math.floor(1187 / FRAME));
      for (const [ch, seq, b] of frames) {
        expect(ch).toBe(0);
        expect(b).toBe(seq & 0xff);
        seen.push(seq);
      }
      packets.push(c);
    }
    // Exactly the window's worth, in order; nothing more until the oldest is acknowledged.
    expect(seen).toEqual(Array.from({ length: 1024 }, (_, i) => i));
    cs.onDelivered(1, packets[0]);
    cs.releaseContents(packets[0]);
    const c = cs.acquireContents();
    const n = cs.writeFrames(1, bytes, 0, 1187, c);
    expect(framesOf(bytes, n).map((f) => f[1])).toEqual([1024, 1025, 1026, 1027, 1028, 1029]);
  });
});
