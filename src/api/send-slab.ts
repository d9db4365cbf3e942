/**
 * Copies of outgoing datagrams without an allocation per datagram.
 *
 * The driver's transmit bytes are views into the engine's send arena, valid only until the next
 * call into the engine. A runtime that may read them later (node:dgram queues the buffer when
 * the kernel refuses it; Bun keeps what sendMany could not send; Deno's awaited sends) needs a
 * copy. A fresh `slice()` per datagram costs an ArrayBuffer each (GC and external-memory
 * bookkeeping); here copies are cut from 64 KiB slabs instead.
 *
 * A region handed out is never written again until the adapter says the runtime is done with
 * every copy (`releaseAll`). A drain of a large window fills several slabs before the adapter
 * can release them (Bun sends a drain's copies in one sendMany at its end): the slabs are kept
 * and reused from the first on after `releaseAll`, up to MAX_KEPT_SLABS of them, so steady bulk
 * traffic allocates none (a fresh zeroed 64 KiB slab per 64 datagrams of 1000 B was ~2% of a
 * Bun bulk profile).
 */
const SLAB_BYTES = 64 * 1024;
/** Slabs kept for reuse after releaseAll (4 MiB); more are let go to the GC. */
const MAX_KEPT_SLABS = 64;

export class SendSlab {
  readonly #slabs: Uint8Array[] = [new Uint8Array(SLAB_BYTES)];
  /** Index in #slabs of the slab being cut. */
  #current = 0;
  #slab: Uint8Array = this.#slabs[0]!;
  #used = 0;

  /** A copy of `bytes` that stays intact until `releaseAll()`. */
  copy(bytes: Uint8Array): Uint8Array {
    const n = bytes.length;
    if (this.#used + n > this.#slab.length) this.#next(n);
    const at = this.#used;
    // A view made from the buffer directly: cheaper than subarray() (notably on Bun).
    const view = new Uint8Array(this.#slab.buffer, at, n);
    view.set(bytes);
    this.#used = at + n;
    return view;
  }

  /** The runtime holds none of the copies any more: the slabs are reused from the first. */
  releaseAll(): void {
    this.#used = 0;
    if (this.#current !== 0) {
      this.#current = 0;
      this.#slab = this.#slabs[0]!;
    }
  }

  #next(n: number): void {
    const slabs = this.#slabs;
    let i = this.#current + 1;
    // A kept slab too small for an oversized copy (never on the wire's MTUs) is skipped.
    while (i < slabs.length && slabs[i]!.length < n) i++;
    let slab = slabs[i];
    if (slab === undefined) {
      slab = new Uint8Array(Math.max(SLAB_BYTES, n));
      if (slabs.length < MAX_KEPT_SLABS) {
        slabs.push(slab);
        i = slabs.length - 1;
      } else {
        // Past the bound: this slab is not kept, and cutting goes on from the last kept one's
        // index, so the next full slab allocates again rather than reusing one in use.
        i = slabs.length;
      }
    }
    this.#current = i;
    this.#slab = slab;
    this.#used = 0;
  }
}
