import { describe, expect, it } from "vitest";
import { cookiesEqual, sipHash128, sipHash64, type SipKey } from "../../src/session/cookie.js";

// Reference key 00 01 .. 0f as little-endian words.
const KEY: SipKey = [0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c];
const message = (n: number) => Uint8Array.from({ length: n }, (_, i) => i);
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("SipHash-2-4 reference vectors (key 00..0f, message 00..len-1)", () => {
  it("64-bit output", () => {
    const out = new Uint8Array(8);
    const expected = ["310e0edd47db6f72", "fd67dc93c539f874", "5a4fa9d909806c0d"];
    expected.forEach((want, len) => {
      sipHash64(KEY, message(len), 0, len, out);
      expect(hex(out), `len ${len}`).toBe(want);
    });
    // The SipHash paper's worked example: 15-byte message, output 0xa129ca6149be45e5.
    sipHash64(KEY, message(15), 0, 15, out);
    expect(hex(out)).toBe("e545be4961ca29a1");
  });

  it("128-bit output", () => {
    const out = new Uint8Array(16);
    const expected = [
      "a3817f04ba25a8e66df67214c7550293",
      "da87c1d86b99af44347659119b22fc45",
      "8177228da4a45dc7fca38bdef60affe4",
    ];
    expected.forEach((want, len) => {
      sipHash128(KEY, message(len), 0, len, out);
      expect(hex(out), `len ${len}`).toBe(want);
    });
  });

  it("reads from an offset and is sensitive to every input bit", () => {
    const buf = new Uint8Array(64);
    buf.set(message(20), 7);
    const a = new Uint8Array(16);
    const b = new Uint8Array(16);
    sipHash128(KEY, buf, 7, 20, a);
    sipHash128(KEY, message(20), 0, 20, b);
    expect(cookiesEqual(a, 0, b, 0)).toBe(true);
    buf[7 + 19] ^= 1;
    sipHash128(KEY, buf, 7, 20, a);
    expect(cookiesEqual(a, 0, b, 0)).toBe(false);
  });
});
