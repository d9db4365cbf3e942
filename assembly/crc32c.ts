// CRC-32C (Castagnoli): reflected polynomial 0x82F63B78, init 0xFFFFFFFF, final xor
// 0xFFFFFFFF — the iSCSI CRC of RFC 3720 §B.4.
//
// Two stages. Slicing-by-16 (sixteen 256-entry tables, 16 input bytes per step with four 32-bit
// loads and 16 table lookups) is bound by table-load throughput, about one load per byte.
// WebAssembly has no carry-less multiply, and SIMD cannot slice (i8x16.swizzle reads all 16
// lanes from ONE 16-byte table), so a datagram of FOLD_MIN bytes or more first goes through a
// table-free fold (the "Chorba" idea, arXiv 2412.16398, with byte-aligned exponents so that
// SIMD does it): a zero polynomial Z(y) = y^181 + y^66 + y^60 + y^36 + y^19 + y^17 + y^4 + 1,
// y = x^8, is a multiple of the CRC polynomial, so a byte at least 181 bytes before the end may
// be xored into the bytes 181-e positions after it (e in 0, 4, 17, 19, 36, 60, 66) and cleared
// without changing the CRC. Folded in order from the front, every byte but the last 192 (12
// vectors, at least 181) ends up clear; those few then go through slicing. Written as a "pull" over 16-byte vectors,
// byte j of the folded copy is the input byte xor the folded bytes j-181+e: eight unaligned
// v128 loads, seven xors and one store per 16 bytes. The nearest term reads 115 bytes back,
// seven vectors: a load overlapping a store still in flight cannot be forwarded and waits for
// it, so a zero polynomial with a term under ~64 bytes back loses most of the gain, and one
// under ~100 some of it. Among such polynomials of eight terms, this one has the lowest degree
// found (a smaller degree means a shorter sliced tail).

/** TABLE + t*1024 + b*4 = table t, entry b. Table 0 is the classic byte-wise table. */
const TABLE: usize = memory.data(16 * 1024, 16);

/** The 8 prefix bytes, assembled once at init. */
const PREFIX: usize = memory.data(8, 8);

/** CRC state after the 8-byte protocol prefix (magic, protocolId), before the final xor. */
let prefixState: u32 = 0;

export function crcInit(magic: u32, protocolId: u32): void {
  for (let n: u32 = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    store<u32>(TABLE + (<usize>n << 2), c);
  }
  for (let n: u32 = 0; n < 256; n++) {
    let c = load<u32>(TABLE + (<usize>n << 2));
    for (let t: usize = 1; t < 16; t++) {
      c = load<u32>(TABLE + (<usize>(c & 0xff) << 2)) ^ (c >>> 8);
      store<u32>(TABLE + (t << 10) + (<usize>n << 2), c);
    }
  }
  // The prefix is "ackw" + protocolId, little-endian, never sent (docs/PROTOCOL.md §1).
  store<u32>(PREFIX, magic);
  store<u32>(PREFIX, protocolId, 4);
  // Zeros before the folded copy stand for "no byte folded from there" (the fold's first
  // vectors read up to FOLD_SPAN bytes before it).
  memory.fill(FOLDED - FOLD_SPAN, 0, FOLD_SPAN);
  prefixState = crcUpdate(0xffffffff, PREFIX, 8);
}

@inline
function t(table: usize, byte: u32): u32 {
  return load<u32>(TABLE + (table << 10) + (<usize>byte << 2));
}

/** Slicing-by-16 over `len` bytes at `ptr`, from raw state `state` (no final xor). Inlined: a
 *  13-byte ack's CRC is a handful of lookups, and a call more is a tenth of it. */
@inline
function sliced(state: u32, ptr: usize, len: usize): u32 {
  let crc = state;
  let p = ptr;
  const end16 = ptr + (len & ~<usize>15);
  while (p < end16) {
    const w0 = load<u32>(p) ^ crc;
    const w1 = load<u32>(p, 4);
    const w2 = load<u32>(p, 8);
    const w3 = load<u32>(p, 12);
    crc =
      t(15, w0 & 0xff) ^ t(14, (w0 >>> 8) & 0xff) ^ t(13, (w0 >>> 16) & 0xff) ^ t(12, w0 >>> 24) ^
      t(11, w1 & 0xff) ^ t(10, (w1 >>> 8) & 0xff) ^ t(9, (w1 >>> 16) & 0xff) ^ t(8, w1 >>> 24) ^
      t(7, w2 & 0xff) ^ t(6, (w2 >>> 8) & 0xff) ^ t(5, (w2 >>> 16) & 0xff) ^ t(4, w2 >>> 24) ^
      t(3, w3 & 0xff) ^ t(2, (w3 >>> 8) & 0xff) ^ t(1, (w3 >>> 16) & 0xff) ^ t(0, w3 >>> 24);
    p += 16;
  }
  // The 0..15 bytes left: one 8-byte and one 4-byte slicing step where they fit, then single
  // bytes. A lone byte step is a chain of dependent lookups (~2 ns each here), so a 13-byte
  // pure ack or a datagram ending 10 bytes past a block spent as long in its tail as in ~4
  // blocks. Byte k of an n-byte step uses table n-1-k, as in the 16-byte loop.
  const end = ptr + len;
  if (end - p >= 8) {
    const w0 = load<u32>(p) ^ crc;
    const w1 = load<u32>(p, 4);
    crc =
      t(7, w0 & 0xff) ^ t(6, (w0 >>> 8) & 0xff) ^ t(5, (w0 >>> 16) & 0xff) ^ t(4, w0 >>> 24) ^
      t(3, w1 & 0xff) ^ t(2, (w1 >>> 8) & 0xff) ^ t(1, (w1 >>> 16) & 0xff) ^ t(0, w1 >>> 24);
    p += 8;
  }
  if (end - p >= 4) {
    const w0 = load<u32>(p) ^ crc;
    crc = t(3, w0 & 0xff) ^ t(2, (w0 >>> 8) & 0xff) ^ t(1, (w0 >>> 16) & 0xff) ^ t(0, w0 >>> 24);
    p += 4;
  }
  while (p < end) {
    crc = t(0, (crc ^ load<u8>(p)) & 0xff) ^ (crc >>> 8);
    p++;
  }
  return crc;
}

/** The zero polynomial's degree in bytes: a byte folds 181-e bytes on, so the last 181 cannot. */
const FOLD_SPAN: usize = 181;
/** Bytes left to slicing after the fold: whole vectors, at least FOLD_SPAN. A fixed count spares
 *  the tail the overlapping store and the slicing its 1..15-byte remainder steps. */
const FOLD_TAIL_BYTES: usize = 192;
/** Shortest input that takes the fold; shorter goes to slicing alone. Above FOLD_TAIL_BYTES;
 *  below about 240 bytes the tail's 12 vectors cost more than they save. */
const FOLD_MIN: usize = 240;
/** Longest input folded at once; longer input goes in FOLD_CHUNK-byte pieces, chained. */
const FOLD_CHUNK: usize = 2048;
/** Bytes past the folded copy that must read as zeros: the fold's last vector writes up to 15
 *  past it, and the tail's pulls reach at most 76 past it (its last vector at 176, minus
 *  FOLD_SPAN, plus the y^66 term's 66 and 15 more bytes). Zeroed on every call, which also
 *  clears what an earlier, longer input left there. */
const FOLD_CLEAR: usize = 96;

/** Scratch: FOLD_SPAN zero bytes, then the folded copy (less than FOLD_CHUNK bytes), then
 *  FOLD_CLEAR bytes that are zeroed before the tail reads them. */
const FOLD_SCRATCH: usize = memory.data(<i32>(FOLD_SPAN + FOLD_CHUNK + FOLD_CLEAR), 16);
const FOLDED: usize = FOLD_SCRATCH + FOLD_SPAN;
/** The last FOLD_TAIL_BYTES after folding, for slicing. */
const FOLD_TAIL: usize = memory.data(<i32>FOLD_TAIL_BYTES, 16);

/** Input vector `v` xor the seven folded vectors that Z(y) pulls into it; `from` is the folded
 *  copy's address FOLD_SPAN bytes before `v`'s own, so each term's distance is a load offset. */
@inline
function pulled(v: v128, from: usize): v128 {
  // A tree of xors, not a chain, with the nearest term (the latest store) xored last.
  const a = v128.xor(v128.load(from), v128.load(from, 4));
  const b = v128.xor(v128.load(from, 17), v128.load(from, 19));
  const c = v128.xor(v128.load(from, 36), v128.load(from, 60));
  return v128.xor(v128.xor(a, b), v128.xor(c, v128.xor(v, v128.load(from, 66))));
}

/** `len` in FOLD_MIN..FOLD_CHUNK bytes at `ptr` from raw state `state`: fold, then slice. */
function folded(state: u32, ptr: usize, len: usize): u32 {
  // The state xors into the first four bytes (a raw state is "these bits still to divide"),
  // after which the CRC of the whole input from state 0 is the same.
  const folds = len - FOLD_TAIL_BYTES;
  store<v128>(FOLDED, pulled(v128.xor(v128.load(ptr), i32x4.replace_lane(i32x4.splat(0), 0, state)), FOLDED - FOLD_SPAN));
  // The last vector may run up to 15 bytes past `folds`: those bytes' pulls all come from before
  // `folds` (every term is 115 or more bytes back), so they hold tail values, never read as
  // folded ones (cleared below) and never past the input (the tail is 192 bytes).
  for (let j: usize = 16; j < folds; j += 16) {
    store<v128>(FOLDED + j, pulled(v128.load(ptr + j), FOLDED + j - FOLD_SPAN));
  }
  // Only bytes before `folds` fold onward: past it the tail's pulls must read zeros.
  const zero = i32x4.splat(0);
  const clear = FOLDED + folds;
  v128.store(clear, zero);
  v128.store(clear, zero, 16);
  v128.store(clear, zero, 32);
  v128.store(clear, zero, 48);
  v128.store(clear, zero, 64);
  v128.store(clear, zero, 80);
  const src = ptr + folds;
  const from = clear - FOLD_SPAN;
  for (let t: usize = 0; t < FOLD_TAIL_BYTES; t += 16) {
    store<v128>(FOLD_TAIL + t, pulled(v128.load(src + t), from + t));
  }
  return sliced(0, FOLD_TAIL, FOLD_TAIL_BYTES);
}

/** `len` >= FOLD_MIN bytes: FOLD_CHUNK-byte pieces while longer, each continuing the last. */
function foldedChunks(state: u32, ptr: usize, len: usize): u32 {
  let crc = state;
  let p = ptr;
  let n = len;
  while (n > FOLD_CHUNK) {
    crc = folded(crc, p, FOLD_CHUNK);
    p += FOLD_CHUNK;
    n -= FOLD_CHUNK;
  }
  return n < FOLD_MIN ? crcUpdate(crc, p, n) : folded(crc, p, n);
}

/** Feed `len` bytes at `ptr` into a raw CRC state (no final xor). */
export function crcUpdate(state: u32, ptr: usize, len: usize): u32 {
  return len < FOLD_MIN ? sliced(state, ptr, len) : foldedChunks(state, ptr, len);
}

/** Plain CRC-32C of `len` bytes (no prefix). */
export function crc32c(ptr: usize, len: usize): u32 {
  return crcUpdate(0xffffffff, ptr, len) ^ 0xffffffff;
}

/** CRC-32C of the prefix that left raw state `state`, then `len` bytes at `ptr`. */
@inline
export function crcFrom(state: u32, ptr: usize, len: usize): u32 {
  return crcUpdate(state, ptr, len) ^ 0xffffffff;
}

/** CRC-32C of prefix || bytes: what a handshake datagram's trailing 4 bytes must hold. */
export function crcWithPrefix(ptr: usize, len: usize): u32 {
  return crcFrom(prefixState, ptr, len);
}

/** The raw state after the protocol prefix followed by `len` more prefix bytes at `ptr` (a
 *  connection's key): the start of that connection's DATA and KEEPALIVE CRCs. */
export function prefixStateWith(ptr: usize, len: usize): u32 {
  return crcUpdate(prefixState, ptr, len);
}

/** The raw state after the protocol prefix alone (a slot with no key yet). */
export function protocolPrefixState(): u32 {
  return prefixState;
}
