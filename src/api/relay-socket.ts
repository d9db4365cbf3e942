/**
 * A Server's socket with relay routes (src/relay/routes.ts): sends to a relayed peer's virtual
 * address go to its relay wrapped in the route's token, and datagrams from a relay are unwrapped
 * and handed to the driver as coming from the virtual address. With no route it passes
 * everything through (one size check per send and per batch).
 */
import { RelayRoutes } from "../relay/routes.js";
import { MAX_RELAY_DATAGRAM, RELAY_TOKEN_BYTES } from "../relay/wire.js";
import type { Address } from "../session/sans-io.js";
import type { DatagramBatch, DatagramSocket } from "./socket.js";

export class RelayingSocket implements DatagramSocket {
  readonly routes = new RelayRoutes();
  readonly #inner: DatagramSocket;
  /** The wrapped datagram; valid during the inner send only (the adapter copies if it sends later). */
  readonly #scratch = new Uint8Array(MAX_RELAY_DATAGRAM);
  readonly #out: DatagramBatch = { length: 0, from: [], bytes: [] };

  constructor(inner: DatagramSocket) {
    this.#inner = inner;
  }

  get localAddress(): DatagramSocket["localAddress"] {
    return this.#inner.localAddress;
  }

  get counters(): DatagramSocket["counters"] {
    return this.#inner.counters;
  }

  send(bytes: Uint8Array, to: Address): void {
    const routes = this.routes;
    if (routes.size !== 0) {
      const route = routes.get(to);
      if (route !== undefined) {
        const length = routes.wrap(route, bytes, this.#scratch);
        if (length >= 0) this.#inner.send(this.#scratch.subarray(0, length), route.relay);
        return;
      }
    }
    this.#inner.send(bytes, to);
  }

  /** A bind: the bare token, so the relay learns this socket's public address (PROTOCOL §8). */
  sendBind(virtual: Address): void {
    const route = this.routes.get(virtual);
    if (route !== undefined) this.#inner.send(route.token, route.relay);
  }

  flush(): void {
    this.#inner.flush();
  }

  onDatagrams(callback: (batch: DatagramBatch) => void): void {
    this.#inner.onDatagrams((batch) => {
      const routes = this.routes;
      if (routes.size === 0) return callback(batch);
      // The adapter's batch is its own (reused, and its length may be fixed): the rewritten
      // datagrams go into this socket's batch.
      const out = this.#out;
      let n = 0;
      for (let i = 0; i < batch.length; i++) {
        let from = batch.from[i]!;
        let bytes = batch.bytes[i]!;
        if (routes.isRelay(from)) {
          const route = routes.unwrap(from, bytes);
          if (route === undefined) continue;
          from = route.virtual;
          bytes = bytes.subarray(RELAY_TOKEN_BYTES);
        }
        out.from[n] = from;
        out.bytes[n] = bytes;
        n++;
      }
      out.length = n;
      if (n > 0) callback(out);
      out.length = 0;
    });
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}
