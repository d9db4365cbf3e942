/**
 * `listenRelay()`: a relay (src/relay/forwarder.ts) on a real socket. Run it beside the lobby,
 * on a public address both peers reach, and give it to the NAT introducer (src/game/nat.ts):
 * introductions then carry an allocation, and natConnect() falls back to it when punching
 * cannot open a direct path.
 */
import { formatAddress, isIpv4Literal, isIpv6Literal, type HostPort } from "./address.js";
import { InvalidOptionError } from "./errors.js";
import { rejectUnknownOptionKeys } from "./options.js";
import { host, monotonicNow } from "./host.js";
import type { DatagramSocket, RuntimeAdapter } from "./socket.js";
import { RelayForwarder, type RelayAllocation, type RelayForwarderCounters, type RelayForwarderOptions } from "../relay/forwarder.js";
import { canonicalAddress } from "../relay/wire.js";
import type { Address } from "../session/sans-io.js";

export interface RelayListenOptions extends RelayForwarderOptions {
  /** IP literal to bind. Default "0.0.0.0". */
  host?: string;
  /** 0 lets the OS pick. Default 0. */
  port?: number;
  /**
   * The address peers reach the relay at ("ip:port" or "[ipv6]:port", an IP literal), as
   * introductions announce it. Default: the bound address, which is only possible when `host`
   * is a specific address (0.0.0.0 and :: are not addresses peers can send to).
   */
  publicAddress?: Address;
}

/** The expiry timer's longest wait (a later sweep is simply re-armed). */
const MAX_TIMER_MS = 60_000;

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

  /**
   * A new allocation for two peers (the introducer calls this), or undefined when full. On this
   * relay's clock (the one its datagrams are handled on). Allocate here, not on `forwarder`
   * directly: this also keeps the expiry timer running.
   */
  allocate(): RelayAllocation | undefined {
    const allocation = this.forwarder.allocate(monotonicNow());
    this.#arm();
    return allocation;
  }

  /** Whether the allocation with this token still exists (the introducer counts live ones per IP). */
  isAlive(token: Uint8Array): boolean {
    return this.forwarder.isAlive(token);
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
    }, Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(at - monotonicNow()))));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== undefined) host.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#socket.close();
  }
}

/** Every option listenRelay() knows (a typo would silently leave its default in force). */
const RELAY_OPTION_KEYS: ReadonlySet<string> = new Set<keyof RelayListenOptions>(["host", "port", "publicAddress", "maxAllocations", "idleTimeoutMs", "bindTimeoutMs", "bytesPerSecond", "burstBytes", "random"]);

export async function listenRelayWith(adapter: RuntimeAdapter, options: RelayListenOptions = {}): Promise<RelayServer> {
  rejectUnknownOptionKeys(options, "listenRelay()", RELAY_OPTION_KEYS);
  const bindHost = options.host ?? "0.0.0.0";
  if (!isIpv4Literal(bindHost) && !isIpv6Literal(bindHost)) throw new InvalidOptionError(`listenRelay(): host must be an IP address to bind, got ${JSON.stringify(bindHost)}`);
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidOptionError(`listenRelay(): port must be an integer in 0..65535, got ${String(port)}`);
  const unspecified = bindHost === "0.0.0.0" || canonicalAddress(`[${bindHost}]:1`) === "[::]:1";
  if (options.publicAddress === undefined && unspecified) {
    throw new InvalidOptionError(`listenRelay(): bound to ${bindHost}, the relay needs publicAddress: the "ip:port" peers reach it at`);
  }
  if (options.publicAddress !== undefined) {
    const given = typeof options.publicAddress === "string" ? canonicalAddress(options.publicAddress) : undefined;
    if (given === undefined || given.startsWith("0.0.0.0:") || given.startsWith("[::]:")) {
      throw new InvalidOptionError(`listenRelay(): publicAddress must be "ip:port" or "[ipv6]:port" with a specific IP literal, got ${JSON.stringify(options.publicAddress)}`);
    }
  }
  const forwarder = new RelayForwarder(options);
  const socket = await adapter.openSocket({ host: bindHost, port, receiveBufferBytes: 4 * 1024 * 1024, sendBufferBytes: 4 * 1024 * 1024 });
  const publicAddress = canonicalAddress(options.publicAddress ?? formatAddress(socket.localAddress.host, socket.localAddress.port));
  if (publicAddress === undefined) {
    await socket.close();
    throw new InvalidOptionError(`listenRelay(): ${socket.localAddress.host} is not an address introductions can carry (IPv4 dotted decimal or plain IPv6): pass publicAddress`);
  }
  return new RelayServer(socket, forwarder, publicAddress);
}
