// ByteWriter / ByteReader (ackwire/game): typed fields round-trip, every truncation and every
// over-long varint throws ByteReadError, and the writer refuses values its field cannot hold.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ByteReadError, ByteReader, ByteWriter, GameUsageError, MAX_VARUINT_BYTES } from "../../src/game/index.js";

type Field =
  | { t: "u8" | "u16" | "u32" | "i8" | "i16" | "i32" | "f32" | "f64" | "varuint" | "varint"; v: number }
  | { t: "bool"; v: boolean }
  | { t: "string"; v: string }
  | { t: "blob"; v: Uint8Array }
  | { t: "bytes"; v: Uint8Array };

const int = (t: Field["t"], min: number, max: number) => fc.integer({ min, max }).map((v) => ({ t, v }) as Field);
const field: fc.Arbitrary<Field> = fc.oneof(
  int("u8", 0, 0xff),
  int("u16", 0, 0xffff),
  int("u32", 0, 0xffffffff),
  int("i8", -0x80, 0x7f),
  int("i16", -0x8000, 0x7fff),
  int("i32", -0x80000000, 0x7fffffff),
  fc.double().map((v) => ({ t: "f32", v }) as Field),
  fc.double().map((v) => ({ t: "f64", v }) as Field),
  fc.oneof(fc.integer({ min: 0, max: 300 }), fc.maxSafeNat()).map((v) => ({ t: "varuint", v }) as Field),
  fc.oneof(fc.integer({ min: -300, max: 300 }), fc.integer({ min: -(2 ** 52), max: 2 ** 52 - 1 }), fc.constantFrom(-(2 ** 52), 2 ** 52 - 1)).map((v) => ({ t: "varint", v }) as Field),
  fc.boolean().map((v) => ({ t: "bool", v }) as Field),
  fc.string({ unit: "binary", maxLength: 40 }).map((v) => ({ t: "string", v }) as Field),
  fc.uint8Array({ maxLength: 40 }).map((v) => ({ t: "blob", v }) as Field),
  fc.uint8Array({ minLength: 1, maxLength: 40 }).map((v) => ({ t: "bytes", v }) as Field),
);

function write(fields: Field[]): Uint8Array {
  const w = new ByteWriter(1); // grows from one byte: every reserve path runs
  for (const f of fields) {
    if (f.t === "bool") w.bool(f.v);
    else if (f.t === "string") w.string(f.v);
    else if (f.t === "blob") w.blob(f.v);
    else if (f.t === "bytes") w.bytes(f.v);
    else w[f.t](f.v);
  }
  return w.finish();
}

function read(bytes: Uint8Array, fields: Field[]): unknown[] {
  const r = new ByteReader(bytes);
  const out = fields.map((f) => (f.t === "bytes" ? r.copy(f.v.length) : f.t === "string" || f.t === "blob" ? r[f.t]() : r[f.t]()));
  r.expectEnd();
  return out;
}

/** What reading a field gives back: f32 rounds; the rest as written. */
const expected = (f: Field): unknown => (f.t === "f32" ? Math.fround(f.v) : f.v);

function expectReadError(fn: () => unknown, kind: "truncated" | "malformed"): void {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ByteReadError);
    expect((error as ByteReadError).kind).toBe(kind);
    expect((error as ByteReadError).code).toBe("ERR_GAME_READ");
    return;
  }
  throw new Error(`no ${kind} ByteReadError`);
}

describe("ByteWriter / ByteReader", () => {
  it("write then read gives back every field (fast-check)", () => {
    fc.assert(
      fc.property(fc.array(field, { maxLength: 30 }), (fields) => {
        const got = read(write(fields), fields);
        got.forEach((v, i) => {
          const want = expected(fields[i]!);
          if (typeof want === "number") expect(Object.is(v, want), `${fields[i]!.t} ${want} read as ${String(v)}`).toBe(true);
          else expect(v).toEqual(want);
        });
      }),
      { numRuns: 500 },
    );
  });

  it("any truncation throws ByteReadError (truncated), never another error (fast-check)", () => {
    fc.assert(
      fc.property(fc.array(field, { minLength: 1, maxLength: 12 }), fc.nat(), (fields, cut) => {
        const bytes = write(fields);
        const at = cut % bytes.length; // 0 .. length-1: at least the last byte is missing
        expectReadError(() => read(bytes.subarray(0, at), fields), "truncated");
      }),
      { numRuns: 500 },
    );
  });

  it("a varuint over 8 bytes, or past 2^53-1, is malformed; the longest valid one reads (fast-check)", () => {
    fc.assert(
      fc.property(fc.integer({ min: MAX_VARUINT_BYTES, max: 20 }), fc.uint8Array({ minLength: 20, maxLength: 20 }), (continued, low) => {
        // `continued` bytes with the continuation bit set, then a last byte: too long.
        const bytes = Uint8Array.from([...low.subarray(0, continued)].map((b) => b | 0x80).concat([low[19]! & 0x7f]));
        expectReadError(() => new ByteReader(bytes).varuint(), "malformed");
        expectReadError(() => new ByteReader(bytes).varint(), "malformed");
        expectReadError(() => new ByteReader(bytes).string(), "malformed");
      }),
    );
    // 8 bytes carrying 2^53 (one past the largest safe integer): malformed.
    const w = new ByteWriter();
    w.varuint(Number.MAX_SAFE_INTEGER);
    const max = w.finish();
    expect(max.length).toBe(MAX_VARUINT_BYTES);
    expect(new ByteReader(max).varuint()).toBe(Number.MAX_SAFE_INTEGER);
    const past = Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10); // 0x10 << 49 = 2^53
    expectReadError(() => new ByteReader(past).varuint(), "malformed");
  });

  it("zigzag keeps small magnitudes short, and the other malformed inputs throw", () => {
    const len = (v: number) => new ByteWriter().varint(v).length;
    expect([0, -1, 1, -64, 63].map(len)).toEqual([1, 1, 1, 1, 1]);
    expect([-65, 64].map(len)).toEqual([2, 2]);
    expect([...new ByteWriter().varint(-1).varint(1).varint(-2).finish()]).toEqual([1, 2, 3]);
    expectReadError(() => new ByteReader(Uint8Array.of(2)).bool(), "malformed");
    expectReadError(() => new ByteReader(Uint8Array.of(2, 0xc3, 0x28)).string(), "malformed"); // invalid UTF-8
    expectReadError(() => new ByteReader(Uint8Array.of(3, 1, 2, 3)).blob(2), "malformed"); // over its limit
    expectReadError(() => new ByteReader(Uint8Array.of(0x7f, 1)).blob(), "truncated"); // longer than the message
    const r = new ByteReader(Uint8Array.of(1, 2));
    r.u8();
    expectReadError(() => r.expectEnd(), "malformed");
    const e = (() => {
      try {
        new ByteReader(Uint8Array.of(1, 2, 3)).u32();
      } catch (error) {
        return error as ByteReadError;
      }
    })();
    expect(e?.offset).toBe(0);
    expect(e?.message).toMatch(/read past the end of the message at byte 0 \(u32 needs 4 bytes, 3 left\)/);
  });

  it("the writer refuses a value its field cannot hold (fast-check)", () => {
    const ranges: [keyof ByteWriter, number, number][] = [
      ["u8", 0, 0xff],
      ["u16", 0, 0xffff],
      ["u32", 0, 0xffffffff],
      ["i8", -0x80, 0x7f],
      ["i16", -0x8000, 0x7fff],
      ["i32", -0x80000000, 0x7fffffff],
      ["varuint", 0, Number.MAX_SAFE_INTEGER],
      ["varint", -(2 ** 52), 2 ** 52 - 1],
    ];
    for (const [name, min, max] of ranges) {
      const put = (v: number) => (new ByteWriter()[name] as (v: number) => ByteWriter)(v);
      expect(() => put(min - 1), `${name} ${min - 1}`).toThrow(GameUsageError);
      expect(() => put(max + 1), `${name} ${max + 1}`).toThrow(GameUsageError);
      expect(() => put(0.5), `${name} 0.5`).toThrow(GameUsageError);
      expect(() => put(NaN), `${name} NaN`).toThrow(GameUsageError);
      fc.assert(fc.property(fc.integer({ min: Math.max(min, -(2 ** 53) + 1), max: Math.min(max, 2 ** 53 - 1) }), (v) => void put(v)), { numRuns: 50 });
    }
    expect(() => new ByteWriter().bool(1 as unknown as boolean)).toThrow(GameUsageError);
    expect(() => new ByteWriter().string(5 as unknown as string)).toThrow(GameUsageError);
    expect(() => new ByteWriter().blob([1, 2] as unknown as Uint8Array)).toThrow(GameUsageError);
    const w = new ByteWriter().u8(1).u8(2);
    expect(w.reset().u8(3).finish()).toEqual(Uint8Array.of(3));
  });
});
