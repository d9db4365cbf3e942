/**
 * Copies of outgoing datagrams without an allocation per datagram.
 *
 * The driver's transmit bytes are views into the engine's send arena, valid only until the next
 * call into the engine. A runtime that may read them later (node:dgram queues the buffer when
 * the kernel refuses it; Bun keeps what sendMany could not send; Deno's awaited sends) needs a
 * copy. A fresh `slice()` per datagram costs an ArrayBuffer each (GC and external-memory
 * bookkeeping); here copies are cut from one 64 KiB slab instead.
 *
 * A region handed out is never written again until the adapter says the runtime is done with
 * every copy (`releaseAll`). When the slab is full a new one is started; the old one lives on
 * only as long as the runtime still references one of its views.
 */
const SLAB_BYTES = 64 * 1024;

export class SendSlab {
  #slab = new Uint8Array(SLAB_BYTES);
  #used = 0;

  /** A copy of `bytes` that stays intact until `releaseAll()`. */
  copy(bytes: Uint8Array): Uint8Array {
    const n = bytes.length;
    if (this.#used + n > this.#slab.length) {
      this.#slab = new Uint8Array(Math.max(SLAB_BYTES, n));
      this.#used = 0;
    }
    const view = this.#slab.subarray(this.#used, this.#used + n);
    view.set(bytes);
    this.#used += n;
    return view;
  }

  /** The runtime holds none of the copies any more: the slab is reused from its start. */
  releaseAll(): void {
    this.#used = 0;
  }
}
