// Self-checking payloads: every byte is derived from the message's sequence number,
// so a receiver can verify a message on its own (no shared table, no copy kept by the
// sender). Layout, little-endian:
//   [0..4)  u32 sequence
//   [4..8)  u32 total length (lets a truncated or padded message be caught)
//   [8..n)  byte i = (seq * 31 + i * 7) & 0xff   -- cheap, and different per message
// Minimum size is 8 bytes.

export const PAYLOAD_HEADER = 8;

export function fillPayload(buf: Uint8Array, seq: number): void {
  const n = buf.length;
  if (n < PAYLOAD_HEADER) throw new RangeError(`payload needs at least ${PAYLOAD_HEADER} bytes, got ${n}`);
  writeU32(buf, 0, seq >>> 0);
  writeU32(buf, 4, n);
  const base = Math.imul(seq, 31);
  for (let i = PAYLOAD_HEADER; i < n; i++) buf[i] = (base + i * 7) & 0xff;
}

/** Returns the sequence carried by a valid payload, or -1 if any byte is wrong. */
export function checkPayload(buf: Uint8Array): number {
  const n = buf.length;
  if (n < PAYLOAD_HEADER) return -1;
  if (readU32(buf, 4) !== n) return -1;
  const seq = readU32(buf, 0);
  const base = Math.imul(seq, 31);
  for (let i = PAYLOAD_HEADER; i < n; i++) {
    if (buf[i] !== ((base + i * 7) & 0xff)) return -1;
  }
  return seq;
}

export function writeU32(buf: Uint8Array, off: number, v: number): void {
  buf[off] = v & 0xff;
  buf[off + 1] = (v >>> 8) & 0xff;
  buf[off + 2] = (v >>> 16) & 0xff;
  buf[off + 3] = (v >>> 24) & 0xff;
}

export function readU32(buf: Uint8Array, off: number): number {
  return (buf[off] | (buf[off + 1] << 8) | (buf[off + 2] << 16) | (buf[off + 3] << 24)) >>> 0;
}
