/**
 * The secure layer as sans-IO nodes, for the simulator and for carriers of your own: any node (an
 * Endpoint) with the server's or the client's half of the layer in front of it. What a secure
 * Server's or client's socket does (src/api/secure-socket.ts), with the same drops.
 */
import { WrappingNode, type Address, type SansIoNode, type Transmit } from "../session/sans-io.js";
import { ClientSecurity } from "./client-security.js";
import type { PacketAead } from "./aead.js";
import { followConnections, ServerSecurity, type ServerSecurityOptions } from "./server-security.js";
import type { ConnectToken } from "./token.js";

/** What SecureServerNode needs of its inner node to end a replaced connection (an Endpoint). */
interface ResettingNode {
  reset(connection: number, reason: "kicked"): void;
}

export class SecureServerNode<E> extends WrappingNode<E> {
  readonly security: ServerSecurity;
  /** The latest time the driver passed in (events carry none). */
  #now = 0;

  constructor(inner: SansIoNode<E>, options: ServerSecurityOptions) {
    super(inner);
    this.security = new ServerSecurity(options);
  }

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    // Decrypted in place: the carrier lends `bytes` for this call only, and may lend the same
    // buffer again (a duplicated datagram), so the layer works on its own copy.
    this.#now = now;
    const inner = this.security.open(from, bytes.slice(), now);
    // With the identity it opened under: the Endpoint handles it later, in a batch.
    if (inner !== undefined) this.inner.handleDatagram(now, from, inner, this.security.openedIdentity);
  }

  /** The inner node's events, followed by the layer as a secure Server follows its Endpoint's
   *  (a connection replaced by a newer one with the same token is ended at once on the inner
   *  node, if it can do that, as an Endpoint can: reset()). */
  override pollEvent(): E | undefined {
    const event = this.inner.pollEvent();
    if (event === undefined) return undefined;
    const replaced = followConnections(this.security, event, this.#now);
    if (replaced !== undefined) (this.inner as Partial<ResettingNode>).reset?.(replaced, "kicked");
    return event;
  }

  override handleTimeout(now: number): void {
    this.#now = now;
    this.inner.handleTimeout(now);
  }

  pollTransmit(now: number): Transmit | undefined {
    this.#now = now;
    const retry = this.security.pollRetry();
    if (retry !== undefined) return retry;
    for (let tx = this.inner.pollTransmit(now); tx !== undefined; tx = this.inner.pollTransmit(now)) {
      const sealed = this.security.seal(tx.bytes, tx.to);
      if (sealed !== undefined) return { to: tx.to, bytes: sealed };
    }
    return undefined;
  }
}

export class SecureClientNode<E> extends WrappingNode<E> {
  readonly security: ClientSecurity;
  /** The server: datagrams from anywhere else are dropped (a client's socket is connected to it). */
  readonly server: Address;
  /** Datagrams from another address than the server. */
  strangers = 0;
  /** A HELLO to send again at once (after a RETRY). */
  #retryHello: Uint8Array | undefined;

  constructor(inner: SansIoNode<E>, server: Address, token: ConnectToken, aead?: PacketAead) {
    super(inner);
    this.server = server;
    this.security = new ClientSecurity(token, aead);
  }

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    if (from !== this.server) {
      this.strangers++;
      return;
    }
    const inner = this.security.open(bytes.slice());
    if (inner !== undefined) this.inner.handleDatagram(now, from, inner);
    else this.#retryHello = this.security.takeRetryHello() ?? this.#retryHello;
  }

  pollTransmit(now: number): Transmit | undefined {
    const retry = this.#retryHello;
    if (retry !== undefined) {
      this.#retryHello = undefined;
      return { to: this.server, bytes: retry };
    }
    for (let tx = this.inner.pollTransmit(now); tx !== undefined; tx = this.inner.pollTransmit(now)) {
      // A client endpoint sends only to its server; anything else would leave unsealed.
      if (tx.to !== this.server) continue;
      const sealed = this.security.seal(tx.bytes);
      if (sealed !== undefined) return { to: tx.to, bytes: sealed };
    }
    return undefined;
  }
}
