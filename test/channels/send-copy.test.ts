/**
 * send() copies the caller's bytes: the caller may reuse its buffer at once, also when it is a
 * Node Buffer (whose slice() is a view, not a copy).
 */
import { Buffer } from "node:buffer";
import { describe, expect, it } from "vitest";
import { ChannelSet } from "../../src/channels/index.js";
import { decodeFrames } from "./harness.js";

const MTU = 1200;
const ROOM = MTU - 13;

function written(cs: ChannelSet): Uint8Array[] {
  const out: Uint8Array[] = [];
  const bytes = new Uint8Array(2048);
  for (let i = 0; i < 20 && cs.hasPending(0); i++) {
    const c = cs.acquireContents();
    const n = cs.writeFrames(0, bytes, 0, ROOM, c);
    for (const f of decodeFrames(bytes, 0, n)) out.push(f.payload.slice());
    cs.releaseContents(c);
  }
  return out;
}

describe("send copies the caller's bytes", () => {
  for (const size of [100, 3000]) {
    it(`a ${size} B Buffer reused after send()`, () => {
      const cs = new ChannelSet({ channels: [{ mode: "reliable-ordered" }], mtu: MTU, maxReceiveBufferBytes: 1 << 20 });
      const data = Buffer.alloc(size, 7);
      cs.send(0, 0, data);
      data.fill(9);
      const payloads = written(cs);
      expect(payloads.length).toBeGreaterThan(0);
      expect(payloads.reduce((n, p) => n + p.length, 0)).toBe(size);
      for (const p of payloads) expect(p.every((b) => b === 7)).toBe(true);
    });
    it(`a ${size} B Buffer reused after a delayed send()`, () => {
      const cs = new ChannelSet({ channels: [{ mode: "reliable-ordered" }], mtu: MTU, maxReceiveBufferBytes: 1 << 20 });
      const data = Buffer.alloc(size, 7);
      cs.send(0, 0, data, { delayMs: 5 });
      data.fill(9);
      cs.releaseDue(5);
      const payloads = written(cs);
      expect(payloads.reduce((n, p) => n + p.length, 0)).toBe(size);
      for (const p of payloads) expect(p.every((b) => b === 7)).toBe(true);
    });
  }
});
