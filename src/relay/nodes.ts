/**
 * The relay as sans-IO nodes, for the simulator and for carriers of your own:
 * - `RelayNode`: a RelayForwarder behind the SansIoNode surface (what listenRelay() runs on a
 *   socket);
 * - `RelayedNode`: any node (an Endpoint) with relay routes in front of it (what a Server's
 *   socket does with addRelayRoute(), with the same drops: a transmit to a virtual address
 *   whose route is gone, and a datagram that really comes from 100::/64).
 */
import { WrappingNode, type Address, type SansIoNode, type Transmit } from "../session/sans-io.js";
import { RelayForwarder, type RelayForwarderOptions } from "./forwarder.js";
import { RelayRoutes } from "./routes.js";
import { MAX_RELAY_DATAGRAM, RELAY_TOKEN_BYTES } from "./wire.js";

/** Forwarded datagrams held for pollTransmit at most; beyond, they are dropped and counted. */
const MAX_QUEUED = 1024;

export class RelayNode implements SansIoNode<never> {
  readonly forwarder: RelayForwarder;
  /** Forwards dropped because pollTransmit was not called often enough. */
  queueDrops = 0;
  readonly #queue: Transmit[] = [];
  #head = 0;

  constructor(options: RelayForwarderOptions = {}) {
    this.forwarder = new RelayForwarder(options);
  }

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    const tx = this.forwarder.handleDatagram(now, from, bytes);
    if (tx === undefined) return;
    if (this.#queue.length - this.#head >= MAX_QUEUED) {
      this.queueDrops++;
      return;
    }
    // The forwarder rewrote the caller's buffer, which is only lent for this call.
    this.#queue.push({ to: tx.to, bytes: tx.bytes.slice() });
  }

  handleTimeout(now: number): void {
    this.forwarder.handleTimeout(now);
  }

  pollTimeout(): number | undefined {
    return this.forwarder.pollTimeout();
  }

  pollTransmit(): Transmit | undefined {
    if (this.#head === this.#queue.length) {
      this.#queue.length = 0;
      this.#head = 0;
      return undefined;
    }
    return this.#queue[this.#head++];
  }

  pollEvent(): undefined {
    return undefined;
  }
}

export class RelayedNode<E> extends WrappingNode<E> {
  readonly routes = new RelayRoutes();
  readonly #scratch = new Uint8Array(MAX_RELAY_DATAGRAM);
  /** Binds waiting for pollTransmit (virtual addresses). */
  readonly #binds: Address[] = [];

  /** Adds a route (RelayRoutes.add) and queues a bind for it; returns the virtual address. */
  addRoute(relay: Address, token: Uint8Array): Address {
    const virtual = this.routes.add(relay, token);
    this.bind(virtual);
    return virtual;
  }

  /** Queues one BIND to the route's relay. */
  bind(virtual: Address): void {
    if (this.routes.get(virtual) !== undefined && this.#binds.length < 64) this.#binds.push(virtual);
  }

  /** Transmits to a virtual address with no route; datagrams from a real 100::/64 sender (routes.counters). */
  get dropped(): { unrouted: number; fromVirtual: number } {
    const { unrouted, fromVirtual } = this.routes.counters;
    return { unrouted, fromVirtual };
  }

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    const route = this.routes.inbound(from, bytes);
    if (route === null) this.inner.handleDatagram(now, from, bytes);
    else if (route !== undefined) this.inner.handleDatagram(now, route.virtual, bytes.subarray(RELAY_TOKEN_BYTES));
  }

  // pollTimeout is the inner node's: queued binds leave at the next pollTransmit, which a driver
  // calls after any input.

  pollTransmit(now: number): Transmit | undefined {
    while (this.#binds.length > 0) {
      const bind = this.routes.bindOf(this.#binds.shift()!);
      if (bind !== undefined) return { to: bind.relay, bytes: bind.bytes };
    }
    // CONFIRMs owed to the relays' CHALLENGEs (PROTOCOL §8).
    const confirm = this.routes.takeControl();
    if (confirm !== undefined) return { to: confirm.relay, bytes: confirm.bytes };
    for (let tx = this.inner.pollTransmit(now); tx !== undefined; tx = this.inner.pollTransmit(now)) {
      const route = this.routes.outbound(tx.to);
      if (route === null) return tx;
      if (route === undefined) continue;
      const length = this.routes.wrap(route, tx.bytes, this.#scratch);
      if (length >= 0) return { to: route.relay, bytes: this.#scratch.subarray(0, length) };
    }
    return undefined;
  }
}
