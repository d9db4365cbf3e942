/**
 * The receive policy of every adapter (Node's node:dgram, Bun's udpSocket, Deno's receive loop):
 * while traffic is quiet, the first datagram of an event-loop turn goes to the driver at once, so
 * a ping-pong never waits a turn; the rest of that turn's burst is handed over as one batch when
 * the turn ends. While traffic is bursty, the first datagram waits for the turn end too, so a
 * burst costs one driver service, not two. At most MAX_HELD datagrams are held: a turn that keeps
 * bringing more hands them over in batches of that size at once. Runtime-neutral: the adapter
 * calls `push` from its socket callback.
 *
 * Finding the end of a turn costs a setImmediate, about half a microsecond per datagram, which is
 * all waste when every turn brings one datagram (a ping-pong, a game's ticks). So the turn end is
 * watched only while traffic is bursty: quiet traffic is delivered datagram by datagram and only
 * every PROBE_EVERY-th datagram arms a turn end, to notice a burst starting (then at most that
 * many datagrams of it are delivered one by one). After QUIET_TURNS_TO_RELAX watched turns with a
 * single datagram each, the watch stops again (so a ping-pong after a burst pays the turn end for
 * at most that many turns). Either way each datagram reaches the driver in arrival order, and
 * never later than the end of its turn.
 */
import { deferToNextTurn } from "./host.js";
import type { Address } from "../session/sans-io.js";
import type { DatagramBatch } from "./socket.js";

/** While quiet, one datagram in this many arms a turn end to look for a burst. */
const PROBE_EVERY = 16;
/** Datagrams held for the turn end at most: beyond that the batch is handed over at once. */
const MAX_HELD = 64;
/** Watched turns of one datagram each after which traffic counts as quiet again. */
const QUIET_TURNS_TO_RELAX = 8;

export class TurnReceiver {
  readonly #first: DatagramBatch = { length: 1, from: [""], bytes: [new Uint8Array(0)] };
  readonly #batch: DatagramBatch = { length: 0, from: [], bytes: [] };
  #callback: (batch: DatagramBatch) => void = () => {};
  /** A turn end is armed: datagrams after the first are collected until it runs. */
  #turnOpen = false;
  /** Datagrams pushed since the turn end was armed (the one that armed it included). */
  #seenInTurn = 0;
  #bursty = false;
  #sinceProbe = 0;
  #quietTurns = 0;
  #closed = false;
  readonly #endTurn = (): void => {
    this.#turnOpen = false;
    const batch = this.#batch;
    const seen = this.#seenInTurn;
    this.#seenInTurn = 0;
    // The turn brought one datagram (held or already delivered) or none: a quiet turn.
    if (seen <= 1) {
      if (this.#bursty && ++this.#quietTurns >= QUIET_TURNS_TO_RELAX) this.#bursty = false;
      if (batch.length === 0) return;
    } else {
      this.#bursty = true;
      this.#quietTurns = 0;
    }
    if (this.#closed) {
      batch.length = 0;
      return;
    }
    this.#callback(batch);
    batch.length = 0;
  };

  onDatagrams(callback: (batch: DatagramBatch) => void): void {
    this.#callback = callback;
  }

  /** One received datagram; `bytes` must be the adapter's own (not reused by the runtime). */
  push(from: Address, bytes: Uint8Array): void {
    if (this.#turnOpen) {
      this.#seenInTurn++;
      const batch = this.#batch;
      const n = batch.length++;
      batch.from[n] = from;
      batch.bytes[n] = bytes;
      // A turn that never ends while datagrams keep coming (Deno's receive loop runs on
      // microtasks while the kernel has data) still hands them over, MAX_HELD at a time.
      if (n + 1 >= MAX_HELD && !this.#closed) {
        this.#callback(batch);
        batch.length = 0;
      }
      return;
    }
    if (this.#bursty) {
      // A burst is under way: this turn's first datagram waits for the turn end with the rest,
      // so the burst costs one driver service, not two (one for the first, one for the rest).
      this.#turnOpen = true;
      this.#seenInTurn = 1;
      deferToNextTurn(this.#endTurn);
      const batch = this.#batch;
      batch.from[0] = from;
      batch.bytes[0] = bytes;
      batch.length = 1;
      return;
    }
    if (++this.#sinceProbe >= PROBE_EVERY) {
      this.#sinceProbe = 0;
      this.#turnOpen = true;
      this.#seenInTurn = 1;
      deferToNextTurn(this.#endTurn);
    }
    if (this.#closed) return;
    this.#first.from[0] = from;
    this.#first.bytes[0] = bytes;
    this.#callback(this.#first);
  }

  /** No more deliveries (the socket is closing). */
  close(): void {
    this.#closed = true;
  }
}
