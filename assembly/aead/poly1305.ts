// Poly1305 (RFC 8439 §2.5): tag = ((sum of m_i * r^(n-i+1)) mod (2^130 - 5) + s) mod 2^128.
//
// Numbers mod p = 2^130 - 5 are held in five 26-bit limbs (value = h0 + h1*2^26 + ... + h4*2^104)
// so that every limb product fits a u64 with room to sum five of them: WebAssembly has no
// 64x64->128 multiply, which rules out 44-bit limbs. Bounds, with limbs kept below ~2^27 between
// blocks: r limbs < 2^26, 5*r limbs < 2^29, so a product is < 2^56 and a column of five < 2^59.
//
// The reduction uses 2^130 = 5 (mod p): a product term at limb position i+j >= 5 folds down to
// position i+j-5 multiplied by 5, which is why the s_k = 5*r_k appear in the columns.
//
// No branch or memory index depends on r, s, h or the message; only the block count does.

// Limb mask (26 bits) and the padding bit 2^128 of a full 16-byte block, as it sits in limb 4
// (bit 128 = 104 + 24).
const M26: u64 = 0x3ffffff;
export const HIBIT: u64 = 1 << 24;

// r (clamped), its multiples by 5, s, and the accumulator h. Module globals so that a MAC can be
// fed in several calls (associated data, ciphertext, lengths); each call works on local copies.
let r0: u64 = 0, r1: u64 = 0, r2: u64 = 0, r3: u64 = 0, r4: u64 = 0;
let s1: u64 = 0, s2: u64 = 0, s3: u64 = 0, s4: u64 = 0;
let h0: u64 = 0, h1: u64 = 0, h2: u64 = 0, h3: u64 = 0, h4: u64 = 0;
let pad0: u64 = 0, pad1: u64 = 0, pad2: u64 = 0, pad3: u64 = 0;

/** Starts a MAC with the 32-byte one-time key r || s at `key`. */
export function polyInit(key: usize): void {
  const w0 = <u64>load<u32>(key, 0);
  const w1 = <u64>load<u32>(key, 4);
  const w2 = <u64>load<u32>(key, 8);
  const w3 = <u64>load<u32>(key, 12);
  // Split r into 26-bit limbs and clamp in the same masks: the clamp r &=
  // 0x0ffffffc0ffffffc0ffffffc0fffffff clears bits 28-31, 60-63, 92-95, 124-127 (top four bits
  // of bytes 3, 7, 11, 15) and bits 32-33, 64-65, 96-97 (bottom two of bytes 4, 8, 12). Within
  // the limbs (limb k = bits 26k..26k+25) that is: limb 1 bits 2-7, limb 2 bits 8-13, limb 3
  // bits 14-19, limb 4 bits 20-23.
  r0 = w0 & 0x3ffffff;
  r1 = ((w0 >> 26) | (w1 << 6)) & 0x3ffff03;
  r2 = ((w1 >> 20) | (w2 << 12)) & 0x3ffc0ff;
  r3 = ((w2 >> 14) | (w3 << 18)) & 0x3f03fff;
  r4 = (w3 >> 8) & 0x00fffff;
  s1 = r1 * 5;
  s2 = r2 * 5;
  s3 = r3 * 5;
  s4 = r4 * 5;
  h0 = 0; h1 = 0; h2 = 0; h3 = 0; h4 = 0;
  pad0 = <u64>load<u32>(key, 16);
  pad1 = <u64>load<u32>(key, 20);
  pad2 = <u64>load<u32>(key, 24);
  pad3 = <u64>load<u32>(key, 28);
}

/**
 * Absorbs `blocks` 16-byte blocks at `m`, each read as a little-endian number plus `hibit`
 * (HIBIT for a full block; 0 for a final short block the caller has already padded with 0x01).
 */
export function polyBlocks(m: usize, blocks: u32, hibit: u64): void {
  const R0 = r0, R1 = r1, R2 = r2, R3 = r3, R4 = r4;
  const S1 = s1, S2 = s2, S3 = s3, S4 = s4;
  let a0 = h0, a1 = h1, a2 = h2, a3 = h3, a4 = h4;
  const end = m + (<usize>blocks << 4);
  while (m < end) {
    // h += m, the block split into 26-bit limbs.
    const w0 = <u64>load<u32>(m, 0);
    const w1 = <u64>load<u32>(m, 4);
    const w2 = <u64>load<u32>(m, 8);
    const w3 = <u64>load<u32>(m, 12);
    a0 += w0 & M26;
    a1 += ((w0 >> 26) | (w1 << 6)) & M26;
    a2 += ((w1 >> 20) | (w2 << 12)) & M26;
    a3 += ((w2 >> 14) | (w3 << 18)) & M26;
    a4 += (w3 >> 8) | hibit;
    // h *= r (mod p): schoolbook product, terms at position >= 5 folded down with factor 5.
    let d0 = a0 * R0 + a1 * S4 + a2 * S3 + a3 * S2 + a4 * S1;
    let d1 = a0 * R1 + a1 * R0 + a2 * S4 + a3 * S3 + a4 * S2;
    let d2 = a0 * R2 + a1 * R1 + a2 * R0 + a3 * S4 + a4 * S3;
    let d3 = a0 * R3 + a1 * R2 + a2 * R1 + a3 * R0 + a4 * S4;
    let d4 = a0 * R4 + a1 * R3 + a2 * R2 + a3 * R1 + a4 * R0;
    // Partial carry back to 26-bit limbs. The carry out of limb 4 is worth c * 2^130 = 5c
    // (mod p), so it re-enters at limb 0 times 5; it is < 2^33, so 5c < 2^36 fits easily. The
    // final carry into limb 1 leaves it at most a few bits over 26, which the bounds allow.
    let c = d0 >> 26; a0 = d0 & M26;
    d1 += c; c = d1 >> 26; a1 = d1 & M26;
    d2 += c; c = d2 >> 26; a2 = d2 & M26;
    d3 += c; c = d3 >> 26; a3 = d3 & M26;
    d4 += c; c = d4 >> 26; a4 = d4 & M26;
    a0 += c * 5; c = a0 >> 26; a0 &= M26;
    a1 += c;
    m += 16;
  }
  h0 = a0; h1 = a1; h2 = a2; h3 = a3; h4 = a4;
}

/** Finishes the MAC: writes the 16-byte tag to `out`. */
export function polyFinish(out: usize): void {
  let a0 = h0, a1 = h1, a2 = h2, a3 = h3, a4 = h4;
  // Full carry chain. polyBlocks leaves limbs 0, 2, 3, 4 below 2^26 and limb 1 below 2^26 + 2^11,
  // so every carry here is 0 or 1, and the last one (into limb 1) can only be 1 when limb 1 had
  // overflowed and is now tiny: all limbs end below 2^26, the value below 2^130 < 2p, and one
  // conditional subtraction of p fully reduces it.
  let c = a1 >> 26; a1 &= M26;
  a2 += c; c = a2 >> 26; a2 &= M26;
  a3 += c; c = a3 >> 26; a3 &= M26;
  a4 += c; c = a4 >> 26; a4 &= M26;
  a0 += c * 5; c = a0 >> 26; a0 &= M26;
  a1 += c;
  // g = h - p = h + 5 - 2^130, with every carry propagated.
  let g0 = a0 + 5; c = g0 >> 26; g0 &= M26;
  let g1 = a1 + c; c = g1 >> 26; g1 &= M26;
  let g2 = a2 + c; c = g2 >> 26; g2 &= M26;
  let g3 = a3 + c; c = g3 >> 26; g3 &= M26;
  let g4 = a4 + c - (1 << 26);
  // Select without a branch: g4 is negative (top bit set) exactly when h < p; then keep h.
  const keepH = <u64>(<i64>g4 >> 63); // all ones to keep h, zero to take g
  const takeG = ~keepH;
  a0 = (a0 & keepH) | (g0 & takeG);
  a1 = (a1 & keepH) | (g1 & takeG);
  a2 = (a2 & keepH) | (g2 & takeG);
  a3 = (a3 & keepH) | (g3 & takeG);
  a4 = (a4 & keepH) | (g4 & M26 & takeG);
  // Back to four 32-bit words: limb k starts at bit 26k = 32*word + shift (26 = 0+26,
  // 52 = 32+20, 78 = 64+14, 104 = 96+8). Additions rather than ors, so the result would stay
  // right even if a limb were not canonical. Bits from 128 up are dropped: the tag is mod 2^128.
  let f = a0 + (a1 << 26);
  const w0 = f & 0xffffffff;
  f = (f >> 32) + (a2 << 20);
  const w1 = f & 0xffffffff;
  f = (f >> 32) + (a3 << 14);
  const w2 = f & 0xffffffff;
  f = (f >> 32) + (a4 << 8);
  const w3 = f & 0xffffffff;
  // tag = (h + s) mod 2^128, word by word with carry.
  f = w0 + pad0;
  store<u32>(out, <u32>f, 0);
  f = (f >> 32) + w1 + pad1;
  store<u32>(out, <u32>f, 4);
  f = (f >> 32) + w2 + pad2;
  store<u32>(out, <u32>f, 8);
  f = (f >> 32) + w3 + pad3;
  store<u32>(out, <u32>f, 12);
}
