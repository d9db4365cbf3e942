/**
 * The receive policy of the callback-driven adapters (Node's node:dgram, Bun's udpSocket): the
 * first datagram of an event-loop turn goes to the driver at once, so a ping-pong never waits a
 * turn; the rest of that turn's burst is handed over as one batch when the turn ends, so a burst
 * costs one driver wake-up. Runtime-neutral: the adapter calls `push` from its socket callback.
 */
import { deferToNextTurn } from "./host.js";
import type { Address } from "../session/sans-io.js";
import type { DatagramBatch } from "./socket.js";

export class TurnReceiver {
  readonly #first: DatagramBatch = { length: 1, from: [""], bytes: [new Uint8Array(0)] };
  readonly #batch: DatagramBatch = { length: 0, from: [], bytes: [] };
  #callback: (batch: DatagramBatch) => void = () => {};
  #turnOpen = false;
  #closed = false;
  readonly #endTurn = (): void => {
    this.#turnOpen = false;
    const batch = this.#batch;
    if (this.#closed || batch.length === 0) return;
    this.#callback(batch);
    batch.length = 0;
  };

  onDatagrams(callback: (batch: DatagramBatch) => void): void {
    this.#callback = callback;
  }

  /** One received datagram; `bytes` must be the adapter's own (not reused by the runtime). */
  push(from: Address, bytes: Uint8Array): void {
    if (!this.#turnOpen) {
      this.#turnOpen = true;
      deferToNextTurn(this.#endTurn);
      if (this.#closed) return;
      this.#first.from[0] = from;
      this.#first.bytes[0] = bytes;
      this.#callback(this.#first);
      return;
    }
    const batch = this.#batch;
    const n = batch.length++;
    batch.from[n] = from;
    batch.bytes[n] = bytes;
  }

  /** No more deliveries (the socket is closing). */
  close(): void {
    this.#closed = true;
  }
}
