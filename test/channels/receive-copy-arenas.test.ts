/**
 * A ChannelSet remembers the last arena view's buffer and offset for its receive copies
 * (copyMessageIn in receive-copy.ts): messages taken in turn from different arenas, including
 * views that start inside their buffer, must each come from their own arena.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { RECORD_INTS, RecordType, encodeRecord } from "../../src/engine/abi.js";
import { ChannelSet } from "../../src/channels/index.js";
import { setOwnSmallCopies } from "../../src/channels/own-copies.js";
import { resetSlab } from "../../src/channels/receive-copy.js";
import { drainMessages } from "./harness.js";

let previousStrategy = false;
beforeAll(() => {
  previousStrategy = setOwnSmallCopies(false); // the slab strategy (V8) is the one with the cache
});
afterAll(() => {
  setOwnSmallCopies(previousStrategy);
});
beforeEach(() => resetSlab());

function messageRecord(seq: number, offset: number, length: number): Int32Array {
  const r = new Int32Array(RECORD_INTS);
  encodeRecord(r, 0, { type: RecordType.Message, channel: 0, messageSeq: seq, offset, length });
  return r;
}

describe("receive copy across arenas", () => {
  it("alternating arenas (own buffers, views inside a buffer) each give their own bytes", () => {
    const cs = new ChannelSet({ channels: [{ mode: "reliable-ordered" }], mtu: 1200, maxReceiveBufferBytes: 1 << 20 });
    const shared = new ArrayBuffer(8192);
    const arenas = [
      new Uint8Array(4096),
      new Uint8Array(shared, 0, 4096),
      new Uint8Array(shared, 4096, 4096), // same buffer, other offset
      new Uint8Array(new ArrayBuffer(5000), 904, 4096),
    ];
    arenas.forEach((a, k) => a.fill(0x10 * (k + 1)));
    const expected: number[] = [];
    for (let n = 0; n < 40; n++) {
      const k = (n * 3) % arenas.length; // not a simple rotation
      cs.onRecord(0, messageRecord(n, 100 + (n % 5), 100), 0, arenas[k]);
      expected.push(0x10 * (k + 1));
    }
    const got = drainMessages(cs);
    expect(got.length).toBe(40);
    got.forEach((m, n) => {
      expect(m.data.length).toBe(100);
      expect(m.data.every((b) => b === expected[n])).toBe(true);
    });
  });
});
