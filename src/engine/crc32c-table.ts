/**
 * CRC-32C (Castagnoli) lookup tables for slicing-by-8: table k (at k*256) advances a byte
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
