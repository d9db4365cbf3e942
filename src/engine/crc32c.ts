/**
 * CRC-32C (Castagnoli) in TypeScript, slicing-by-8, for the reference engine and the few
 * places outside the engine that checksum (LAN discovery). Table k (at k*256) advances a byte
 * that sits k positions before the end of an 8-byte block. Reflected polynomial 0x82F63B78
 * (RFC 3720 §B.4, the iSCSI CRC).
 */
export const CRC32C_POLY_REFLECTED = 0x82f63b78;

function buildTables(): Uint32Array {
  const t = new Uint32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ CRC32C_POLY_REFLECTED : c >>> 1;
    t[n] = c >>> 0;
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n];
    for (let k = 1; k < 8; k++) {
      c = t[c & 0xff] ^ (c >>> 8);
      t[k * 256 + n] = c >>> 0;
    }
  }
  return t;
}

export const CRC32C_TABLES: Uint32Array = buildTables();

/** The final CRC32C of the prefix that left raw state `state`, then b[off .. off + len). */
export function crcFrom(state: number, b: Uint8Array, off: number, len: number): number {
  return (crcUpdate(state, b, off, len) ^ 0xffffffff) >>> 0;
}

/** CRC32C, slicing-by-8 (reflected, poly 0x82F63B78). `crc` is the running (non-final) state. */
export function crcUpdate(crc: number, b: Uint8Array, off: number, len: number): number {
  const t = CRC32C_TABLES;
  let i = off;
  const end = off + len;
  while (end - i >= 8) {
    const lo = (crc ^ (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24))) >>> 0;
    crc =
      t[1792 + (lo & 0xff)] ^
      t[1536 + ((lo >>> 8) & 0xff)] ^
      t[1280 + ((lo >>> 16) & 0xff)] ^
      t[1024 + (lo >>> 24)] ^
      t[768 + b[i + 4]] ^
      t[512 + b[i + 5]] ^
      t[256 + b[i + 6]] ^
      t[b[i + 7]];
    i += 8;
  }
  while (i < end) crc = t[(crc ^ b[i++]) & 0xff] ^ (crc >>> 8);
  return crc >>> 0;
}
