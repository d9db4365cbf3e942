/**
 * Little-endian byte writer and bounds-checked reader shared by the game layer's small wire
 * formats (lockstep, discovery, RPC, lobby). All integers are little-endian like the transport's
 * own wire format; variable-length integers are LEB128 (7 bits per byte, low bits first).
 *
 * The reader throws `Malformed` on any short or invalid input. It is internal: every receive
 * path catches it, counts the message as malformed and drops it, so it never reaches the app.
 */

/** Thrown by ByteReader on bad input; caught by the receiving module, never surfaced. */
export class Malformed extends Error {}

interface Utf8 {
  TextEncoder: new () => { encode(text: string): Uint8Array };
  TextDecoder: new (label: string, options: { fatal: boolean }) => { decode(bytes: Uint8Array): string };
}
// Present on Node, Bun and Deno; typed locally because the project compiles with "types": [].
const utf8 = globalThis as unknown as Utf8;
const encoder = new utf8.TextEncoder();
const decoder = new utf8.TextDecoder("utf-8", { fatal: true });

export function encodeUtf8(text: string): Uint8Array {
  return encoder.encode(text);
}

export class ByteWriter {
  private buf: Uint8Array;
  private view: DataView;
  length = 0;

  constructor(initial = 64) {
    this.buf = new Uint8Array(initial);
    this.view = new DataView(this.buf.buffer);
  }

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  u8(v: number): this {
    this.reserve(1);
    this.buf[this.length++] = v;
    return this;
  }
  u16(v: number): this {
    this.reserve(2);
    this.view.setUint16(this.length, v, true);
    this.length += 2;
    return this;
  }
  u32(v: number): this {
    this.reserve(4);
    this.view.setUint32(this.length, v >>> 0, true);
    this.length += 4;
    return this;
  }
  f64(v: number): this {
    this.reserve(8);
    this.view.setFloat64(this.length, v, true);
    this.length += 8;
    return this;
  }
  /** Unsigned LEB128 for 0..2^53-1 (arithmetic, not bit ops, so values above 2^32 work). */
  varuint(v: number): this {
    this.reserve(8);
    while (v >= 0x80) {
      this.buf[this.length++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.length++] = v;
    return this;
  }
  bytes(b: Uint8Array): this {
    this.reserve(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
    return this;
  }
  /** varuint length, then the bytes. */
  blob(b: Uint8Array): this {
    return this.varuint(b.length).bytes(b);
  }
  string(text: string): this {
    return this.blob(encodeUtf8(text));
  }
  zeros(n: number): this {
    this.reserve(n);
    this.buf.fill(0, this.length, this.length + n);
    this.length += n;
    return this;
  }
  /** A copy of what was written. */
  finish(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

export class ByteReader {
  readonly bytes: Uint8Array;
  private readonly view: DataView;
  offset: number;
  readonly end: number;

  constructor(bytes: Uint8Array, offset = 0, end = bytes.length) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.offset = offset;
    this.end = end;
  }

  get remaining(): number {
    return this.end - this.offset;
  }
  private need(n: number): void {
    if (n < 0 || this.offset + n > this.end) throw new Malformed("short input");
  }
  u8(): number {
    this.need(1);
    return this.bytes[this.offset++]!;
  }
  u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.offset, true);
    this.offset += 2;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.offset, true);
    this.offset += 4;
    return v;
  }
  f64(): number {
    this.need(8);
    const v = this.view.getFloat64(this.offset, true);
    this.offset += 8;
    return v;
  }
  /** Unsigned LEB128, at most 8 bytes (56 bits), value must stay a safe integer. */
  varuint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.u8();
      value += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) {
        if (!Number.isSafeInteger(value)) throw new Malformed("varuint too large");
        return value;
      }
      scale *= 0x80;
    }
    throw new Malformed("varuint too long");
  }
  take(n: number): Uint8Array {
    this.need(n);
    const out = this.bytes.subarray(this.offset, this.offset + n);
    this.offset += n;
    return out;
  }
  /** A copy of a varuint-length-prefixed byte string, at most `limit` bytes. */
  blob(limit: number): Uint8Array {
    const n = this.varuint();
    if (n > limit) throw new Malformed("blob over limit");
    return this.take(n).slice();
  }
  string(limit: number): string {
    const n = this.varuint();
    if (n > limit) throw new Malformed("string over limit");
    try {
      return decoder.decode(this.take(n));
    } catch {
      throw new Malformed("invalid UTF-8");
    }
  }
}
