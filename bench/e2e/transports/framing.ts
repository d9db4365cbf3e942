// Length-prefixed messages over a byte stream (TCP, udx streams, uTP):
//   [u32 little-endian length][length bytes]
// The writer batches a burst into one buffer (one write call per flush); the reader
// hands out views into the received chunk and only copies a frame split across chunks.

import { readU32, writeU32 } from "../../lib/payload.js";

export class FrameWriter {
  private parts: Uint8Array[] = [];
  private bytes = 0;

  push(m: Uint8Array): void {
    this.parts.push(m);
    this.bytes += 4 + m.length;
  }

  /** One buffer holding every queued frame, or null if nothing is queued. */
  take(): Uint8Array | null {
    if (this.parts.length === 0) return null;
    const out = new Uint8Array(this.bytes);
    let off = 0;
    for (const p of this.parts) {
      writeU32(out, off, p.length);
      out.set(p, off + 4);
      off += 4 + p.length;
    }
    this.parts = [];
    this.bytes = 0;
    return out;
  }
}

export class FrameReader {
  private pending: Uint8Array | null = null;

  constructor(
    private readonly deliver: (m: Uint8Array) => void,
    private readonly maxFrame = 1 << 20,
  ) {}

  push(chunk: Uint8Array): void {
    let buf = chunk;
    if (this.pending !== null) {
      buf = new Uint8Array(this.pending.length + chunk.length);
      buf.set(this.pending, 0);
      buf.set(chunk, this.pending.length);
      this.pending = null;
    }
    let off = 0;
    while (buf.length - off >= 4) {
      const len = readU32(buf, off);
      if (len > this.maxFrame) throw new Error(`frame of ${len} bytes exceeds ${this.maxFrame}: stream corrupt`);
      if (buf.length - off - 4 < len) break;
      this.deliver(buf.subarray(off + 4, off + 4 + len));
      off += 4 + len;
    }
    if (off < buf.length) this.pending = buf.slice(off);
  }
}
