// XOR parity over a group of equal-length packets (parity checking over packet groups): the parity block
// of N packets is their XOR, and any one missing packet is the XOR of the other N-1 plus the
// parity block — so `parityXor` both builds parity and recovers, ready for FEC.

/** dest = XOR of `count` blocks of `length` bytes whose i32 offsets are at `offsetsPtr`. */
export function parityXor(dest: usize, offsetsPtr: usize, count: u32, length: usize): void {
  if (count == 0) {
    memory.fill(dest, 0, length);
    return;
  }
  memory.copy(dest, <usize>load<i32>(offsetsPtr), length);
  const wide = length & ~<usize>15;
  for (let i: u32 = 1; i < count; i++) {
    const src = <usize>load<i32>(offsetsPtr + (<usize>i << 2));
    let k: usize = 0;
    for (; k < wide; k += 16) {
      v128.store(dest + k, v128.xor(v128.load(dest + k), v128.load(src + k)));
    }
    for (; k < length; k++) store<u8>(dest + k, load<u8>(dest + k) ^ load<u8>(src + k));
  }
}
