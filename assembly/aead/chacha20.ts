// ChaCha20 (RFC 8439 §2.3-2.4): 20 rounds over a 4x4 state of u32 words. Everything here is
// adds, xors and rotations of 32-bit words: no branch or memory index depends on the key, the
// nonce or the data (only on lengths, which are public).
//
// Two block functions: a scalar one (one 64-byte block, used for the Poly1305 key and for
// single-block tails) and a SIMD one that computes four consecutive blocks at once with one
// block per v128 lane (word i of blocks n..n+3 in one vector), then transposes the lanes back
// into four contiguous 64-byte blocks.
//
// Memory is little-endian in WebAssembly, as ChaCha20's serialisation is, so key/nonce words and
// keystream words are plain load<u32>/store<u32>.

// "expand 32-byte k" as four little-endian words (RFC 8439 §2.3).
const C0: u32 = 0x61707865;
const C1: u32 = 0x3320646e;
const C2: u32 = 0x79622d32;
const C3: u32 = 0x6b206574;

/**
 * Writes the 64-byte keystream block for (key at `key`, `counter`, nonce words n0 n1 n2) to `out`.
 */
export function chachaBlock(key: usize, counter: u32, n0: u32, n1: u32, n2: u32, out: usize): void {
  const k0 = load<u32>(key, 0);
  const k1 = load<u32>(key, 4);
  const k2 = load<u32>(key, 8);
  const k3 = load<u32>(key, 12);
  const k4 = load<u32>(key, 16);
  const k5 = load<u32>(key, 20);
  const k6 = load<u32>(key, 24);
  const k7 = load<u32>(key, 28);
  let x0 = C0, x1 = C1, x2 = C2, x3 = C3;
  let x4 = k0, x5 = k1, x6 = k2, x7 = k3;
  let x8 = k4, x9 = k5, x10 = k6, x11 = k7;
  let x12 = counter, x13 = n0, x14 = n1, x15 = n2;
  for (let i = 0; i < 10; i++) {
    // Column round: QR(0,4,8,12) QR(1,5,9,13) QR(2,6,10,14) QR(3,7,11,15).
    x0 += x4; x12 = rotl<u32>(x12 ^ x0, 16); x8 += x12; x4 = rotl<u32>(x4 ^ x8, 12);
    x0 += x4; x12 = rotl<u32>(x12 ^ x0, 8); x8 += x12; x4 = rotl<u32>(x4 ^ x8, 7);
    x1 += x5; x13 = rotl<u32>(x13 ^ x1, 16); x9 += x13; x5 = rotl<u32>(x5 ^ x9, 12);
    x1 += x5; x13 = rotl<u32>(x13 ^ x1, 8); x9 += x13; x5 = rotl<u32>(x5 ^ x9, 7);
    x2 += x6; x14 = rotl<u32>(x14 ^ x2, 16); x10 += x14; x6 = rotl<u32>(x6 ^ x10, 12);
    x2 += x6; x14 = rotl<u32>(x14 ^ x2, 8); x10 += x14; x6 = rotl<u32>(x6 ^ x10, 7);
    x3 += x7; x15 = rotl<u32>(x15 ^ x3, 16); x11 += x15; x7 = rotl<u32>(x7 ^ x11, 12);
    x3 += x7; x15 = rotl<u32>(x15 ^ x3, 8); x11 += x15; x7 = rotl<u32>(x7 ^ x11, 7);
    // Diagonal round: QR(0,5,10,15) QR(1,6,11,12) QR(2,7,8,13) QR(3,4,9,14).
    x0 += x5; x15 = rotl<u32>(x15 ^ x0, 16); x10 += x15; x5 = rotl<u32>(x5 ^ x10, 12);
    x0 += x5; x15 = rotl<u32>(x15 ^ x0, 8); x10 += x15; x5 = rotl<u32>(x5 ^ x10, 7);
    x1 += x6; x12 = rotl<u32>(x12 ^ x1, 16); x11 += x12; x6 = rotl<u32>(x6 ^ x11, 12);
    x1 += x6; x12 = rotl<u32>(x12 ^ x1, 8); x11 += x12; x6 = rotl<u32>(x6 ^ x11, 7);
    x2 += x7; x13 = rotl<u32>(x13 ^ x2, 16); x8 += x13; x7 = rotl<u32>(x7 ^ x8, 12);
    x2 += x7; x13 = rotl<u32>(x13 ^ x2, 8); x8 += x13; x7 = rotl<u32>(x7 ^ x8, 7);
    x3 += x4; x14 = rotl<u32>(x14 ^ x3, 16); x9 += x14; x4 = rotl<u32>(x4 ^ x9, 12);
    x3 += x4; x14 = rotl<u32>(x14 ^ x3, 8); x9 += x14; x4 = rotl<u32>(x4 ^ x9, 7);
  }
  // Feed-forward: add the input state (RFC 8439 §2.3 step "state += initial_state").
  store<u32>(out, x0 + C0, 0);
  store<u32>(out, x1 + C1, 4);
  store<u32>(out, x2 + C2, 8);
  store<u32>(out, x3 + C3, 12);
  store<u32>(out, x4 + k0, 16);
  store<u32>(out, x5 + k1, 20);
  store<u32>(out, x6 + k2, 24);
  store<u32>(out, x7 + k3, 28);
  store<u32>(out, x8 + k4, 32);
  store<u32>(out, x9 + k5, 36);
  store<u32>(out, x10 + k6, 40);
  store<u32>(out, x11 + k7, 44);
  store<u32>(out, x12 + counter, 48);
  store<u32>(out, x13 + n0, 52);
  store<u32>(out, x14 + n1, 56);
  store<u32>(out, x15 + n2, 60);
}

// Rotations of every u32 lane. By 16 and 8 bits they are byte permutations (one shuffle each,
// a single pshufb-like instruction); by 12 and 7 bits they need two shifts and an or.
// @ts-ignore: decorator
@inline function rotl16(x: v128): v128 {
  return i8x16.shuffle(x, x, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
}
// @ts-ignore: decorator
@inline function rotl8(x: v128): v128 {
  return i8x16.shuffle(x, x, 3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14);
}
// @ts-ignore: decorator
@inline function rotl12(x: v128): v128 {
  return v128.or(i32x4.shl(x, 12), i32x4.shr_u(x, 20));
}
// @ts-ignore: decorator
@inline function rotl7(x: v128): v128 {
  return v128.or(i32x4.shl(x, 7), i32x4.shr_u(x, 25));
}

/**
 * Words 4g..4g+3 of four blocks (a = word 4g of blocks 0..3, b = word 4g+1, ...) transposed so
 * each block's four words are contiguous, XORed with `src` and stored to `dst`, block k at
 * offset 64k + 16g (`p` = 16g already added by the caller).
 */
// @ts-ignore: decorator
@inline function xorGroup(src: usize, dst: usize, a: v128, b: v128, c: v128, d: v128): void {
  const t0 = i32x4.shuffle(a, b, 0, 4, 1, 5); // a0 b0 a1 b1
  const t1 = i32x4.shuffle(a, b, 2, 6, 3, 7); // a2 b2 a3 b3
  const t2 = i32x4.shuffle(c, d, 0, 4, 1, 5); // c0 d0 c1 d1
  const t3 = i32x4.shuffle(c, d, 2, 6, 3, 7); // c2 d2 c3 d3
  v128.store(dst, v128.xor(v128.load(src, 0), i64x2.shuffle(t0, t2, 0, 2)), 0); // block 0
  v128.store(dst, v128.xor(v128.load(src, 64), i64x2.shuffle(t0, t2, 1, 3)), 64); // block 1
  v128.store(dst, v128.xor(v128.load(src, 128), i64x2.shuffle(t1, t3, 0, 2)), 128); // block 2
  v128.store(dst, v128.xor(v128.load(src, 192), i64x2.shuffle(t1, t3, 1, 3)), 192); // block 3
}

/**
 * dst[0..256) = src[0..256) XOR the keystream blocks counter..counter+3 (the block counter wraps
 * modulo 2^32, which the AEAD never reaches: at most 33 blocks per packet).
 */
export function chachaXor4(key: usize, counter: u32, n0: u32, n1: u32, n2: u32, src: usize, dst: usize): void {
  const k0 = v128.load32_splat(key, 0);
  const k1 = v128.load32_splat(key, 4);
  const k2 = v128.load32_splat(key, 8);
  const k3 = v128.load32_splat(key, 12);
  const k4 = v128.load32_splat(key, 16);
  const k5 = v128.load32_splat(key, 20);
  const k6 = v128.load32_splat(key, 24);
  const k7 = v128.load32_splat(key, 28);
  // Lane j holds block counter + j.
  const ctr = i32x4.add(i32x4.splat(counter), i32x4(0, 1, 2, 3));
  const m0 = i32x4.splat(n0), m1 = i32x4.splat(n1), m2 = i32x4.splat(n2);
  let x0 = i32x4.splat(C0), x1 = i32x4.splat(C1), x2 = i32x4.splat(C2), x3 = i32x4.splat(C3);
  let x4 = k0, x5 = k1, x6 = k2, x7 = k3;
  let x8 = k4, x9 = k5, x10 = k6, x11 = k7;
  let x12 = ctr, x13 = m0, x14 = m1, x15 = m2;
  for (let i = 0; i < 10; i++) {
    // Column round.
    x0 = i32x4.add(x0, x4); x12 = rotl16(v128.xor(x12, x0)); x8 = i32x4.add(x8, x12); x4 = rotl12(v128.xor(x4, x8));
    x0 = i32x4.add(x0, x4); x12 = rotl8(v128.xor(x12, x0)); x8 = i32x4.add(x8, x12); x4 = rotl7(v128.xor(x4, x8));
    x1 = i32x4.add(x1, x5); x13 = rotl16(v128.xor(x13, x1)); x9 = i32x4.add(x9, x13); x5 = rotl12(v128.xor(x5, x9));
    x1 = i32x4.add(x1, x5); x13 = rotl8(v128.xor(x13, x1)); x9 = i32x4.add(x9, x13); x5 = rotl7(v128.xor(x5, x9));
    x2 = i32x4.add(x2, x6); x14 = rotl16(v128.xor(x14, x2)); x10 = i32x4.add(x10, x14); x6 = rotl12(v128.xor(x6, x10));
    x2 = i32x4.add(x2, x6); x14 = rotl8(v128.xor(x14, x2)); x10 = i32x4.add(x10, x14); x6 = rotl7(v128.xor(x6, x10));
    x3 = i32x4.add(x3, x7); x15 = rotl16(v128.xor(x15, x3)); x11 = i32x4.add(x11, x15); x7 = rotl12(v128.xor(x7, x11));
    x3 = i32x4.add(x3, x7); x15 = rotl8(v128.xor(x15, x3)); x11 = i32x4.add(x11, x15); x7 = rotl7(v128.xor(x7, x11));
    // Diagonal round.
    x0 = i32x4.add(x0, x5); x15 = rotl16(v128.xor(x15, x0)); x10 = i32x4.add(x10, x15); x5 = rotl12(v128.xor(x5, x10));
    x0 = i32x4.add(x0, x5); x15 = rotl8(v128.xor(x15, x0)); x10 = i32x4.add(x10, x15); x5 = rotl7(v128.xor(x5, x10));
    x1 = i32x4.add(x1, x6); x12 = rotl16(v128.xor(x12, x1)); x11 = i32x4.add(x11, x12); x6 = rotl12(v128.xor(x6, x11));
    x1 = i32x4.add(x1, x6); x12 = rotl8(v128.xor(x12, x1)); x11 = i32x4.add(x11, x12); x6 = rotl7(v128.xor(x6, x11));
    x2 = i32x4.add(x2, x7); x13 = rotl16(v128.xor(x13, x2)); x8 = i32x4.add(x8, x13); x7 = rotl12(v128.xor(x7, x8));
    x2 = i32x4.add(x2, x7); x13 = rotl8(v128.xor(x13, x2)); x8 = i32x4.add(x8, x13); x7 = rotl7(v128.xor(x7, x8));
    x3 = i32x4.add(x3, x4); x14 = rotl16(v128.xor(x14, x3)); x9 = i32x4.add(x9, x14); x4 = rotl12(v128.xor(x4, x9));
    x3 = i32x4.add(x3, x4); x14 = rotl8(v128.xor(x14, x3)); x9 = i32x4.add(x9, x14); x4 = rotl7(v128.xor(x4, x9));
  }
  // Feed-forward, then transpose and XOR four words of every block at a time.
  x0 = i32x4.add(x0, i32x4.splat(C0)); x1 = i32x4.add(x1, i32x4.splat(C1));
  x2 = i32x4.add(x2, i32x4.splat(C2)); x3 = i32x4.add(x3, i32x4.splat(C3));
  x4 = i32x4.add(x4, k0); x5 = i32x4.add(x5, k1); x6 = i32x4.add(x6, k2); x7 = i32x4.add(x7, k3);
  x8 = i32x4.add(x8, k4); x9 = i32x4.add(x9, k5); x10 = i32x4.add(x10, k6); x11 = i32x4.add(x11, k7);
  x12 = i32x4.add(x12, ctr); x13 = i32x4.add(x13, m0); x14 = i32x4.add(x14, m1); x15 = i32x4.add(x15, m2);
  xorGroup(src, dst, x0, x1, x2, x3);
  xorGroup(src + 16, dst + 16, x4, x5, x6, x7);
  xorGroup(src + 32, dst + 32, x8, x9, x10, x11);
  xorGroup(src + 48, dst + 48, x12, x13, x14, x15);
}

/**
 * XORs `len` bytes at `data` in place with the keystream starting at block `counter`.
 * `scratch` is a 256-byte buffer for the last, partial group of four blocks.
 */
export function chachaXor(key: usize, counter: u32, n0: u32, n1: u32, n2: u32, data: usize, len: u32, scratch: usize): void {
  let p = data;
  let left = len;
  while (left >= 256) {
    chachaXor4(key, counter, n0, n1, n2, p, p);
    counter += 4;
    p += 256;
    left -= 256;
  }
  if (left == 0) return;
  if (left <= 64) {
    // One block: the scalar function is cheaper than four lanes of which three are wasted.
    chachaBlock(key, counter, n0, n1, n2, scratch);
    let i: u32 = 0;
    for (; i + 8 <= left; i += 8) store<u64>(p + i, load<u64>(p + i) ^ load<u64>(scratch + i));
    for (; i < left; i++) store<u8>(p + i, load<u8>(p + i) ^ load<u8>(scratch + i));
    return;
  }
  // 65..255 bytes: run four blocks over a copy in `scratch`, copy the used bytes back.
  memory.copy(scratch, p, left);
  chachaXor4(key, counter, n0, n1, n2, scratch, scratch);
  memory.copy(p, scratch, left);
}
