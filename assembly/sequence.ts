// 16-bit wrap-around sequence math (docs/PROTOCOL.md §2). This file is the only place that
// compares wire sequences: never compare them with a raw `<`.

/** `a` is newer than `b` iff (a - b) mod 2^16 is in 1..32767. */
@inline
export function sequenceGreaterThan(a: u32, b: u32): bool {
  const d = (a - b) & 0xffff;
  return d != 0 && d < 0x8000;
}

/** How far `a` is ahead of `b`, modulo 2^16 (0..65535). */
@inline
export function sequenceDistance(a: u32, b: u32): u32 {
  return (a - b) & 0xffff;
}
