/**
 * A little-endian writer and a bounds-checked reader for game messages, also the base of the
 * game layer's own wire formats (lockstep, discovery, RPC and its codec, lobby).
 *
 * Fields: u8 u16 u32 i8 i16 i32 f32 f64, bool (one byte, 0 or 1), varuint (unsigned LEB128:
 * 7 bits per byte, low bits first, at most 8 bytes, values 0..2^53-1), varint (a signed integer
 * zigzag-mapped to a varuint: 0, -1, 1, -2... -> 0, 1, 2, 3..., values -2^52..2^52-1), bytes
 * (raw, the reader is told the count), blob (varuint length, then the bytes) and string (varuint
 * byte length, then UTF-8).
 *
 * The writer grows as needed and refuses a value its field cannot hold (GameUsageError): a
 * number silently wrapped into a u16 is a desync later. The reader throws ByteReadError on any
 * read past the end (`kind: "truncated"`) or invalid input (`"malformed"`: a varuint over 8
 * bytes or past 2^53, a bool byte other than 0/1, invalid UTF-8, a length over its limit).
 */
import { ByteReadError, GameUsageError } from "./errors.js";

interface Utf8 {
  TextEncoder: new () => { encode(text: string): Uint8Array };
  TextDecoder: new (label: string, options: { fatal: boolean }) => { decode(bytes: Uint8Array): string };
}
// Present on Node, Bun and Deno; typed locally because the project compiles with "types": [].
const utf8 = globalThis as unknown as Utf8;
const encoder = new utf8.TextEncoder();
const decoder = new utf8.TextDecoder("utf-8", { fatal: true });

/** Longest varuint: 8 bytes carry 56 bits, enough for every safe integer. */
export const MAX_VARUINT_BYTES = 8;
/** varint's range: its zigzag image (2|n| or 2|n|-1) must stay a safe integer. */
const VARINT_MAX = 2 ** 52 - 1;
const VARINT_MIN = -(2 ** 52);

export function encodeUtf8(text: string): Uint8Array {
  return encoder.encode(text);
}

function checkInt(field: string, v: number, min: number, max: number): void {
  if (!(Number.isInteger(v) && v >= min && v <= max)) throw new GameUsageError(`${field} takes an integer in ${min}..${max}, got ${String(v)}: check the value, or use a wider field`);
}

export class ByteWriter {
  private buf: Uint8Array;
  private view: DataView;
  /** Bytes written so far. */
  length = 0;

  constructor(initial = 64) {
    this.buf = new Uint8Array(Math.max(1, initial));
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
    checkInt("u8", v, 0, 0xff);
    this.reserve(1);
    this.buf[this.length++] = v;
    return this;
  }
  u16(v: number): this {
    checkInt("u16", v, 0, 0xffff);
    this.reserve(2);
    this.view.setUint16(this.length, v, true);
    this.length += 2;
    return this;
  }
  u32(v: number): this {
    checkInt("u32", v, 0, 0xffffffff);
    this.reserve(4);
    this.view.setUint32(this.length, v, true);
    this.length += 4;
    return this;
  }
  i8(v: number): this {
    checkInt("i8", v, -0x80, 0x7f);
    this.reserve(1);
    this.view.setInt8(this.length++, v);
    return this;
  }
  i16(v: number): this {
    checkInt("i16", v, -0x8000, 0x7fff);
    this.reserve(2);
    this.view.setInt16(this.length, v, true);
    this.length += 2;
    return this;
  }
  i32(v: number): this {
    checkInt("i32", v, -0x80000000, 0x7fffffff);
    this.reserve(4);
    this.view.setInt32(this.length, v, true);
    this.length += 4;
    return this;
  }
  /** float32: rounds to the nearest float32 (NaN and ±Infinity pass). */
  f32(v: number): this {
    if (typeof v !== "number") throw new GameUsageError(`f32 takes a number, got ${typeof v}`);
    this.reserve(4);
    this.view.setFloat32(this.length, v, true);
    this.length += 4;
    return this;
  }
  f64(v: number): this {
    if (typeof v !== "number") throw new GameUsageError(`f64 takes a number, got ${typeof v}`);
    this.reserve(8);
    this.view.setFloat64(this.length, v, true);
    this.length += 8;
    return this;
  }
  bool(v: boolean): this {
    if (typeof v !== "boolean") throw new GameUsageError(`bool takes true or false, got ${typeof v}`);
    return this.u8(v ? 1 : 0);
  }
  /** Unsigned LEB128 for 0..2^53-1 (arithmetic, not bit ops, so values above 2^32 work). */
  varuint(v: number): this {
    checkInt("varuint", v, 0, Number.MAX_SAFE_INTEGER);
    this.reserve(MAX_VARUINT_BYTES);
    while (v >= 0x80) {
      this.buf[this.length++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.length++] = v;
    return this;
  }
  /** Signed, zigzag then LEB128 (small magnitudes either side of 0 take one byte); -2^52..2^52-1. */
  varint(v: number): this {
    checkInt("varint", v, VARINT_MIN, VARINT_MAX);
    return this.varuint(v >= 0 ? v * 2 : -v * 2 - 1);
  }
  /** The bytes as they are (the reader must know how many: see blob()). */
  bytes(b: Uint8Array): this {
    if (!(b instanceof Uint8Array)) throw new GameUsageError(`bytes takes a Uint8Array, got ${b === null ? "null" : typeof b}`);
    this.reserve(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
    return this;
  }
  /** varuint length, then the bytes. */
  blob(b: Uint8Array): this {
    if (!(b instanceof Uint8Array)) throw new GameUsageError(`blob takes a Uint8Array, got ${b === null ? "null" : typeof b}`);
    return this.varuint(b.length).bytes(b);
  }
  /** varuint byte length, then UTF-8 (lone surrogates become U+FFFD). */
  string(text: string): this {
    if (typeof text !== "string") throw new GameUsageError(`string takes a string, got ${text === null ? "null" : typeof text}`);
    return this.blob(encodeUtf8(text));
  }
  zeros(n: number): this {
    checkInt("zeros", n, 0, 2 ** 31 - 1);
    this.reserve(n);
    this.buf.fill(0, this.length, this.length + n);
    this.length += n;
    return this;
  }
  /** A copy of what was written. */
  finish(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
  /** Starts over, keeping the buffer (one writer reused per tick allocates once). */
  reset(): this {
    this.length = 0;
    return this;
  }
}

export class ByteReader {
  readonly bytes: Uint8Array;
  private readonly view: DataView;
  offset: number;
  readonly end: number;

  /** Reads `bytes[offset .. end)`. */
  constructor(bytes: Uint8Array, offset = 0, end = bytes.length) {
    if (!(bytes instanceof Uint8Array)) throw new GameUsageError(`ByteReader reads a Uint8Array, got ${bytes === null ? "null" : typeof bytes}`);
    if (!(Number.isInteger(offset) && Number.isInteger(end) && offset >= 0 && offset <= end && end <= bytes.length)) {
      throw new GameUsageError(`ByteReader: offset and end must be integers with 0 <= offset <= end <= ${bytes.length}, got ${offset} and ${end}`);
    }
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.offset = offset;
    this.end = end;
  }

  get remaining(): number {
    return this.end - this.offset;
  }
  private need(n: number, field: string): void {
    if (this.offset + n > this.end) throw new ByteReadError("truncated", this.offset, `${field} needs ${n} bytes, ${this.end - this.offset} left`);
  }
  u8(): number {
    this.need(1, "u8");
    return this.bytes[this.offset++]!;
  }
  u16(): number {
    this.need(2, "u16");
    const v = this.view.getUint16(this.offset, true);
    this.offset += 2;
    return v;
  }
  u32(): number {
    this.need(4, "u32");
    const v = this.view.getUint32(this.offset, true);
    this.offset += 4;
    return v;
  }
  i8(): number {
    this.need(1, "i8");
    return this.view.getInt8(this.offset++);
  }
  i16(): number {
    this.need(2, "i16");
    const v = this.view.getInt16(this.offset, true);
    this.offset += 2;
    return v;
  }
  i32(): number {
    this.need(4, "i32");
    const v = this.view.getInt32(this.offset, true);
    this.offset += 4;
    return v;
  }
  f32(): number {
    this.need(4, "f32");
    const v = this.view.getFloat32(this.offset, true);
    this.offset += 4;
    return v;
  }
  f64(): number {
    this.need(8, "f64");
    const v = this.view.getFloat64(this.offset, true);
    this.offset += 8;
    return v;
  }
  bool(): boolean {
    const at = this.offset;
    const b = this.u8();
    if (b > 1) throw new ByteReadError("malformed", at, `bool byte is ${b}, not 0 or 1`);
    return b === 1;
  }
  /** Unsigned LEB128, at most 8 bytes (56 bits), value must stay a safe integer. */
  varuint(): number {
    const at = this.offset;
    let value = 0;
    let scale = 1;
    for (let i = 0; i < MAX_VARUINT_BYTES; i++) {
      this.need(1, "varuint");
      const b = this.bytes[this.offset++]!;
      value += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) {
        if (!Number.isSafeInteger(value)) throw new ByteReadError("malformed", at, "varuint past 2^53-1");
        return value;
      }
      scale *= 0x80;
    }
    throw new ByteReadError("malformed", at, `varuint longer than ${MAX_VARUINT_BYTES} bytes`);
  }
  /** Zigzag-signed varint (see ByteWriter.varint). */
  varint(): number {
    const u = this.varuint();
    return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
  }
  /** A view of the next `n` bytes (no copy: valid while `bytes` is). */
  take(n: number): Uint8Array {
    if (!(Number.isInteger(n) && n >= 0)) throw new GameUsageError(`take() takes a byte count (an integer >= 0), got ${String(n)}`);
    this.need(n, "bytes");
    const out = this.bytes.subarray(this.offset, this.offset + n);
    this.offset += n;
    return out;
  }
  /** A copy of the next `n` bytes. */
  copy(n: number): Uint8Array {
    return this.take(n).slice();
  }
  /** A copy of a varuint-length-prefixed byte string, at most `limit` bytes (a length past the
   *  end is "truncated", one over `limit` "malformed"; nothing is allocated before the check). */
  blob(limit = Infinity): Uint8Array {
    const at = this.offset;
    const n = this.varuint();
    if (n > limit) throw new ByteReadError("malformed", at, `blob of ${n} bytes, over its limit of ${limit}`);
    return this.take(n).slice();
  }
  /** A varuint-length-prefixed UTF-8 string of at most `limit` bytes (errors as blob()'s). */
  string(limit = Infinity): string {
    const at = this.offset;
    const n = this.varuint();
    if (n > limit) throw new ByteReadError("malformed", at, `string of ${n} bytes, over its limit of ${limit}`);
    const bytes = this.take(n);
    try {
      return decoder.decode(bytes);
    } catch {
      throw new ByteReadError("malformed", at, "string is not valid UTF-8");
    }
  }
  /** Throws ByteReadError ("malformed") unless everything was read. */
  expectEnd(): void {
    if (this.offset !== this.end) throw new ByteReadError("malformed", this.offset, `${this.end - this.offset} bytes left over after the last field`);
  }
}
