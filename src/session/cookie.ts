/**
 * SipHash-2-4 (Aumasson & Bernstein, "SipHash: a fast short-input PRF", 2012), 64- and 128-bit
 * output, written over pairs of 32-bit halves because JavaScript has no fast 64-bit integers.
 *
 * Used for the stateless handshake cookie (docs/PROTOCOL.md §4): the server keys it with a
 * secret derived from its seed, so only the server can mint or check a cookie, and it never has
 * to remember the address it sent one to. Verified against the reference vectors in
 * test/session/cookie.test.ts (key 00..0f, message 00..len-1).
 */

/** A 128-bit SipHash key as four little-endian u32 words (k0 = w0 | w1 << 32, k1 = w2 | w3 << 32). */
export type SipKey = readonly [number, number, number, number];

// State: v0..v3, each as (hi, lo). Module-level scratch: no allocation per call.
let v0h = 0, v0l = 0, v1h = 0, v1l = 0, v2h = 0, v2l = 0, v3h = 0, v3l = 0;

function sipRound(): void {
  let lo: number, hi: number, t: number;
  // v0 += v1
  lo = (v0l + v1l) >>> 0; v0h = (v0h + v1h + (lo < v0l ? 1 : 0)) >>> 0; v0l = lo;
  // v1 = rotl(v1, 13) ^ v0
  t = v1h; hi = ((t << 13) | (v1l >>> 19)) >>> 0; lo = ((v1l << 13) | (t >>> 19)) >>> 0;
  v1h = (hi ^ v0h) >>> 0; v1l = (lo ^ v0l) >>> 0;
  // v0 = rotl(v0, 32)
  t = v0h; v0h = v0l; v0l = t;
  // v2 += v3
  lo = (v2l + v3l) >>> 0; v2h = (v2h + v3h + (lo < v2l ? 1 : 0)) >>> 0; v2l = lo;
  // v3 = rotl(v3, 16) ^ v2
  t = v3h; hi = ((t << 16) | (v3l >>> 16)) >>> 0; lo = ((v3l << 16) | (t >>> 16)) >>> 0;
  v3h = (hi ^ v2h) >>> 0; v3l = (lo ^ v2l) >>> 0;
  // v0 += v3
  lo = (v0l + v3l) >>> 0; v0h = (v0h + v3h + (lo < v0l ? 1 : 0)) >>> 0; v0l = lo;
  // v3 = rotl(v3, 21) ^ v0
  t = v3h; hi = ((t << 21) | (v3l >>> 11)) >>> 0; lo = ((v3l << 21) | (t >>> 11)) >>> 0;
  v3h = (hi ^ v0h) >>> 0; v3l = (lo ^ v0l) >>> 0;
  // v2 += v1
  lo = (v2l + v1l) >>> 0; v2h = (v2h + v1h + (lo < v2l ? 1 : 0)) >>> 0; v2l = lo;
  // v1 = rotl(v1, 17) ^ v2
  t = v1h; hi = ((t << 17) | (v1l >>> 15)) >>> 0; lo = ((v1l << 17) | (t >>> 15)) >>> 0;
  v1h = (hi ^ v2h) >>> 0; v1l = (lo ^ v2l) >>> 0;
  // v2 = rotl(v2, 32)
  t = v2h; v2h = v2l; v2l = t;
}

function compress(mh: number, ml: number): void {
  v3h = (v3h ^ mh) >>> 0; v3l = (v3l ^ ml) >>> 0;
  sipRound();
  sipRound();
  v0h = (v0h ^ mh) >>> 0; v0l = (v0l ^ ml) >>> 0;
}

function absorb(key: SipKey, data: Uint8Array, offset: number, length: number, wide: boolean): void {
  const [k0l, k0h, k1l, k1h] = key;
  // Constants: "somepseudorandomlygeneratedbytes".
  v0h = (k0h ^ 0x736f6d65) >>> 0; v0l = (k0l ^ 0x70736575) >>> 0;
  v1h = (k1h ^ 0x646f7261) >>> 0; v1l = (k1l ^ 0x6e646f6d) >>> 0;
  v2h = (k0h ^ 0x6c796765) >>> 0; v2l = (k0l ^ 0x6e657261) >>> 0;
  v3h = (k1h ^ 0x74656462) >>> 0; v3l = (k1l ^ 0x79746573) >>> 0;
  if (wide) v1l = (v1l ^ 0xee) >>> 0;
  const end = offset + length;
  const fullEnd = offset + (length & ~7);
  let p = offset;
  for (; p < fullEnd; p += 8) {
    const ml = (data[p] | (data[p + 1] << 8) | (data[p + 2] << 16) | (data[p + 3] << 24)) >>> 0;
    const mh = (data[p + 4] | (data[p + 5] << 8) | (data[p + 6] << 16) | (data[p + 7] << 24)) >>> 0;
    compress(mh, ml);
  }
  // Last block: remaining bytes little-endian, length mod 256 in the top byte.
  let ml = 0;
  let mh = (length & 0xff) << 24;
  for (let i = 0; p < end; p++, i++) {
    if (i < 4) ml |= data[p] << (8 * i);
    else mh |= data[p] << (8 * (i - 4));
  }
  compress(mh >>> 0, ml >>> 0);
}

function writeXor(out: Uint8Array, at: number): void {
  const lo = (v0l ^ v1l ^ v2l ^ v3l) >>> 0;
  const hi = (v0h ^ v1h ^ v2h ^ v3h) >>> 0;
  out[at] = lo; out[at + 1] = lo >>> 8; out[at + 2] = lo >>> 16; out[at + 3] = lo >>> 24;
  out[at + 4] = hi; out[at + 5] = hi >>> 8; out[at + 6] = hi >>> 16; out[at + 7] = hi >>> 24;
}

/** SipHash-2-4 with 64-bit output, written little-endian to `out[at..at+8)`. */
export function sipHash64(key: SipKey, data: Uint8Array, offset: number, length: number, out: Uint8Array, at = 0): void {
  absorb(key, data, offset, length, false);
  v2l = (v2l ^ 0xff) >>> 0;
  for (let i = 0; i < 4; i++) sipRound();
  writeXor(out, at);
}

/** SipHash-2-4 with 128-bit output (the reference "SipHash128" variant), to `out[at..at+16)`. */
export function sipHash128(key: SipKey, data: Uint8Array, offset: number, length: number, out: Uint8Array, at = 0): void {
  absorb(key, data, offset, length, true);
  v2l = (v2l ^ 0xee) >>> 0;
  for (let i = 0; i < 4; i++) sipRound();
  writeXor(out, at);
  v1l = (v1l ^ 0xdd) >>> 0;
  for (let i = 0; i < 4; i++) sipRound();
  writeXor(out, at + 8);
}

/** Constant-time-ish comparison of two 16-byte cookies (no early exit). */
export function cookiesEqual(a: Uint8Array, aAt: number, b: Uint8Array, bAt: number): boolean {
  let diff = 0;
  for (let i = 0; i < 16; i++) diff |= a[aAt + i] ^ b[bAt + i];
  return diff === 0;
}
