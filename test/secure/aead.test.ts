/**
 * ChaCha20-Poly1305 (src/secure/aead.ts, src/secure/wasm-aead.ts): the RFC 8439 test vectors
 * through both implementations (@noble/ciphers and the WebAssembly module of assembly/aead/),
 * then wasmAead against nobleAead on random inputs (fast-check, fixed seeds): identical sealed
 * bytes, round trips, and any changed bit, associated data, packet number or key rejected.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chacha20, chacha20poly1305 } from "@noble/ciphers/chacha.js";
import { poly1305 } from "@noble/ciphers/_poly1305.js";
import { MAX_PACKET_NUMBER, packetNonce, TAG_BYTES, type PacketAead } from "../../src/secure/aead.js";
import { nobleAead } from "../../src/secure/noble-aead.js";
import {
  WASM_AEAD_MAX_AD,
  WASM_AEAD_MAX_PLAINTEXT,
  wasmAead,
  wasmAeadInternals,
} from "../../src/secure/wasm-aead.js";

function hex(text: string): Uint8Array {
  const clean = text.replace(/\s+/g, "");
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(2 * i, 2 * i + 2), 16);
  return out;
}
function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
const ascii = (text: string): Uint8Array => Uint8Array.from(text, (c) => c.charCodeAt(0));
const concat = (a: Uint8Array, b: Uint8Array): Uint8Array => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
};
const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/** The primitives behind each implementation, with any 12-byte nonce (the RFC vectors need it). */
interface Primitives {
  seal(key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, plaintext: Uint8Array): Uint8Array;
  open(key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, sealed: Uint8Array): Uint8Array | null;
  chacha20(key: Uint8Array, nonce: Uint8Array, counter: number, data: Uint8Array): Uint8Array;
  poly1305(key: Uint8Array, message: Uint8Array): Uint8Array;
}

const noblePrimitives: Primitives = {
  seal: (key, nonce, ad, plaintext) => chacha20poly1305(key, nonce, ad).encrypt(plaintext),
  open: (key, nonce, ad, sealed) => {
    try {
      return chacha20poly1305(key, nonce, ad).decrypt(sealed);
    } catch {
      return null;
    }
  },
  chacha20: (key, nonce, counter, data) => chacha20(key, nonce, data, undefined, counter),
  poly1305: (key, message) => poly1305(message, key),
};

const implementations: [string, Primitives, PacketAead][] = [
  ["noble", noblePrimitives, nobleAead],
  ["wasm", wasmAeadInternals, wasmAead],
];

// RFC 8439 §2.4.2 / §2.8.2 plaintext.
const SUNSCREEN = ascii(
  "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.",
);
// RFC 8439 Appendix A.3 vectors #2 and #3.
const IETF_TEXT = ascii(
  "Any submission to the IETF intended by the Contributor for publication as all or part of an IETF " +
    "Internet-Draft or RFC and any statement made within the context of an IETF activity is considered an " +
    '"IETF Contribution". Such statements include oral statements in IETF sessions, as well as written and ' +
    "electronic communications made at any time or place, which are addressed to",
);
// RFC 8439 Appendix A.3 vector #4.
const JABBERWOCKY = ascii(
  "'Twas brillig, and the slithy toves\nDid gyre and gimble in the wabe:\nAll mimsy were the borogoves,\n" +
    "And the mome raths outgrabe.",
);

/** RFC 8439 Appendix A.3: [key (r || s), message, tag]. */
const POLY1305_EDGE_CASES: [string, Uint8Array, string][] = [
  ["00".repeat(32), new Uint8Array(64), "00000000000000000000000000000000"],
  ["00".repeat(16) + "36e5f6b5c5e06070f0efca96227a863e", IETF_TEXT, "36e5f6b5c5e06070f0efca96227a863e"],
  ["36e5f6b5c5e06070f0efca96227a863e" + "00".repeat(16), IETF_TEXT, "f3477e7cd95417af89a6b8794c310cf0"],
  [
    "1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0",
    JABBERWOCKY,
    "4541669a7eaaee61e708dc7cbcc5eb62",
  ],
  // #5: partially reduced result not fully reduced.
  ["02" + "00".repeat(31), hex("ff".repeat(16)), "03000000000000000000000000000000"],
  // #6: h + s overflows 2^128.
  ["02" + "00".repeat(15) + "ff".repeat(16), hex("02" + "00".repeat(15)), "03000000000000000000000000000000"],
  // #7: an all-ones data limb with a carry from the limb below.
  ["01" + "00".repeat(31), hex("ff".repeat(16) + "f0" + "ff".repeat(15) + "11" + "00".repeat(15)), "05000000000000000000000000000000"],
  // #8: the polynomial part is exactly 2^130 - 5.
  ["01" + "00".repeat(31), hex("ff".repeat(16) + "fb" + "fe".repeat(15) + "01".repeat(16)), "00000000000000000000000000000000"],
  // #9: the polynomial part is exactly 2^130 - 6.
  ["02" + "00".repeat(31), hex("fd" + "ff".repeat(15)), "faffffffffffffffffffffffffffffff"],
  // #10: 5*H + L reduction with a 131-bit intermediate result.
  [
    "0100000000000000040000000000000000000000000000000000000000000000",
    hex(
      "e33594d7505e43b900000000000000003394d7505e4379cd0100000000000000" +
        "0000000000000000000000000000000001000000000000000000000000000000",
    ),
    "14000000000000005500000000000000",
  ],
  // #11: 5*H + L reduction with a 131-bit final result.
  [
    "0100000000000000040000000000000000000000000000000000000000000000",
    hex("e33594d7505e43b900000000000000003394d7505e4379cd010000000000000000000000000000000000000000000000"),
    "13000000000000000000000000000000",
  ],
];

describe.each(implementations)("RFC 8439 test vectors: %s", (_name, p) => {
  it("§2.4.2 ChaCha20 encryption", () => {
    const key = hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    const nonce = hex("000000000000004a00000000");
    const expected =
      "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b" +
      "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8" +
      "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736" +
      "5af90bbf74a35be6b40b8eedf2785e42874d";
    expect(toHex(p.chacha20(key, nonce, 1, SUNSCREEN))).toBe(expected);
    expect(p.chacha20(key, nonce, 1, hex(expected))).toEqual(SUNSCREEN);
  });

  it("§2.5.2 Poly1305", () => {
    const key = hex("85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b");
    expect(toHex(p.poly1305(key, ascii("Cryptographic Forum Research Group")))).toBe("a8061dc1305136c6c22b8baf0c0127a9");
  });

  it("Appendix A.3 Poly1305 edge cases #1-#11", () => {
    for (const [key, message, tag] of POLY1305_EDGE_CASES) expect(toHex(p.poly1305(hex(key), message))).toBe(tag);
  });

  it("§2.8.2 AEAD seal and open", () => {
    const key = hex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f");
    const nonce = hex("070000004041424344454647");
    const ad = hex("50515253c0c1c2c3c4c5c6c7");
    const sealed =
      "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6" +
      "3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36" +
      "92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc" +
      "3ff4def08e4b7a9de576d26586cec64b6116" +
      "1ae10b594f09e26a7e902ecbd0600691";
    expect(toHex(p.seal(key, nonce, ad, SUNSCREEN))).toBe(sealed);
    expect(p.open(key, nonce, ad, hex(sealed))).toEqual(SUNSCREEN);
    const bad = hex(sealed);
    bad[bad.length - 1] ^= 0x80;
    expect(p.open(key, nonce, ad, bad)).toBeNull();
  });

  it("Appendix A.5 AEAD decryption", () => {
    const key = hex("1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0");
    const nonce = hex("000000000102030405060708");
    const ad = hex("f33388860000000000004e91");
    const ciphertext = hex(
      "64a0861575861af460f062c79be643bd5e805cfd345cf389f108670ac76c8cb2" +
        "4c6cfc18755d43eea09ee94e382d26b0bdb7b73c321b0100d4f03b7f355894cf" +
        "332f830e710b97ce98c8a84abd0b948114ad176e008d33bd60f982b1ff37c855" +
        "9797a06ef4f0ef61c186324e2b3506383606907b6a7c02b0f9f6157b53c867e4" +
        "b9166c767b804d46a59b5216cde7a4e99040c5a40433225ee282a1b0a06c523e" +
        "af4534d7f83fa1155b0047718cbc546a0d072b04b3564eea1b422273f548271a" +
        "0bb2316053fa76991955ebd63159434ecebb4e466dae5a1073a6727627097a10" +
        "49e617d91d361094fa68f0ff77987130305beaba2eda04df997b714d6c6f2c29" +
        "a6ad5cb4022b02709b",
    );
    const tag = hex("eead9d67890cbb22392336fea1851f38");
    const plaintext = hex(
      "496e7465726e65742d4472616674732061726520647261667420646f63756d65" +
        "6e74732076616c696420666f722061206d6178696d756d206f6620736978206d" +
        "6f6e74687320616e64206d617920626520757064617465642c207265706c6163" +
        "65642c206f72206f62736f6c65746564206279206f7468657220646f63756d65" +
        "6e747320617420616e792074696d652e20497420697320696e617070726f7072" +
        "6961746520746f2075736520496e7465726e65742d4472616674732061732072" +
        "65666572656e6365206d6174657269616c206f7220746f206369746520746865" +
        "6d206f74686572207468616e206173202fe2809c776f726b20696e2070726f67" +
        "726573732e2fe2809d",
    );
    const sealed = concat(ciphertext, tag);
    expect(p.open(key, nonce, ad, sealed)).toEqual(plaintext);
    expect(p.seal(key, nonce, ad, plaintext)).toEqual(sealed);
    for (const bit of [0, 8 * 100 + 3, 8 * ciphertext.length, 8 * sealed.length - 1]) {
      const bad = sealed.slice();
      bad[bit >> 3] ^= 1 << (bit & 7);
      expect(p.open(key, nonce, ad, bad)).toBeNull();
    }
  });
});

describe.each(implementations)("PacketAead: %s", (_name, p, aead) => {
  it("uses the nonce 0^4 || pn as u64 little-endian", () => {
    expect(toHex(packetNonce(0))).toBe("000000000000000000000000");
    expect(toHex(packetNonce(0x0102_0304_0506))).toBe("000000000605040302010000");
    expect(toHex(packetNonce(MAX_PACKET_NUMBER))).toBe("00000000ffffffffffff1f00");
    const key = hex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f");
    const ad = hex("50515253c0c1c2c3c4c5c6c7");
    for (const pn of [0, 1, 0xffff_ffff, 0x1_0000_0000, 0x1_0000_0001, 0x0102_0304_0506, MAX_PACKET_NUMBER]) {
      const out = new Uint8Array(SUNSCREEN.length + TAG_BYTES);
      expect(aead.seal(key, pn, ad, SUNSCREEN, out, 0)).toBe(out.length);
      expect(out).toEqual(p.seal(key, packetNonce(pn), ad, SUNSCREEN));
    }
  });

  it("packet numbers differing only in the high word give different ciphertexts", () => {
    const key = new Uint8Array(32).fill(3);
    const a = new Uint8Array(48);
    const b = new Uint8Array(48);
    aead.seal(key, 5, new Uint8Array(0), new Uint8Array(32), a, 0);
    aead.seal(key, 5 + 0x1_0000_0000, new Uint8Array(0), new Uint8Array(32), b, 0);
    expect(sameBytes(a, b)).toBe(false);
    expect(aead.open(key, 5 + 0x1_0000_0000, new Uint8Array(0), a, new Uint8Array(32))).toBe(-1);
  });

  it("open() returns -1 and never throws on arbitrary bytes", () => {
    const out = new Uint8Array(4096);
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.maxSafeNat(),
        fc.uint8Array({ maxLength: 80 }),
        fc.integer({ min: 0, max: 2200 }).chain((n) => fc.uint8Array({ minLength: n, maxLength: n })),
        (key, pn, ad, sealed) => {
          expect(aead.open(key, pn, ad, sealed, out)).toBe(-1);
        },
      ),
      { seed: 7, numRuns: 300 },
    );
  });
});

// Lengths around every boundary of the implementation (16-byte Poly1305 blocks, 64-byte ChaCha20
// blocks, the 192 bytes of the first 4-block group, 256-byte groups) and of the packet sizes.
const EDGE_LENGTHS = [0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 191, 192, 193, 255, 256, 257, 447, 448, 449, 1199, 1200, 1500];

const packetNumber = fc.oneof(
  fc.maxSafeNat(),
  fc.constantFrom(0, 1, 0xffff_ffff, 0x1_0000_0000, MAX_PACKET_NUMBER),
  fc.integer({ min: -1000, max: 1000 }).map((d) => 0x1_0000_0000 + d),
  fc.nat(1000).map((d) => MAX_PACKET_NUMBER - d),
  fc.nat(1000),
);
const bytesOfLength = (n: number) => fc.uint8Array({ minLength: n, maxLength: n });
const plaintextArb = fc
  .oneof(fc.integer({ min: 0, max: 1500 }), fc.constantFrom(...EDGE_LENGTHS))
  .chain(bytesOfLength);
const adArb = fc.integer({ min: 0, max: WASM_AEAD_MAX_AD }).chain(bytesOfLength);
const keyArb = bytesOfLength(32);

describe("wasmAead against nobleAead", () => {
  it("identical sealed bytes; both open both; any changed bit, AD, pn or key is rejected", () => {
    fc.assert(
      fc.property(
        keyArb,
        packetNumber,
        adArb,
        plaintextArb,
        fc.nat(),
        fc.nat(),
        fc.nat(),
        fc.nat(31 * 8 + 7),
        fc.nat(8),
        (key, pn, ad, plaintext, sealedBit, adBit, otherPnSeed, keyBit, outOffset) => {
          const n = plaintext.length + TAG_BYTES;
          const fromWasm = new Uint8Array(outOffset + n + 5).fill(0xa5);
          const fromNoble = new Uint8Array(n);
          expect(wasmAead.seal(key, pn, ad, plaintext, fromWasm, outOffset)).toBe(n);
          expect(nobleAead.seal(key, pn, ad, plaintext, fromNoble, 0)).toBe(n);
          const sealed = fromWasm.subarray(outOffset, outOffset + n);
          expect(toHex(sealed)).toBe(toHex(fromNoble));
          // Bytes around the written range are untouched.
          expect(fromWasm.subarray(0, outOffset).every((b) => b === 0xa5)).toBe(true);
          expect(fromWasm.subarray(outOffset + n).every((b) => b === 0xa5)).toBe(true);

          const flipped = sealed.slice();
          const bit = sealedBit % (8 * n);
          flipped[bit >> 3] ^= 1 << (bit & 7);
          const otherAd = ad.slice();
          if (ad.length > 0) otherAd[(adBit % (8 * ad.length)) >> 3] ^= 1 << (adBit & 7);
          const longerAd = concat(ad.subarray(0, Math.min(ad.length, WASM_AEAD_MAX_AD - 1)), new Uint8Array(1));
          let otherPn = otherPnSeed % (MAX_PACKET_NUMBER + 1);
          if (otherPn === pn) otherPn = pn === 0 ? 1 : pn - 1;
          const otherKey = key.slice();
          otherKey[keyBit >> 3] ^= 1 << (keyBit & 7);

          for (const aead of [wasmAead, nobleAead]) {
            const out = new Uint8Array(plaintext.length + 3);
            expect(aead.open(key, pn, ad, sealed, out)).toBe(plaintext.length);
            expect(sameBytes(out.subarray(0, plaintext.length), plaintext)).toBe(true);
            expect(aead.open(key, pn, ad, flipped, out)).toBe(-1);
            if (ad.length > 0) expect(aead.open(key, pn, otherAd, sealed, out)).toBe(-1);
            if (!sameBytes(longerAd, ad)) expect(aead.open(key, pn, longerAd, sealed, out)).toBe(-1);
            expect(aead.open(key, otherPn, ad, sealed, out)).toBe(-1);
            expect(aead.open(otherKey, pn, ad, sealed, out)).toBe(-1);
            expect(aead.open(key, pn, ad, sealed.subarray(0, n - 1), out)).toBe(-1);
          }
        },
      ),
      { seed: 42, numRuns: 500 },
    );
  });

  it("ChaCha20 and Poly1305 alone agree with noble, including all-ones keys and messages", () => {
    const biasedBytes = (min: number, max: number) =>
      fc
        .array(fc.oneof(fc.constant(0xff), fc.constant(0), fc.integer({ min: 0, max: 255 })), { minLength: min, maxLength: max })
        .map((a) => Uint8Array.from(a));
    const polyKey = fc.oneof(keyArb, fc.constant(new Uint8Array(32).fill(0xff)), biasedBytes(32, 32));
    fc.assert(
      fc.property(polyKey, biasedBytes(0, 600), (key, message) => {
        expect(toHex(wasmAeadInternals.poly1305(key, message))).toBe(toHex(poly1305(message, key)));
      }),
      { seed: 42, numRuns: 500 },
    );
    fc.assert(
      fc.property(
        keyArb,
        bytesOfLength(12),
        fc.nat(1_000_000),
        fc.oneof(fc.integer({ min: 0, max: WASM_AEAD_MAX_PLAINTEXT }), fc.constantFrom(...EDGE_LENGTHS, 2048)).chain(bytesOfLength),
        (key, nonce, counter, data) => {
          const expected = chacha20(key, nonce, data, undefined, counter);
          expect(toHex(wasmAeadInternals.chacha20(key, nonce, counter, data))).toBe(toHex(expected));
        },
      ),
      { seed: 42, numRuns: 300 },
    );
  });

  it("seals in place (plaintext and out starting at the same byte)", () => {
    const key = new Uint8Array(32).map((_, i) => i * 13);
    for (const len of EDGE_LENGTHS) {
      const plaintext = new Uint8Array(len).map((_, i) => i * 7);
      const buffer = new Uint8Array(len + TAG_BYTES);
      buffer.set(plaintext);
      wasmAead.seal(key, 9, new Uint8Array(3), buffer.subarray(0, len), buffer, 0);
      const expected = new Uint8Array(len + TAG_BYTES);
      nobleAead.seal(key, 9, new Uint8Array(3), plaintext, expected, 0);
      expect(toHex(buffer)).toBe(toHex(expected));
    }
  });
});

describe("wasmAead limits", () => {
  const key = new Uint8Array(32).fill(1);
  const maxPlain = new Uint8Array(WASM_AEAD_MAX_PLAINTEXT).map((_, i) => i);
  const maxAd = new Uint8Array(WASM_AEAD_MAX_AD).fill(2);

  it("seals and opens 2048 bytes of plaintext with 64 bytes of associated data", () => {
    expect(WASM_AEAD_MAX_PLAINTEXT).toBe(2048);
    expect(WASM_AEAD_MAX_AD).toBe(64);
    const sealed = new Uint8Array(WASM_AEAD_MAX_PLAINTEXT + TAG_BYTES);
    const expected = new Uint8Array(sealed.length);
    expect(wasmAead.seal(key, 77, maxAd, maxPlain, sealed, 0)).toBe(sealed.length);
    nobleAead.seal(key, 77, maxAd, maxPlain, expected, 0);
    expect(toHex(sealed)).toBe(toHex(expected));
    const out = new Uint8Array(WASM_AEAD_MAX_PLAINTEXT);
    expect(wasmAead.open(key, 77, maxAd, sealed, out)).toBe(WASM_AEAD_MAX_PLAINTEXT);
    expect(out).toEqual(maxPlain);
  });

  it("seal throws a RangeError on anything out of range", () => {
    const out = new Uint8Array(4096);
    const seal = (k: Uint8Array, pn: number, ad: Uint8Array, pt: Uint8Array, o = out, off = 0) => () =>
      wasmAead.seal(k, pn, ad, pt, o, off);
    expect(seal(key, 0, maxAd, new Uint8Array(WASM_AEAD_MAX_PLAINTEXT + 1))).toThrow(RangeError);
    expect(seal(key, 0, new Uint8Array(WASM_AEAD_MAX_AD + 1), maxPlain)).toThrow(RangeError);
    expect(seal(new Uint8Array(31), 0, maxAd, maxPlain)).toThrow(RangeError);
    expect(seal(new Uint8Array(33), 0, maxAd, maxPlain)).toThrow(RangeError);
    for (const pn of [-1, 0.5, MAX_PACKET_NUMBER + 1, Number.NaN, Infinity])
      expect(seal(key, pn, maxAd, maxPlain)).toThrow(RangeError);
    expect(seal(key, 0, maxAd, new Uint8Array(100), new Uint8Array(115))).toThrow(RangeError);
    expect(seal(key, 0, maxAd, new Uint8Array(100), new Uint8Array(200), 85)).toThrow(RangeError);
    expect(seal(key, 0, maxAd, new Uint8Array(100), new Uint8Array(200), -1)).toThrow(RangeError);
    expect(seal(key, 0, maxAd, new Uint8Array(100), new Uint8Array(200), 84)).not.toThrow();
  });

  it("open returns -1 (never throws) on anything out of range", () => {
    const sealed = new Uint8Array(116);
    wasmAead.seal(key, 3, maxAd, new Uint8Array(100), sealed, 0);
    const out = new Uint8Array(4096);
    expect(wasmAead.open(key, 3, maxAd, sealed, out)).toBe(100);
    expect(wasmAead.open(key, 3, maxAd, sealed, new Uint8Array(100))).toBe(100);
    expect(wasmAead.open(key, 3, maxAd, sealed, new Uint8Array(99))).toBe(-1);
    expect(wasmAead.open(key, 3, new Uint8Array(WASM_AEAD_MAX_AD + 1), sealed, out)).toBe(-1);
    expect(wasmAead.open(new Uint8Array(31), 3, maxAd, sealed, out)).toBe(-1);
    for (const pn of [-1, 0.5, MAX_PACKET_NUMBER + 1, Number.NaN]) expect(wasmAead.open(key, pn, maxAd, sealed, out)).toBe(-1);
    for (const len of [0, 1, 15, 16, WASM_AEAD_MAX_PLAINTEXT + TAG_BYTES + 1, 9000])
      expect(wasmAead.open(key, 3, maxAd, new Uint8Array(len), out)).toBe(-1);
  });
});
