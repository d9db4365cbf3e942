/**
 * src/secure/xchacha.ts, on the WebAssembly ChaCha20: HChaCha20 and XChaCha20-Poly1305 against
 * the vectors of draft-irtf-cfrg-xchacha-03 and against @noble/ciphers on random inputs
 * (fast-check, fixed seeds), and the key derivation's keystream against noble's ChaCha20.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chacha20, hchacha, xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { WASM_AEAD_MAX_AD, WASM_AEAD_MAX_PLAINTEXT } from "../../src/secure/wasm-aead.js";
import { chacha20Keystream, hchacha20, xchacha20Poly1305Open, xchacha20Poly1305Seal } from "../../src/secure/xchacha.js";

const hex = (text: string): Uint8Array => Uint8Array.from(text.replace(/\s+/g, "").match(/../g)!, (b) => parseInt(b, 16));
const toHex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const bytes = (min: number, max: number) => fc.uint8Array({ minLength: min, maxLength: max });

describe("HChaCha20", () => {
  it("matches the draft's test vector (§2.2.1)", () => {
    const key = hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    const nonce = hex("000000090000004a0000000031415927");
    expect(toHex(hchacha20(key, nonce))).toBe("82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc");
  });

  it("matches noble's on random keys and nonces, all-ones included", () => {
    const ones = new Uint8Array(32).fill(0xff);
    expect(toHex(hchacha20(ones, ones.subarray(0, 16)))).toBe(toHex(nobleHChaCha(ones, ones.subarray(0, 16))));
    fc.assert(
      fc.property(bytes(32, 32), bytes(16, 16), (key, nonce) => {
        expect(toHex(hchacha20(key, nonce))).toBe(toHex(nobleHChaCha(key, nonce)));
      }),
      { seed: 25, numRuns: 300 },
    );
  });

  it("rejects a wrong key or nonce length", () => {
    expect(() => hchacha20(new Uint8Array(31), new Uint8Array(16))).toThrow(RangeError);
    expect(() => hchacha20(new Uint8Array(32), new Uint8Array(12))).toThrow(RangeError);
  });
});

describe("XChaCha20-Poly1305", () => {
  it("matches the draft's AEAD test vector (§A.3.1)", () => {
    const plaintext = new TextEncoder().encode(
      "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.",
    );
    const ad = hex("50515253c0c1c2c3c4c5c6c7");
    const key = hex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f");
    const nonce = hex("404142434445464748494a4b4c4d4e4f5051525354555657");
    const sealed = xchacha20Poly1305Seal(key, nonce, ad, plaintext);
    expect(toHex(sealed.subarray(sealed.length - 16))).toBe("c0875924c1c7987947deafd8780acf49");
    expect(toHex(sealed.subarray(0, 16))).toBe("bd6d179d3e83d43b9576579493c0e939");
    expect(xchacha20Poly1305Open(key, nonce, ad, sealed)).toEqual(plaintext);
  });

  it("seals as noble does and opens noble's, on random inputs up to the module's limits", () => {
    fc.assert(
      fc.property(bytes(32, 32), bytes(24, 24), bytes(0, WASM_AEAD_MAX_AD), bytes(0, WASM_AEAD_MAX_PLAINTEXT), (key, nonce, ad, plaintext) => {
        const ours = xchacha20Poly1305Seal(key, nonce, ad, plaintext);
        const theirs = xchacha20poly1305(key, nonce, ad).encrypt(plaintext);
        expect(toHex(ours)).toBe(toHex(theirs));
        expect(toHex(xchacha20Poly1305Open(key, nonce, ad, theirs)!)).toBe(toHex(plaintext));
      }),
      { seed: 2026, numRuns: 150 },
    );
  });

  it("opens nothing that changed: any bit of the sealed bytes, the nonce, the AD or the key", () => {
    fc.assert(
      fc.property(bytes(32, 32), bytes(24, 24), bytes(0, 16), bytes(0, 200), fc.nat(), fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 3 }), (key, nonce, ad, plaintext, at, bit, what) => {
        const sealed = xchacha20Poly1305Seal(key, nonce, ad, plaintext);
        const flip = (b: Uint8Array): Uint8Array => {
          const c = new Uint8Array(b);
          if (c.length > 0) c[at % c.length]! ^= 1 << bit;
          return c;
        };
        if (what === 2 && ad.length === 0) return;
        const args: [Uint8Array, Uint8Array, Uint8Array, Uint8Array] =
          what === 0 ? [key, nonce, ad, flip(sealed)] : what === 1 ? [key, flip(nonce), ad, sealed] : what === 2 ? [key, nonce, flip(ad), sealed] : [flip(key), nonce, ad, sealed];
        expect(xchacha20Poly1305Open(...args)).toBeUndefined();
      }),
      { seed: 99, numRuns: 300 },
    );
  });

  it("opens nothing too short or too long for the module, without throwing", () => {
    const key = new Uint8Array(32);
    const nonce = new Uint8Array(24);
    expect(xchacha20Poly1305Open(key, nonce, new Uint8Array(0), new Uint8Array(15))).toBeUndefined();
    expect(xchacha20Poly1305Open(key, nonce, new Uint8Array(0), new Uint8Array(WASM_AEAD_MAX_PLAINTEXT + 17))).toBeUndefined();
    expect(xchacha20Poly1305Open(key, nonce, new Uint8Array(WASM_AEAD_MAX_AD + 1), new Uint8Array(32))).toBeUndefined();
  });
});

describe("the key derivation's keystream", () => {
  it("is noble's ChaCha20 keystream, block 0", () => {
    fc.assert(
      fc.property(bytes(32, 32), bytes(12, 12), fc.integer({ min: 0, max: 64 }), (key, nonce, length) => {
        expect(toHex(chacha20Keystream(key, nonce, length))).toBe(toHex(chacha20(key, nonce, new Uint8Array(length))));
      }),
      { seed: 7, numRuns: 200 },
    );
    expect(() => chacha20Keystream(new Uint8Array(32), new Uint8Array(12), 65)).toThrow(RangeError);
  });
});

/** noble's HChaCha20 works on words: key as 8 LE u32, nonce as 4, output 8. */
function nobleHChaCha(key: Uint8Array, nonce: Uint8Array): Uint8Array {
  const words = (b: Uint8Array): Uint32Array => new Uint32Array(new Uint8Array(b).buffer);
  const sigma = new Uint32Array([0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]);
  const out = new Uint32Array(8);
  hchacha(sigma, words(key), words(nonce), out);
  return new Uint8Array(out.buffer);
}
