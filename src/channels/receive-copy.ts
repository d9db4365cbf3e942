/**
 * Copies of received payloads out of the engine's arena (internal to src/channels).
 *
 * A delivered message must outlive the arena (it is reused by the next batch), so its bytes are
 * copied into memory of its own. On V8 (Node, Deno) a new ArrayBuffer of more than 64 bytes is
 * an off-heap allocation (~0.5 us for 100 B, more in GC): one per message was the largest cost
 * of the receive path. So, like Node's own `Buffer.allocUnsafe` pool, messages of 65..1024 bytes
 * are carved in turn out of one process-wide slab of 32 KiB (each delivered as a view of its
 * part, 8-byte aligned); a new slab is taken when the rest of the current one is too small.
 * The slab is four times Node's pool: a new ArrayBuffer of a few KiB costs as much as copying
 * several KiB, and at 1 KiB messages an 8 KiB slab paid that every eighth message.
 * Messages of 64 bytes or less get a small buffer of their own (V8 keeps those in the GC heap,
 * cheaper than a slab view), larger ones an exact buffer of their own.
 *
 * The trade, the same as Node's Buffer pool: `data.byteOffset` may be non-zero, `data.buffer` may
 * hold other messages (of any connection, received before or after), and a message the
 * application keeps keeps at most one 32 KiB slab alive. Bytes are never shared: each message's
 * part is written once, before it is handed out, and never again.
 *
 * Frames held until their Release (reliable-ordered, out of order) are not copied into the slab
 * (`copyHeld`): a peer can make a connection hold up to a window of them, and each charged only
 * its own length against the receive-buffer bound must not pin a slab.
 *
 * On Bun (JavaScriptCore) each message is instead copied into a buffer of its own (see
 * own-copies.ts): there a small typed array of its own costs about as much as a view.
 */
import { ownSmallCopies } from "./own-copies.js";

/** Bytes per slab. */
export const SLAB_BYTES = 32 * 1024;
/** Largest message carved from the slab (larger ones get an exact buffer of their own). */
export const SLAB_MAX_MESSAGE_BYTES = 1024;
/** Up to this many bytes a buffer of its own is on V8's GC heap (cheaper than a slab view). */
const ON_HEAP_MAX_BYTES = 64;

/** One copy of arena bytes into a new buffer of its own. */
export function copyOut(arena: Uint8Array, offset: number, length: number): Uint8Array {
  // slice() allocates without zero-filling and needs no subarray view; only on a plain
  // Uint8Array (a Node Buffer's slice() is a view, and a subclass would build its own kind).
  if (arena.constructor === Uint8Array) return arena.slice(offset, offset + length);
  const out = new Uint8Array(length);
  if (length > 0) out.set(new Uint8Array(arena.buffer, arena.byteOffset + offset, length));
  return out;
}

// The current slab (allocated on the first message that needs one), a view of all of it, and
// the first free byte. `slabUsed = SLAB_BYTES` until then, so the first message takes one.
let slab: ArrayBuffer | undefined;
let slabBytes: Uint8Array | undefined;
let slabUsed = SLAB_BYTES;

/**
 * A copy of arena[offset .. offset + length) that outlives the arena: a view of the slab for
 * 65..1024 bytes (V8), else a buffer of its own.
 */
export function copyMessage(arena: Uint8Array, offset: number, length: number): Uint8Array {
  if (!fromSlab(length)) return ownCopy(arena, offset, length);
  return carve(arena.buffer, arena.byteOffset + offset, length);
}

/**
 * copyMessage for a caller that keeps the arena's `buffer` and `byteOffset` (ChannelSet, per
 * connection). Reading `.buffer` of a view over WebAssembly memory is a slow getter on V8
 * (~20-40 ns, a quarter of a 100 B message's copy), and an engine passes the same arena view
 * with every record; a view's buffer never changes (engine memory never grows, so it is never
 * detached). The caller keeps them rather than this module, so that no module state keeps a
 * closed endpoint's engine memory (megabytes) alive.
 */
export function copyMessageIn(
  arena: Uint8Array,
  arenaBuffer: ArrayBufferLike,
  arenaByteOffset: number,
  offset: number,
  length: number,
): Uint8Array {
  if (!fromSlab(length)) return ownCopy(arena, offset, length);
  return carve(arenaBuffer, arenaByteOffset + offset, length);
}

/** Whether a received message of `length` bytes is carved from the slab (65..1024 B on V8). */
function fromSlab(length: number): boolean {
  return length > ON_HEAP_MAX_BYTES && length <= SLAB_MAX_MESSAGE_BYTES && !ownSmallCopies();
}

/** A buffer of its own (a shared empty one is not handed out: each message is its own). */
function ownCopy(arena: Uint8Array, offset: number, length: number): Uint8Array {
  return length === 0 ? new Uint8Array(0) : copyOut(arena, offset, length);
}

/** The next part of the slab (a new slab if the rest is too small), holding buffer[from .. from + length). */
function carve(buffer: ArrayBufferLike, from: number, length: number): Uint8Array {
  let at = slabUsed;
  if (at + length > SLAB_BYTES) {
    slab = new ArrayBuffer(SLAB_BYTES);
    slabBytes = new Uint8Array(slab);
    at = 0;
  }
  // Aligned like Node's pool, so the part can also be viewed as a wider typed array.
  slabUsed = (at + length + 7) & ~7;
  slabBytes!.set(new Uint8Array(buffer, from, length), at);
  return new Uint8Array(slab!, at, length);
}

/** A copy of a held frame's payload (a buffer of its own: see the module comment). */
export function copyHeld(arena: Uint8Array, offset: number, length: number): Uint8Array {
  return length === 0 ? new Uint8Array(0) : copyOut(arena, offset, length);
}

/** @internal For tests: start a new slab at the next copy. */
export function resetSlab(): void {
  slab = undefined;
  slabBytes = undefined;
  slabUsed = SLAB_BYTES;
}
