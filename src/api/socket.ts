/**
 * What a runtime adapter fills in: a bound datagram socket, a host-name resolver, and how to
 * open sockets. The driver (./driver.ts) is the only user of these.
 */
import type { Address } from "../session/sans-io.js";
import type { HostPort } from "./address.js";

/**
 * Datagrams received in one wake-up of the socket. The adapter reuses the arrays after the
 * callback returns, so the receiver must not keep them (it may keep the `bytes` views: each
 * adapter hands over buffers it does not reuse).
 */
export interface DatagramBatch {
  length: number;
  from: Address[];
  bytes: Uint8Array[];
}

/**
 * A batch of a socket wrapper's own, refilled from each adapter batch (which the adapter reuses,
 * and whose length may be fixed): `push` what passes, then `deliver`.
 */
export class OwnBatch implements DatagramBatch {
  length = 0;
  readonly from: Address[] = [];
  readonly bytes: Uint8Array[] = [];

  push(from: Address, bytes: Uint8Array): void {
    this.from[this.length] = from;
    this.bytes[this.length] = bytes;
    this.length++;
  }

  /** Hands the batch to `callback` if anything passed, and empties it. */
  deliver(callback: (batch: DatagramBatch) => void): void {
    if (this.length > 0) callback(this);
    this.length = 0;
  }
}

export interface DatagramSocket {
  /** The bound local address, e.g. { host: "127.0.0.1", port: 50123 }. */
  readonly localAddress: HostPort;
  /**
   * Queue or send one datagram. `bytes` is valid only during this call (it is a view into the
   * engine's send arena): an adapter that sends later or asynchronously must copy it.
   */
  send(bytes: Uint8Array, to: Address): void;
  /** Called after each drain of the endpoint's sends: adapters that batch (sendMany) send now. */
  flush(): void;
  /** Registers the one receive callback; called with a burst of datagrams per wake-up. */
  onDatagrams(callback: (batch: DatagramBatch) => void): void;
  /**
   * Optional: a socket connected to its one peer (`OpenSocketOptions.peer`) calls `callback`
   * when the kernel reports that peer unreachable (ECONNREFUSED: an ICMP port unreachable came
   * back). Node's and Bun's connected sockets report it; Deno's are not connected and do not.
   */
  onPeerUnreachable?(callback: () => void): void;
  /** Counters of the socket itself (sends the OS refused, receive errors). */
  readonly counters: { sendFailures: number; receiveErrors: number };
  close(): Promise<void>;
}

export interface OpenSocketOptions {
  /** IP literal to bind ("0.0.0.0", "::", "127.0.0.1", "::1"). */
  host: string;
  /** 0 lets the OS pick. */
  port: number;
  /** Requested kernel buffer sizes where the runtime allows (Node); capped by the OS. */
  receiveBufferBytes?: number;
  /**
   * Allow sends to a broadcast address (SO_BROADCAST), for LAN discovery: Node's
   * `setBroadcast(true)`, Bun's `setBroadcast(true)`; Deno's `listenDatagram` sockets allow it
   * already. Without it Node and Bun refuse such a send (EACCES), counted as a send failure.
   */
  broadcast?: boolean;
  sendBufferBytes?: number;
  /**
   * A client's socket: the one peer it will talk to. An adapter may connect the socket to it
   * (Node does: a connected send skips node:dgram's per-send address lookup and the kernel's
   * per-datagram route lookup); it must still accept sends to any address or count them failed.
   */
  peer?: HostPort;
}

export interface RuntimeAdapter {
  readonly name: "node" | "bun" | "deno";
  /** Throws AddressInUseError / AddressNotAvailableError / UnstableNetRequiredError. */
  openSocket(options: OpenSocketOptions): Promise<DatagramSocket>;
  /** Host name -> IP literal (IPv4 preferred). Throws HostNotFoundError. */
  resolve(host: string): Promise<string>;
}
