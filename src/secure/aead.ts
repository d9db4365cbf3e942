/**
 * The AEAD that seals every datagram of a secure connection (PROTOCOL §9): ChaCha20-Poly1305 of
 * RFC 8439 with a 96-bit nonce of 4 zero bytes followed by the packet number as a u64
 * little-endian (the layout WireGuard uses). Each direction has its own key and counts its own
 * packet numbers from 0, so a nonce is never used twice under one key.
 *
 * Two implementations have this shape: src/secure/wasm-aead.ts, the one the secure layer uses,
 * and `nobleAead` (src/secure/noble-aead.ts, on the audited @noble/ciphers), the reference it is
 * tested and benchmarked against, which the package does not ship.
 */

/** Bytes of the Poly1305 tag appended to every sealed payload. */
export const TAG_BYTES = 16;
/** Bytes of a ChaCha20-Poly1305 key. */
export const KEY_BYTES = 32;
/** Packet numbers stay below 2^53 so they are exact as JS numbers (never reached: 2^53 packets). */
export const MAX_PACKET_NUMBER = Number.MAX_SAFE_INTEGER;

export interface PacketAead {
  /**
   * Encrypts `plaintext` under `key` with packet number `pn`, authenticating `ad` too, and
   * writes the ciphertext and then the 16-byte tag to `out` at `outOffset`. Returns the bytes
   * written (plaintext.length + 16). `out` must have room; `plaintext` and the written range
   * must not overlap unless they start at the same byte.
   */
  seal(key: Uint8Array, pn: number, ad: Uint8Array, plaintext: Uint8Array, out: Uint8Array, outOffset: number): number;
  /**
   * Checks the tag at the end of `sealed` and decrypts the rest into `out` (from offset 0).
   * Returns the plaintext length, or -1 (and `out` unspecified) when the tag does not match
   * (wrong key, packet number, associated data, or any bit changed). Never throws on bytes.
   */
  open(key: Uint8Array, pn: number, ad: Uint8Array, sealed: Uint8Array, out: Uint8Array): number;
}

export function validPacketNumber(pn: number): boolean {
  return Number.isSafeInteger(pn) && pn >= 0;
}

/** The 12-byte nonce for packet number `pn`: 4 zero bytes, then pn as u64 little-endian. */
export function packetNonce(pn: number, nonce: Uint8Array = new Uint8Array(12)): Uint8Array {
  nonce[0] = nonce[1] = nonce[2] = nonce[3] = 0;
  let lo = pn % 0x1_0000_0000;
  let hi = Math.floor(pn / 0x1_0000_0000);
  for (let i = 4; i < 8; i++, lo >>>= 8) nonce[i] = lo & 0xff;
  for (let i = 8; i < 12; i++, hi >>>= 8) nonce[i] = hi & 0xff;
  return nonce;
}
