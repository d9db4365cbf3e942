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
 * memory) and bounded: at most maxIdle[class] idle buffers per size class are kept.
 */
const MIN_CLASS_BITS = 6; // 64 bytes
const MAX_CLASS_BITS = 11; // 2048 bytes >= the largest single frame payload (MAX_DATAGRAM_BYTES)
/**
 * Idle buffers kept per size class: 256 KiB of each class's buffers, at least 512 (2.5 MiB in all
 * at most). A bulk sender holds a couple of thousand small messages queued or in flight and gets
 * their buffers back in bursts as acknowledgements come; with 512 per class, about a quarter of
 * the 100 B messages of bench/e2e's aggregated bulk case (Bun) missed the pool and allocated.
 */
const MAX_IDLE_BYTES_PER_CLASS = 256 * 1024;
const MIN_IDLE_PER_CLASS = 512;

const idle: Uint8Array[][] = [];
const maxIdle: number[] = [];
for (let b = MIN_CLASS_BITS; b <= MAX_CLASS_BITS; b++) {
  idle.push([]);
  maxIdle.push(Math.max(MIN_IDLE_PER_CLASS, MAX_IDLE_BYTES_PER_CLASS >> b));
}

/** Largest message length served from the pool. */
export const POOLED_MAX_BYTES = 1 << MAX_CLASS_BITS;

function classOf(length: number): number {
  if (length <= 1 << MIN_CLASS_BITS) return 0;
  return 32 - Math.clz32(length - 1) - MIN_CLASS_BITS;
}

/**
 * A view of exactly `src.length` bytes holding a copy of `src`, over a pooled buffer of the next
 * size class. Idle views are kept as they were: a view is reused as is when the next message of
 * its class has the same length (games send many messages of one size), so the frame writer can
 * copy the whole view (`set(view)`, no subarray per write) and nothing is allocated; else a new
 * view of the same buffer is made. Class buffers are always ArrayBuffer-backed (off-heap), so
 * reading `.buffer` never has to move one.
 */
export function copyToPooled(src: Uint8Array): Uint8Array {
  const length = src.length;
  const cls = classOf(length);
  const free = idle[cls];
  let view: Uint8Array;
  if (free.length > 0) {
    view = free.pop()!;
    if (view.length !== length) view = new Uint8Array(view.buffer, 0, length);
  } else {
    view = new Uint8Array(new ArrayBuffer(1 << (cls + MIN_CLASS_BITS)), 0, length);
  }
  view.set(src);
  return view;
}

/**
 * Give back a view obtained from copyToPooled (nothing may read it afterwards). Its class follows
 * from its length, so its ArrayBuffer (cold in memory by then) is not read; a caller that knows
 * the length passes it, and the view is not read either.
 */
export function releasePooled(view: Uint8Array, length = view.length): void {
  if (length === 0 || length > POOLED_MAX_BYTES) return;
  const cls = classOf(length);
  const free = idle[cls];
  if (free.length < maxIdle[cls]) free.push(view);
}

/**
 * An exact copy of `src` in a buffer of its own. `slice()` copies only on a plain Uint8Array: a
 * Buffer's (Node, Bun) returns a view of the caller's bytes, which the caller may reuse.
 */
export function copyExact(src: Uint8Array): Uint8Array {
  if (src.constructor === Uint8Array) return src.slice();
  const copy = new Uint8Array(src.length);
  copy.set(src);
  return copy;
}
