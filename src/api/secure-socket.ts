/**
 * Sockets of secure servers and clients (PROTOCOL §9): the secure layer (src/secure) between the
 * runtime's socket and the driver. Received datagrams are opened in place (the adapter hands over
 * buffers it does not reuse) and only those that authenticate reach the Endpoint; everything the
 * Endpoint sends is sealed, and a send with no association to seal it under is dropped, never
 * sent in the clear.
 */
import { ClientSecurity } from "../secure/client-security.js";
import type { PacketAead } from "../secure/aead.js";
import { ServerSecurity, type ServerSecurityOptions } from "../secure/server-security.js";
import type { ConnectToken } from "../secure/token.js";
import type { Address } from "../session/sans-io.js";
import { monotonicNow } from "./host.js";
import { OwnBatch, type DatagramBatch, type DatagramSocket } from "./socket.js";

/** Passes each received batch through `open` into a batch of its own (the adapter's is reused). */
abstract class SealingSocket implements DatagramSocket {
  protected readonly inner: DatagramSocket;
  readonly #out = new OwnBatch();

  constructor(inner: DatagramSocket) {
    this.inner = inner;
  }

  get localAddress(): DatagramSocket["localAddress"] {
    return this.inner.localAddress;
  }

  get counters(): DatagramSocket["counters"] {
    return this.inner.counters;
  }

  abstract send(bytes: Uint8Array, to: Address): void;
  protected abstract open(from: Address, bytes: Uint8Array, now: number): Uint8Array | undefined;

  flush(): void {
    this.inner.flush();
  }

  onDatagrams(callback: (batch: DatagramBatch) => void): void {
    this.inner.onDatagrams((batch) => {
      const out = this.#out;
      const now = monotonicNow();
      for (let i = 0; i < batch.length; i++) {
        const from = batch.from[i]!;
        const opened = this.open(from, batch.bytes[i]!, now);
        if (opened !== undefined) out.push(from, opened);
      }
      out.deliver(callback);
    });
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

export class SecureServerSocket extends SealingSocket {
  readonly security: ServerSecurity;

  constructor(inner: DatagramSocket, options: ServerSecurityOptions) {
    super(inner);
    this.security = new ServerSecurity(options);
  }

  send(bytes: Uint8Array, to: Address): void {
    const sealed = this.security.seal(bytes, to);
    if (sealed !== undefined) this.inner.send(sealed, to);
  }

  protected open(from: Address, bytes: Uint8Array, now: number): Uint8Array | undefined {
    const inner = this.security.open(from, bytes, now);
    for (let r = this.security.pollRetry(); r !== undefined; r = this.security.pollRetry()) this.inner.send(r.bytes, r.to);
    return inner;
  }
}

export class SecureClientSocket extends SealingSocket {
  readonly security: ClientSecurity;
  /** The server, in the one spelling runtimes report senders in (connect() canonicalizes it). */
  readonly #server: Address;
  /** Datagrams from another address than the server (a connected socket rarely lets them in). */
  strangers = 0;

  constructor(inner: DatagramSocket, server: Address, token: ConnectToken, aead?: PacketAead) {
    super(inner);
    this.#server = server;
    this.security = new ClientSecurity(token, aead);
  }

  send(bytes: Uint8Array, to: Address): void {
    // A client's endpoint sends to its server only; anything else would have to leave unsealed.
    if (to !== this.#server) return;
    const sealed = this.security.seal(bytes);
    if (sealed !== undefined) this.inner.send(sealed, to);
  }

  protected open(from: Address, bytes: Uint8Array): Uint8Array | undefined {
    if (from !== this.#server) {
      this.strangers++;
      return undefined;
    }
    const inner = this.security.open(bytes);
    if (inner === undefined) {
      const hello = this.security.takeRetryHello();
      if (hello !== undefined) this.inner.send(hello, this.#server);
    }
    return inner;
  }
}
