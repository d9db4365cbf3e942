/**
 * A compact binary codec for RPC parameters and results: null, booleans, numbers, strings,
 * bytes, arrays and string-keyed maps (plain objects).
 *
 * Why not JSON: game RPC carries bytes (snapshots, replays) that JSON would have to base64
 * (+33%), small integers are 1 byte here instead of their decimal text, and the decoder enforces
 * its own depth and count limits against hostile input instead of trusting JSON.parse.
 *
 * Encoding: one tag byte per value, then
 *   0 null | 1 false | 2 true
 *   3 non-negative safe integer: varuint
 *   4 negative safe integer n: varuint(-n - 1)
 *   5 other number (fractions, NaN, ±Infinity, -0, beyond 2^53): float64 LE
 *   6 string: varuint byte length, UTF-8
 *   7 bytes: varuint length, raw bytes
 *   8 array: varuint count, then each value
 *   9 map: varuint count, then (string key without tag, value) pairs
 * `undefined` encodes as null; object fields whose value is undefined are skipped (as in JSON).
 *
 * Objects: only plain ones (prototype Object.prototype or null) are maps. Anything else (Map,
 * Set, Date, ArrayBuffer, DataView, typed arrays other than Uint8Array, class instances) throws
 * CodecError: taking their own enumerable fields would send `{}` for a Map or a Date and
 * `{"0": ...}` for a Float32Array, which arrive as something else without a word. Convert them
 * first (`[...map]`, `date.getTime()`, `new Uint8Array(floats.buffer)`).
 */
import { ByteReader, ByteWriter } from "./bytes.js";
import { ByteReadError, CodecError } from "./errors.js";

export type Value = null | boolean | number | string | Uint8Array | Value[] | { [key: string]: Value | undefined };

/** Deepest nesting of arrays and maps either way (the decoder recurses). */
export const MAX_CODEC_DEPTH = 32;

const enum Tag {
  Null = 0,
  False = 1,
  True = 2,
  UInt = 3,
  NegInt = 4,
  Float = 5,
  String = 6,
  Bytes = 7,
  Array = 8,
  Map = 9,
}

export function writeValue(w: ByteWriter, value: unknown, depth = 0): void {
  if (value === null || value === undefined) {
    w.u8(Tag.Null);
  } else if (value === false) {
    w.u8(Tag.False);
  } else if (value === true) {
    w.u8(Tag.True);
  } else if (typeof value === "number") {
    if (Number.isSafeInteger(value) && !Object.is(value, -0)) {
      if (value >= 0) w.u8(Tag.UInt).varuint(value);
      else w.u8(Tag.NegInt).varuint(-value - 1);
    } else {
      w.u8(Tag.Float).f64(value);
    }
  } else if (typeof value === "string") {
    w.u8(Tag.String).string(value);
  } else if (value instanceof Uint8Array) {
    w.u8(Tag.Bytes).blob(value);
  } else if (typeof value === "object") {
    if (depth >= MAX_CODEC_DEPTH) throw new CodecError(`value nested deeper than ${MAX_CODEC_DEPTH} levels (or a cycle): flatten it`);
    if (Array.isArray(value)) {
      w.u8(Tag.Array).varuint(value.length);
      for (const item of value) writeValue(w, item, depth + 1);
    } else {
      const proto = Object.getPrototypeOf(value) as unknown;
      if (proto !== Object.prototype && proto !== null) throw new CodecError(`cannot encode ${describeObject(value)}: use null, booleans, numbers, strings, Uint8Array, arrays or plain objects (convert a Map, Set, Date or other typed array first)`);
      const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
      w.u8(Tag.Map).varuint(entries.length);
      for (const [key, item] of entries) {
        w.string(key);
        writeValue(w, item, depth + 1);
      }
    }
  } else {
    throw new CodecError(`cannot encode a ${typeof value}: use null, booleans, numbers, strings, Uint8Array, arrays or plain objects`);
  }
}

/** "a Map", "a Float32Array"... for the error message; never throws. */
function describeObject(value: object): string {
  try {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === "string" && name !== "" ? `a ${name}` : "an object that is not a plain object";
  } catch {
    return "an object that is not a plain object";
  }
}

/** Reads one value; throws ByteReadError on bad input. Strings/bytes are copies. */
export function readValue(r: ByteReader, depth = 0): Value {
  const at = r.offset;
  const tag = r.u8();
  switch (tag) {
    case Tag.Null:
      return null;
    case Tag.False:
      return false;
    case Tag.True:
      return true;
    case Tag.UInt:
      return r.varuint();
    case Tag.NegInt:
      return -r.varuint() - 1;
    case Tag.Float:
      return r.f64();
    case Tag.String:
      return r.string(r.remaining);
    case Tag.Bytes:
      return r.blob(r.remaining);
    case Tag.Array: {
      if (depth >= MAX_CODEC_DEPTH) throw new ByteReadError("malformed", at, `nested deeper than ${MAX_CODEC_DEPTH} levels`);
      const n = r.varuint();
      // Every item takes at least one byte: a count beyond what is left is a lie.
      if (n > r.remaining) throw new ByteReadError("malformed", at, `array of ${n} items in ${r.remaining} bytes`);
      const out: Value[] = new Array<Value>(n);
      for (let i = 0; i < n; i++) out[i] = readValue(r, depth + 1);
      return out;
    }
    case Tag.Map: {
      if (depth >= MAX_CODEC_DEPTH) throw new ByteReadError("malformed", at, `nested deeper than ${MAX_CODEC_DEPTH} levels`);
      const n = r.varuint();
      if (n * 2 > r.remaining) throw new ByteReadError("malformed", at, `map of ${n} entries in ${r.remaining} bytes`);
      const out: { [key: string]: Value } = {};
      for (let i = 0; i < n; i++) {
        const key = r.string(r.remaining);
        // defineProperty, not assignment: a "__proto__" key must stay a plain field.
        Object.defineProperty(out, key, { value: readValue(r, depth + 1), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    default:
      throw new ByteReadError("malformed", at, `unknown value tag ${tag}`);
  }
}

/** Encodes one value to bytes. Throws CodecError for values the codec does not carry. */
export function encodeValue(value: unknown): Uint8Array {
  const w = new ByteWriter();
  writeValue(w, value);
  return w.finish();
}

/** Decodes bytes holding exactly one value; returns undefined if they are malformed. */
export function decodeValue(bytes: Uint8Array): Value | undefined {
  try {
    const r = new ByteReader(bytes);
    const value = readValue(r);
    r.expectEnd();
    return value;
  } catch (error) {
    if (error instanceof ByteReadError) return undefined;
    throw error;
  }
}
