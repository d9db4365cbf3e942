/**
 * The one home of 16-bit wrap-around comparison (Fiedler's sequence_greater_than).
 * `a` is newer than `b` when going forward from `b` reaches `a` in fewer than half the
 * sequence space: (a - b) mod 65536 in 1..32767. Never compare wire sequences with `<`.
 */
export function sequenceGreaterThan(a: number, b: number): boolean {
  const d = (a - b) & 0xffff;
  return d !== 0 && d < 0x8000;
}

/** Signed distance from b to a in -32768..32767 (a - b, wrap-aware). */
export function sequenceDiff(a: number, b: number): number {
  return (((a - b) & 0xffff) << 16) >> 16;
}
