/**
 * The driver: the only thing between a sans-IO endpoint and a real socket and clock.
 *
 * One wake-up (a burst of received datagrams, the timer, or commands from the application):
 *   1. handleDatagram(now, from, bytes) for every datagram of the burst;
 *   2. handleTimeout(now) if the endpoint's deadline has passed;
 *   3. drain pollEvent() to the application (listeners may call send/close: that only marks
 *      the driver dirty, it never re-enters);
 *   4. drain pollTransmit(now) to the socket, then socket.flush() (batched runtimes send here);
 *   5. keep ONE timer armed for pollTimeout().
 * The clock is read once per wake-up.
 */
import type { EndpointEvent } from "../session/types.js";
import type { EndpointLike } from "./endpoint-like.js";
import { host, monotonicNow } from "./host.js";
import type { DatagramBatch, DatagramSocket } from "./socket.js";
import { numericSeedKey, Xoshiro128 } from "../util/xoshiro.js";

export interface DriverOptions {
  /** Seed 004's drop-test switch: fraction of outgoing datagrams to discard (0..1). */
  dropTest?: number;
  /** Seed of the drop-test randomness. */
  seed?: number;
}

/** Queued bytes from which a connection needs a "drain" unless the application sets another. */
export const DEFAULT_HIGH_WATER_MARK = 1024 * 1024;

/** A connection waiting for its queued bytes to fall below its high-water mark. */
export interface DrainWatcher {
  /** Leaves `Driver.draining` and emits "drain" if the bytes fell low enough (a send from its
   *  listener may put it back). */
  _checkDrain(): void;
}

/** Rounds of (events, transmits) per wake-up when listeners keep issuing commands. */
const MAX_ROUNDS_PER_WAKE = 8;
/**
 * Datagrams handed to the endpoint between two services. The endpoint seals a pure ack every
 * 16 datagrams of a connection but can only hold so many until they are polled (its send
 * arena), and the acks it holds do not leave until the service: a runtime that delivers a
 * thousand datagrams in one turn (Bun reads its whole kernel buffer at once) would otherwise
 * have acks dropped or sent late, and the peer resends packets that had arrived. Node's
 * libuv reads at most 32 datagrams per socket wake-up, so this keeps every runtime there.
 */
const MAX_DATAGRAMS_PER_SERVICE = 32;

export class Driver {
  readonly endpoint: EndpointLike;
  readonly socket: DatagramSocket;
  #onEvent: (event: EndpointEvent) => void;
  #timer: unknown = undefined;
  #timerAt: number | undefined = undefined;
  #servicing = false;
  #dirty = false;
  #flushQueued = false;
  #closed = false;
  /** Wake-ups and datagrams handed over (and discarded by the drop test), for benchmarks and tests. */
  readonly counters = { wakeups: 0, datagramsIn: 0, datagramsOut: 0, dropTested: 0 };
  /** Each new connection's highWaterMark (listen/connect's option). */
  highWaterMark = DEFAULT_HIGH_WATER_MARK;
  /** Connections that passed their high-water mark: checked after each service (acks free bytes). */
  readonly draining = new Set<DrainWatcher>();
  /** Channel name -> index (the channel configs' `name`s), for send()'s `channel`. */
  channelNames: ReadonlyMap<string, number> | undefined = undefined;
  readonly #dropRate: number;
  readonly #dropRng: Xoshiro128 | undefined;

  constructor(endpoint: EndpointLike, socket: DatagramSocket, onEvent: (event: EndpointEvent) => void, options: DriverOptions = {}) {
    this.endpoint = endpoint;
    this.socket = socket;
    this.#onEvent = onEvent;
    this.#dropRate = options.dropTest ?? 0;
    this.#dropRng = this.#dropRate > 0 ? new Xoshiro128(numericSeedKey(options.seed ?? 1)) : undefined;
    socket.onDatagrams((batch) => this.#receive(batch));
  }

  get closed(): boolean {
    return this.#closed;
  }

  #receive(batch: DatagramBatch): void {
    if (this.#closed) return;
    const now = monotonicNow();
    const { endpoint } = this;
    const { length, from, bytes } = batch;
    for (let start = 0; start < length && !this.#closed; start += MAX_DATAGRAMS_PER_SERVICE) {
      const end = Math.min(length, start + MAX_DATAGRAMS_PER_SERVICE);
      for (let i = start; i < end; i++) endpoint.handleDatagram(now, from[i]!, bytes[i]!);
      this.counters.datagramsIn += end - start;
      this.service(now);
    }
  }

  /** After a command (send, close, connect): service once at the end of this turn, coalesced. */
  requestService(): void {
    if (this.#servicing) {
      this.#dirty = true;
      return;
    }
    if (this.#flushQueued || this.#closed) return;
    this.#flushQueued = true;
    host.queueMicrotask(() => {
      this.#flushQueued = false;
      this.service();
    });
  }

  service(now: number = monotonicNow()): void {
    if (this.#closed) return;
    if (this.#servicing) {
      this.#dirty = true;
      return;
    }
    this.#servicing = true;
    this.counters.wakeups++;
    const { endpoint, socket } = this;
    try {
      for (let round = 0; round < MAX_ROUNDS_PER_WAKE; round++) {
        this.#dirty = false;
        const deadline = endpoint.pollTimeout();
        if (deadline !== undefined && deadline <= now) endpoint.handleTimeout(now);
        for (let event = endpoint.pollEvent(); event !== undefined; event = endpoint.pollEvent()) this.#onEvent(event);
        let sent = 0;
        // Each transmit's bytes are valid until the next call into the endpoint: the socket
        // sends (or copies) them before pollTransmit is called again.
        for (let tx = endpoint.pollTransmit(now); tx !== undefined; tx = endpoint.pollTransmit(now)) {
          if (this.#dropRng !== undefined && this.#dropRng.next() < this.#dropRate) {
            this.counters.dropTested++;
            continue;
          }
          socket.send(tx.bytes, tx.to);
          sent++;
        }
        if (sent > 0) socket.flush();
        this.counters.datagramsOut += sent;
        if (!this.#dirty || this.#closed) break;
      }
    } finally {
      this.#servicing = false;
    }
    if (this.draining.size > 0) for (const watcher of this.draining) watcher._checkDrain();
    if (this.#dirty) this.requestService();
    this.#arm(now);
  }

  /** Bytes the endpoint holds to send on `connection` (0 once it is gone). */
  queuedBytes(connection: number): number {
    const endpoint = this.endpoint;
    if (endpoint.queuedBytes !== undefined) return endpoint.queuedBytes(connection);
    try {
      return endpoint.stats(connection).queuedBytes;
    } catch {
      return 0;
    }
  }

  #arm(now: number): void {
    if (this.#closed) return;
    const deadline = this.endpoint.pollTimeout();
    if (deadline === undefined) return this.#disarm();
    // An armed timer that fires no later than needed stays: firing early is harmless (the
    // wake-up re-arms), and re-arming a timer per datagram would cost more than the wake-up.
    if (this.#timerAt !== undefined && this.#timerAt <= deadline) return;
    this.#disarm();
    this.#timerAt = deadline;
    this.#timer = host.setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = undefined;
      this.service();
    }, Math.max(0, Math.ceil(deadline - now)));
  }

  #disarm(): void {
    if (this.#timer !== undefined) host.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = undefined;
  }

  /** Stops the timer and closes the socket. Call service() first to send final packets. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#disarm();
    await this.socket.close();
  }
}
