/**
 * Little-endian integers and doubles over a byte array (docs/PROTOCOL.md: "All integers are
 * little-endian"). Bounds are the caller's, checked once per packet or frame.
 */

export function readU16(b: Uint8Array, at: number): number {
  return b[at] | (b[at + 1] << 8);
}

export function readU32(b: Uint8Array, at: number): number {
  return (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0;
}

export function writeU16(b: Uint8Array, at: number, v: number): void {
  b[at] = v;
  b[at + 1] = v >>> 8;
}

export function writeU32(b: Uint8Array, at: number, v: number): void {
  b[at] = v;
  b[at + 1] = v >>> 8;
  b[at + 2] = v >>> 16;
  b[at + 3] = v >>> 24;
}

// f64 through one shared 8-byte scratch (no DataView per call).
const F64_BUFFER = new ArrayBuffer(8);
const F64_VIEW = new DataView(F64_BUFFER);
const F64_BYTES = new Uint8Array(F64_BUFFER);

export function writeF64(b: Uint8Array, at: number, value: number): void {
  F64_VIEW.setFloat64(0, value, true);
  b.set(F64_BYTES, at);
}

export function readF64(b: Uint8Array, at: number): number {
  for (let i = 0; i < 8; i++) F64_BYTES[i] = b[at + i];
  return F64_VIEW.getFloat64(0, true);
}
