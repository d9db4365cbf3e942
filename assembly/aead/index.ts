// ChaCha20-Poly1305 AEAD (RFC 8439 §2.8) as a standalone WebAssembly module, separate from the
// engine's: src/secure/wasm-aead.ts copies the key, associated data and payload into the fixed
// regions below, makes one call, and copies the result out. Nothing allocates; the memory is one
// page and never grows.
//
// seal/open take the packet nonce's last eight bytes as two u32 (the packet number, low word
// first; the first four nonce bytes are zero). sealNonce/openNonce, chacha20 and poly1305 take
// an arbitrary 12-byte nonce from NONCE and exist for the RFC test vectors.

import { chachaXor, chachaXor4 } from "./chacha20";
import { polyBlocks, polyFinish, polyInit, HIBIT } from "./poly1305";

/** Largest plaintext (and ciphertext without the tag) in bytes. */
const MAX_DATA: u32 = 2048;
/** Largest associated data in bytes. */
const MAX_AD: u32 = 64;
const TAG_BYTES: u32 = 16;

const KEY = memory.data(32, 16);
const NONCE = memory.data(16, 16);
const AD = memory.data(<i32>MAX_AD, 16);
// The payload, then its tag: seal writes the tag right after the ciphertext, open reads it there.
const DATA = memory.data(<i32>(MAX_DATA + TAG_BYTES), 16);
const TAG = memory.data(16, 16);
const PAD = memory.data(16, 16);
// Keystream blocks 0..3 of the packet: block 0 is the Poly1305 key, blocks 1..3 encrypt the first
// 192 bytes. One 4-lane call yields all four, so a packet of up to 192 bytes costs one call.
const FIRST = memory.data(256, 16);
// 256 zero bytes, never written: the input that makes chachaXor4 output the bare keystream.
const ZERO = memory.data(256, 16);
// The partial-group buffer of chachaXor.
const SCRATCH = memory.data(256, 16);
const FIRST_DATA_BYTES: u32 = 192;

export function keyOffset(): usize { return KEY; }
export function nonceOffset(): usize { return NONCE; }
export function adOffset(): usize { return AD; }
export function dataOffset(): usize { return DATA; }
export function tagOffset(): usize { return TAG; }
export function maxData(): u32 { return MAX_DATA; }
export function maxAd(): u32 { return MAX_AD; }

/** Feeds `len` bytes at `p` to Poly1305, zero-padded to a multiple of 16 (RFC 8439 §2.8). */
function macPadded(p: usize, len: u32): void {
  const full = len >> 4;
  if (full != 0) polyBlocks(p, full, HIBIT);
  const rest = len & 15;
  if (rest != 0) {
    store<u64>(PAD, 0, 0);
    store<u64>(PAD, 0, 8);
    memory.copy(PAD, p + (<usize>full << 4), rest);
    polyBlocks(PAD, 1, HIBIT);
  }
}

/** p[0..len) ^= ks[0..len). */
function xorInPlace(p: usize, ks: usize, len: u32): void {
  let i: usize = 0;
  const n = <usize>len;
  for (; i + 16 <= n; i += 16) v128.store(p + i, v128.xor(v128.load(p + i), v128.load(ks + i)));
  for (; i < n; i++) store<u8>(p + i, load<u8>(p + i) ^ load<u8>(ks + i));
}

/** En- or decrypts DATA[0..len) from block 1 on (block 0 is the MAC key); FIRST is computed. */
function cryptData(n0: u32, n1: u32, n2: u32, len: u32): void {
  xorInPlace(DATA, FIRST + 64, len < FIRST_DATA_BYTES ? len : FIRST_DATA_BYTES);
  if (len > FIRST_DATA_BYTES) chachaXor(KEY, 4, n0, n1, n2, DATA + FIRST_DATA_BYTES, len - FIRST_DATA_BYTES, SCRATCH);
}

/** The MAC of (AD, ciphertext at DATA) under the one-time key in FIRST, to TAG. */
function macAead(adLen: u32, ctLen: u32): void {
  polyInit(FIRST); // the first 32 bytes of keystream block 0 are r || s
  macPadded(AD, adLen);
  macPadded(DATA, ctLen);
  store<u64>(PAD, <u64>adLen, 0);
  store<u64>(PAD, <u64>ctLen, 8);
  polyBlocks(PAD, 1, HIBIT);
  polyFinish(TAG);
}

function sealWith(n0: u32, n1: u32, n2: u32, adLen: u32, len: u32): i32 {
  if (adLen > MAX_AD || len > MAX_DATA) return -1;
  chachaXor4(KEY, 0, n0, n1, n2, ZERO, FIRST);
  cryptData(n0, n1, n2, len);
  macAead(adLen, len);
  memory.copy(DATA + len, TAG, TAG_BYTES);
  return <i32>(len + TAG_BYTES);
}

function openWith(n0: u32, n1: u32, n2: u32, adLen: u32, sealedLen: u32): i32 {
  if (adLen > MAX_AD || sealedLen < TAG_BYTES || sealedLen > MAX_DATA + TAG_BYTES) return -1;
  const len = sealedLen - TAG_BYTES;
  chachaXor4(KEY, 0, n0, n1, n2, ZERO, FIRST);
  macAead(adLen, len);
  // Constant-time comparison: all 16 bytes are always compared; only the final verdict branches.
  const got = DATA + len;
  const diff = (load<u64>(TAG, 0) ^ load<u64>(got, 0)) | (load<u64>(TAG, 8) ^ load<u64>(got, 8));
  if (diff != 0) return -1;
  cryptData(n0, n1, n2, len);
  return <i32>len;
}

/**
 * Encrypts DATA[0..len) in place under KEY with the nonce 0^4 || pn (u64 LE, pn = pnHi:pnLo),
 * authenticating AD[0..adLen), and writes the tag after it. Returns len + 16, or -1 if a length
 * is over its limit.
 */
export function seal(adLen: u32, len: u32, pnLo: u32, pnHi: u32): i32 {
  return sealWith(0, pnLo, pnHi, adLen, len);
}

/**
 * Checks the tag at the end of DATA[0..sealedLen) and, if it matches, decrypts the rest in
 * place. Returns the plaintext length, or -1 (bad tag or a length over its limit).
 */
export function open(adLen: u32, sealedLen: u32, pnLo: u32, pnHi: u32): i32 {
  return openWith(0, pnLo, pnHi, adLen, sealedLen);
}

/** seal() with the 12-byte nonce at NONCE. */
export function sealNonce(adLen: u32, len: u32): i32 {
  return sealWith(load<u32>(NONCE, 0), load<u32>(NONCE, 4), load<u32>(NONCE, 8), adLen, len);
}

/** open() with the 12-byte nonce at NONCE. */
export function openNonce(adLen: u32, sealedLen: u32): i32 {
  return openWith(load<u32>(NONCE, 0), load<u32>(NONCE, 4), load<u32>(NONCE, 8), adLen, sealedLen);
}

/** Raw ChaCha20: XORs DATA[0..len) with the keystream of KEY, NONCE from block `counter`. */
export function chacha20(counter: u32, len: u32): i32 {
  if (len > MAX_DATA) return -1;
  chachaXor(KEY, counter, load<u32>(NONCE, 0), load<u32>(NONCE, 4), load<u32>(NONCE, 8), DATA, len, SCRATCH);
  return <i32>len;
}

/** Raw Poly1305: the tag of DATA[0..len) under the 32-byte one-time key at KEY, to TAG. */
export function poly1305(len: u32): i32 {
  if (len > MAX_DATA) return -1;
  polyInit(KEY);
  const full = len >> 4;
  if (full != 0) polyBlocks(DATA, full, HIBIT);
  const rest = len & 15;
  if (rest != 0) {
    // A short final block: its bytes, then 0x01, then zeros, with no 2^128 bit (RFC 8439 §2.5.1).
    store<u64>(PAD, 0, 0);
    store<u64>(PAD, 0, 8);
    memory.copy(PAD, DATA + (<usize>full << 4), rest);
    store<u8>(PAD + rest, 1);
    polyBlocks(PAD, 1, 0);
  }
  polyFinish(TAG);
  return 16;
}
