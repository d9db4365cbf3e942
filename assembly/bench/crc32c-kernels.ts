// Both CRC-32C kernels in one module, for bench/engine/crc-kernels.mjs and
// test/engine/crc32c-kernel.test.ts: the engine's (assembly/crc32c.ts) and slicing-by-16 alone.
import { crcInit as engineInit, crcUpdate as engineUpdate } from "../crc32c";
import { crcInit as slicingInit, crcUpdate as slicingUpdate } from "./crc32c-slicing16";

export function init(): void {
  engineInit(0x776b6361, 1);
  slicingInit();
}

/** One raw-state step of the engine's kernel (what SLOT_CRC_STATE continues from). */
export function engineCrc(state: u32, ptr: usize, len: usize): u32 {
  return engineUpdate(state, ptr, len);
}

export function slicingCrc(state: u32, ptr: usize, len: usize): u32 {
  return slicingUpdate(state, ptr, len);
}

// `calls` independent CRCs of `len` bytes at ptr + 0..15 (every alignment), inside WebAssembly
// as the engine calls it; the xor of the results keeps the calls from being dropped.
export function engineLoop(ptr: usize, len: usize, calls: i32): u32 {
  let x: u32 = 0;
  for (let i = 0; i < calls; i++) x ^= engineUpdate(0xffffffff, ptr + <usize>(i & 15), len);
  return x;
}

export function slicingLoop(ptr: usize, len: usize, calls: i32): u32 {
  let x: u32 = 0;
  for (let i = 0; i < calls; i++) x ^= slicingUpdate(0xffffffff, ptr + <usize>(i & 15), len);
  return x;
}
