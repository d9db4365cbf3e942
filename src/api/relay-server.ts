/**
 * `listenRelay()`: a relay (src/relay/forwarder.ts) on a real socket. Run it beside the lobby,
 * on a public address both peers reach, and give it to the NAT introducer (src/game/nat.ts):
 * introductions then carry an allocation, and natConnect() falls back to it when punching
 * cannot open a direct path.
 */
import { formatAddress, isIpv4Literal, isIpv6Literal, type HostPort } from "./address.js";
import { InvalidOptionError } from "./errors.js";
import { host, monotonicNow } from "./host.js";
import type { DatagramSocket, RuntimeAdapter } from "./socket.js";
import { RelayForwarder, type RelayAllocation, type RelayForwarderCounters, type RelayForwarderOptions } from "../relay/forwarder.js";
import { isValidAddress } from "../session/address.js";
import type { Address } from "../session/sans-io.js";

export interface RelayListenOptions extends RelayForwarderOptions {
  /** IP literal to bind. Default "0.0.0.0". */
  host?: string;
  /** 0 lets the OS pick. Default 0. */
  port?: number;
  /**
   * The address peers reach the relay at ("ip:port"), as introductions announce it. Default:
   * the bound address (with 0.0.0.0 or :: that is not an address peers can use: pass it).
   */
  publicAddress?: Address;
}

export class RelayServer {
  /** The bound address. */
  readonly address: HostPort;
  /** What introductions announce. */
  readonly publicAddress: Address;
  readonly forwarder: RelayForwarder;
  readonly #socket: DatagramSocket;
  #timer: unknown;
  #closed = false;

  /** @internal use listenRelay(). */
  constructor(socket: DatagramSocket, forwarder: RelayForwarder, publicAddress: Address) {
    this.#socket = socket;
    this.forwarder = forwarder;
    this.address = socket.localAddress;
    this.publicAddress = publicAddress;
    socket.onDatagrams((batch) => {
      if (this.#closed) return;
      const now = monotonicNow();
      for (let i = 0; i < batch.length; i++) {
        const tx = forwarder.handleDatagram(now, batch.from[i]!, batch.bytes[i]!);
        if (tx !== undefined) socket.send(tx.bytes, tx.to);
      }
      socket.flush();
    });
  }

  /** A new allocation for two peers (the introducer calls this), or undefined when full. */
  allocate(now: number = monotonicNow()): RelayAllocation | undefined {
    const allocation = this.forwarder.allocate(now);
    this.#arm();
    return allocation;
  }

  counters(): RelayForwarderCounters & { sendFailures: number; receiveErrors: number } {
    return { ...this.forwarder.counters, ...this.#socket.counters };
  }

  /** Keeps one timer for the expiry sweep while allocations exist. */
  #arm(): void {
    if (this.#closed || this.#timer !== undefined) return;
    const at = this.forwarder.pollTimeout();
    if (at === undefined) return;
    this.#timer = host.setTimeout(() => {
      this.#timer = undefined;
      this.forwarder.handleTimeout(monotonicNow());
      this.#arm();
    }, Math.max(0, Math.ceil(at - monotonicNow())));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== undefined) host.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#socket.close();
  }
}

export async function listenRelayWith(adapter: RuntimeAdapter, options: RelayListenOptions = {}): Promise<RelayServer> {
  const bindHost = options.host ?? "0.0.0.0";
  if (!isIpv4Literal(bindHost) && !isIpv6Literal(bindHost)) throw new InvalidOptionError(`listenRelay(): host must be an IP address to bind, got ${JSON.stringify(bindHost)}`);
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidOptionError(`listenRelay(): port must be an integer in 0..65535, got ${String(port)}`);
  const forwarder = new RelayForwarder(options);
  const socket = await adapter.openSocket({ host: bindHost, port, receiveBufferBytes: 4 * 1024 * 1024, sendBufferBytes: 4 * 1024 * 1024 });
  const publicAddress = options.publicAddress ?? formatAddress(socket.localAddress.host, socket.localAddress.port);
  if (!isValidAddress(publicAddress)) {
    await socket.close();
    throw new InvalidOptionError(`listenRelay(): publicAddress must be "ip:port" or "[ipv6]:port", got ${JSON.stringify(publicAddress)}`);
  }
  return new RelayServer(socket, forwarder, publicAddress);
}
