// Slicing-by-16 CRC-32C alone: the engine's kernel without its folding front end, the baseline
// bench/engine/crc-kernels.mjs measures assembly/crc32c.ts against in the same process. Same
// results bit for bit; not part of the engine (only assembly/bench/crc32c-kernels.ts uses it).

/** TABLE + t*1024 + b*4 = table t, entry b. Table 0 is the classic byte-wise table. */
const TABLE: usize = memory.data(16 * 1024, 16);

export function crcInit(): void {
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
}

@inline
function t(table: usize, byte: u32): u32 {
  return load<u32>(TABLE + (table << 10) + (<usize>byte << 2));
}

/** Feed `len` bytes at `ptr` into a raw CRC state (no final xor). */
export function crcUpdate(state: u32, ptr: usize, len: usize): u32 {
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
