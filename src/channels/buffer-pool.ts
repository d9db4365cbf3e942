/**
 * Reusable send buffers for small messages (internal to src/channels).
 *
 * `ChannelSet.send` must copy the caller's bytes (the caller may reuse its buffer at once). For
 * a message that fits one frame, the copy goes into a pooled buffer of the next power-of-two
 * size instead of a fresh allocation, and the buffer comes back here when the message can never
 * be written again: acknowledged, abandoned (superseded / connection closed), or, on unreliable
 * channels, written once. Allocating a small ArrayBuffer per message was a large share of the
 * send path and of GC in bench:core.
 *
 * The pool is shared by every ChannelSet in the process (idle buffers are not per-connection
 * memory) and bounded: at most MAX_IDLE_PER_CLASS idle buffers per size class are kept.
 */
const MIN_CLASS_BITS = 6; // 64 bytes
const MAX_CLASS_BITS = 11; // 2048 bytes >= the largest single frame payload (MAX_DATAGRAM_BYTES)
const MAX_IDLE_PER_CLASS = 512;

const idle: Uint8Array[][] = [];
for (let b = MIN_CLASS_BITS; b <= MAX_CLASS_BITS; b++) idle.push([]);

/** Largest message length served from the pool. */
export const POOLED_MAX_BYTES = 1 << MAX_CLASS_BITS;

function classOf(length: number): number {
  if (length <= 1 << MIN_CLASS_BITS) return 0;
  return 32 - Math.clz32(length - 1) - MIN_CLASS_BITS;
}

/** A buffer of at least `length` bytes (pooled if length <= POOLED_MAX_BYTES) holding a copy of `src`. */
export function copyToPooled(src: Uint8Array): Uint8Array {
  const length = src.length;
  const free = idle[classOf(length)];
  const buffer = free.length > 0 ? free.pop()! : new Uint8Array(1 << (classOf(length) + MIN_CLASS_BITS));
  buffer.set(src);
  return buffer;
}

/** Give back a buffer obtained from copyToPooled (nothing may read it afterwards). */
export function releasePooled(buffer: Uint8Array): void {
  const size = buffer.length;
  if (size < 1 << MIN_CLASS_BITS || size > POOLED_MAX_BYTES || (size & (size - 1)) !== 0) return;
  const free = idle[classOf(size)];
  if (free.length < MAX_IDLE_PER_CLASS) free.push(buffer);
}
