/**
 * The secure layer's other two uses of ChaCha20, on the same WebAssembly module as the packet
 * AEAD (wasm-aead.ts), so that no JavaScript cipher library is loaded, by secure connections or
 * plain ones:
 *
 * - `chacha20Keystream`: the first bytes of a ChaCha20 keystream (RFC 8439 §2.4), block 0, as
 *   keys.ts uses it to derive a connection's keys;
 * - `xchacha20Poly1305Seal` / `Open`: XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha-03 §2.3), which
 *   seals a connect token's private part under the server key with a random 24-byte nonce.
 *
 * HChaCha20 (the draft's §2.2) runs the ChaCha20 rounds on the state made of the key and a
 * 16-byte nonce, and outputs words 0..3 and 12..15 without the final addition of the input
 * state. The ChaCha20 block function is those rounds plus that addition, with the nonce's first
 * 4 bytes standing where the block counter goes; so HChaCha20 is the keystream block of
 * (key, counter = nonce[0..4] LE, nonce = nonce[4..16]) less the state it started from.
 *
 * Tested against @noble/ciphers and the draft's vectors in test/secure/xchacha.test.ts.
 */
import { KEY_BYTES, TAG_BYTES } from "./aead.js";
import { wasmAeadInternals } from "./wasm-aead.js";

export const XCHACHA_NONCE_BYTES = 24;
/** "expand 32-byte k", the ChaCha20 state's first four words. */
const SIGMA = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574] as const;
const BLOCK_BYTES = 64;

/** The first `length` bytes (at most 64) of the ChaCha20 keystream of (key, 12-byte nonce), block 0. */
export function chacha20Keystream(key: Uint8Array, nonce: Uint8Array, length: number): Uint8Array {
  if (!(Number.isInteger(length) && length >= 0 && length <= BLOCK_BYTES)) throw new RangeError(`chacha20Keystream: length must be 0..${BLOCK_BYTES}, got ${length}`);
  return wasmAeadInternals.chacha20(key, nonce, 0, new Uint8Array(length));
}

/** HChaCha20: a 32-byte subkey from a 32-byte key and a 16-byte nonce. */
export function hchacha20(key: Uint8Array, nonce: Uint8Array): Uint8Array {
  if (key.length !== KEY_BYTES) throw new RangeError(`hchacha20: the key must be ${KEY_BYTES} bytes, got ${key.length}`);
  if (nonce.length !== 16) throw new RangeError(`hchacha20: the nonce must be 16 bytes, got ${nonce.length}`);
  const input = new DataView(nonce.buffer, nonce.byteOffset, 16);
  const block = wasmAeadInternals.chacha20(key, nonce.subarray(4, 16), input.getUint32(0, true), new Uint8Array(BLOCK_BYTES));
  const words = new DataView(block.buffer, block.byteOffset, BLOCK_BYTES);
  const subkey = new Uint8Array(KEY_BYTES);
  const out = new DataView(subkey.buffer);
  for (let i = 0; i < 4; i++) {
    // State words 0..3 are SIGMA; words 12..15 are the 16-byte nonce (counter, then nonce).
    out.setUint32(4 * i, (words.getUint32(4 * i, true) - SIGMA[i]!) >>> 0, true);
    out.setUint32(16 + 4 * i, (words.getUint32(48 + 4 * i, true) - input.getUint32(4 * i, true)) >>> 0, true);
  }
  return subkey;
}

/** The subkey and the 12-byte ChaCha20-Poly1305 nonce (4 zero bytes, then nonce[16..24]). */
function derive(key: Uint8Array, nonce: Uint8Array): [Uint8Array, Uint8Array] {
  if (nonce.length !== XCHACHA_NONCE_BYTES) throw new RangeError(`XChaCha20-Poly1305: the nonce must be ${XCHACHA_NONCE_BYTES} bytes, got ${nonce.length}`);
  const inner = new Uint8Array(12);
  inner.set(nonce.subarray(16, 24), 4);
  return [hchacha20(key, nonce.subarray(0, 16)), inner];
}

/** Ciphertext || 16-byte tag. Plaintext up to WASM_AEAD_MAX_PLAINTEXT, associated data up to WASM_AEAD_MAX_AD bytes. */
export function xchacha20Poly1305Seal(key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, plaintext: Uint8Array): Uint8Array {
  const [subkey, inner] = derive(key, nonce);
  return wasmAeadInternals.seal(subkey, inner, ad, plaintext);
}

/** The plaintext, or undefined when the tag does not match or `sealed` is too short or too long. */
export function xchacha20Poly1305Open(key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, sealed: Uint8Array): Uint8Array | undefined {
  if (sealed.length < TAG_BYTES || key.length !== KEY_BYTES) return undefined;
  const [subkey, inner] = derive(key, nonce);
  try {
    return wasmAeadInternals.open(subkey, inner, ad, sealed) ?? undefined;
  } catch {
    return undefined; // over the module's size limits: a token that cannot be one of ours
  }
}
