/**
 * A Server's socket with relay routes (src/relay/routes.ts): sends to a relayed peer's virtual
 * address go to its relay wrapped in the route's token, and datagrams from a relay are unwrapped
 * and handed to the driver as coming from the virtual address. A send to a virtual address
 * whose route is gone is dropped (counted in `unrouted`), never sent to the address itself; on
 * an IPv6 socket a datagram that really comes from 100::/64 is dropped too, so nothing can pose
 * as a relayed peer. With no route, a batch passes through as it came (on an IPv4 socket after
 * one size check, on an IPv6 one after a prefix check per datagram), and a send costs one
 * character check.
 */
import { RelayRoutes } from "../relay/routes.js";
import { isVirtualAddress, MAX_RELAY_DATAGRAM, RELAY_TOKEN_BYTES } from "../relay/wire.js";
import type { Address } from "../session/sans-io.js";
import { OwnBatch, type DatagramBatch, type DatagramSocket } from "./socket.js";

export class RelayingSocket implements DatagramSocket {
  readonly routes = new RelayRoutes();
  readonly #inner: DatagramSocket;
  /** The wrapped datagram; valid during the inner send only (the adapter copies if it sends later). */
  readonly #scratch = new Uint8Array(MAX_RELAY_DATAGRAM);
  /** The rewritten datagrams (the adapter's batch is its own). */
  readonly #out = new OwnBatch();
  /** An IPv6 socket: real datagrams from 100::/64 could arrive and must be dropped. */
  readonly #ipv6: boolean;

  constructor(inner: DatagramSocket) {
    this.#inner = inner;
    this.#ipv6 = inner.localAddress.host.includes(":");
  }

  get localAddress(): DatagramSocket["localAddress"] {
    return this.#inner.localAddress;
  }

  get counters(): DatagramSocket["counters"] {
    return this.#inner.counters;
  }

  /** Sends to a virtual address with no route; datagrams from a real 100::/64 sender (routes.counters). */
  get dropped(): { unrouted: number; fromVirtual: number } {
    const { unrouted, fromVirtual } = this.routes.counters;
    return { unrouted, fromVirtual };
  }

  send(bytes: Uint8Array, to: Address): void {
    const route = this.routes.outbound(to);
    if (route === null) return this.#inner.send(bytes, to);
    if (route === undefined) return;
    const length = this.routes.wrap(route, bytes, this.#scratch);
    if (length >= 0) this.#inner.send(this.#scratch.subarray(0, length), route.relay);
  }

  /**
   * A BIND, so the relay challenges this socket's public address and, once it confirms, sends
   * the route's traffic there (PROTOCOL §8). False (nothing sent) if the route is gone.
   */
  sendBind(virtual: Address): boolean {
    const bind = this.routes.bindOf(virtual);
    if (bind === undefined) return false;
    this.#inner.send(bind.bytes, bind.relay);
    this.#inner.flush();
    return true;
  }

  flush(): void {
    this.#inner.flush();
  }

  onDatagrams(callback: (batch: DatagramBatch) => void): void {
    this.#inner.onDatagrams((batch) => {
      const routes = this.routes;
      // No route: nothing to unwrap, and on an IPv4 socket nothing to drop. On an IPv6 socket
      // the batch passes untouched unless a sender is in 100::/64.
      if (routes.size === 0 && (!this.#ipv6 || !anyVirtual(batch))) return callback(batch);
      const out = this.#out;
      for (let i = 0; i < batch.length; i++) {
        const from = batch.from[i]!;
        const bytes = batch.bytes[i]!;
        const route = routes.inbound(from, bytes);
        if (route === null) out.push(from, bytes);
        else if (route !== undefined) out.push(route.virtual, bytes.subarray(RELAY_TOKEN_BYTES));
      }
      // Relays' CHALLENGEs in this batch, answered (PROTOCOL §8).
      let confirms = 0;
      for (let c = routes.takeControl(); c !== undefined; c = routes.takeControl()) {
        this.#inner.send(c.bytes, c.relay);
        confirms++;
      }
      if (confirms > 0) this.#inner.flush();
      out.deliver(callback);
    });
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}

function anyVirtual(batch: DatagramBatch): boolean {
  for (let i = 0; i < batch.length; i++) if (isVirtualAddress(batch.from[i]!)) return true;
  return false;
}
