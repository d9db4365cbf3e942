// A HELLO flood from spoofed source addresses against a secure server, on the simulator
// (seeded, virtual clock; PROTOCOL §9): `hosts` addresses nobody holds each send `ratePerHost`
// HELLOs a second, every one with a token never seen before (a well-formed token minted under
// another key: the server must open it to find out), while honest clients connect one after
// another. Used by test/secure/hello-flood.test.ts and, for the figures, by
// bench/secure/hello-flood.ts.
import { ClientSecurity } from "../../src/secure/client-security.js";
import { SecureClientNode, SecureServerNode } from "../../src/secure/nodes.js";
import type { ServerSecurityCounters } from "../../src/secure/server-security.js";
import { createConnectToken, parseConnectToken } from "../../src/secure/token.js";
import { HELLO_FIXED_BYTES, SECURE_OVERHEAD } from "../../src/secure/wire.js";
import { Endpoint } from "../../src/session/endpoint.js";
import { WrappingNode, type Address, type SansIoNode, type Transmit } from "../../src/session/sans-io.js";
import type { EndpointConfig, EndpointEvent } from "../../src/session/types.js";
import { Network, type SpoofedTransmit } from "../../src/sim/network.js";

const SERVER = "10.0.0.1:7777";
const FLOODER = "10.200.0.1:1";
const PROTOCOL = 0x5eed;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => 17 + i);
const FOREIGN_KEY = Uint8Array.from({ length: 32 }, (_, i) => 99 + i);
const NOW = 1_800_000_000;
const TICK_MS = 10;

export interface FloodOptions {
  seed?: number;
  /** Spoofed source hosts (each one address). Default 1000. */
  hosts?: number;
  /** HELLOs a second from each. Default 20. */
  ratePerHost?: number;
  /** Honest clients, started one a second from 1 s into the flood. Default 4. */
  honest?: number;
  /** One-way latency of every path (ms). Default 10. */
  latencyMs?: number;
}

export interface FloodResult {
  /** Virtual ms from each honest client's connect() to its "connect" event (NaN: never, within 5 s). */
  connectMs: number[];
  /** What the server's secure socket received and sent, all of it and to / from the spoofed addresses. */
  bytesIn: number;
  bytesOut: number;
  spoofedBytesIn: number;
  spoofedBytesOut: number;
  hellosSent: number;
  /** Most associations the server held at once. */
  maxAssociations: number;
  security: ServerSecurityCounters;
  floodMs: number;
}

function endpoint(seed: number, config: Partial<EndpointConfig> = {}): Endpoint {
  return new Endpoint({
    protocolId: PROTOCOL,
    seed,
    engine: "ts",
    mtu: 1200 - SECURE_OVERHEAD,
    maxMtu: 1200 - SECURE_OVERHEAD,
    engineLimits: { batchDatagrams: 256, maxRecords: 8192, sendDatagrams: 64 },
    ...config,
  });
}

/** Counts what passes through the server's secure layer, in and out. */
class Meter<E> extends WrappingNode<E> {
  bytesIn = 0;
  bytesOut = 0;
  spoofedIn = 0;
  spoofedOut = 0;
  constructor(
    inner: SansIoNode<E>,
    private readonly spoofed: (address: Address) => boolean,
  ) {
    super(inner);
  }
  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    this.bytesIn += bytes.length;
    if (this.spoofed(from)) this.spoofedIn += bytes.length;
    this.inner.handleDatagram(now, from, bytes);
  }
  pollTransmit(now: number): Transmit | undefined {
    const tx = this.inner.pollTransmit(now);
    if (tx !== undefined) {
      this.bytesOut += tx.bytes.length;
      if (this.spoofed(tx.to)) this.spoofedOut += tx.bytes.length;
    }
    return tx;
  }
}

/** HELLOs from spoofed addresses: one template, its token's tag changed per copy (a new token each). */
class HelloFlood implements SansIoNode<never> {
  sent = 0;
  #queue: SpoofedTransmit[] = [];
  #next = 0;
  #host = 0;
  #credit = 0;
  readonly #template: Uint8Array;
  readonly #tagAt: number;
  constructor(
    private readonly addresses: readonly Address[],
    private readonly perTick: number,
    private readonly untilMs: number,
  ) {
    const token = createConnectToken({ serverKey: FOREIGN_KEY, protocolId: PROTOCOL, clientId: 1, serverAddresses: [SERVER], nowSeconds: NOW });
    const inner = new Uint8Array(256).fill(0x11);
    this.#template = new ClientSecurity(parseConnectToken(token, PROTOCOL, NOW)).seal(inner)!.slice();
    const n = this.#template[37]! | (this.#template[38]! << 8);
    this.#tagAt = HELLO_FIXED_BYTES + n - 16;
  }
  handleDatagram(): void {}
  handleTimeout(now: number): void {
    if (now < this.#next || now >= this.untilMs) return;
    this.#next = now + TICK_MS;
    this.#credit += this.perTick;
    for (; this.#credit >= 1; this.#credit--) {
      const bytes = this.#template.slice();
      const k = this.sent++;
      bytes[this.#tagAt] = k;
      bytes[this.#tagAt + 1] = k >>> 8;
      bytes[this.#tagAt + 2] = k >>> 16;
      bytes[this.#tagAt + 3] = k >>> 24;
      this.#queue.push({ from: this.addresses[this.#host]!, to: SERVER, bytes });
      this.#host = (this.#host + 1) % this.addresses.length;
    }
  }
  pollTimeout(): number | undefined {
    return this.#next < this.untilMs ? this.#next : undefined;
  }
  pollEvent(): undefined {
    return undefined;
  }
  pollTransmit(): Transmit | undefined {
    return this.#queue.shift();
  }
}

export function runHelloFlood(options: FloodOptions = {}): FloodResult {
  const seed = options.seed ?? 1;
  const hosts = options.hosts ?? 1000;
  const ratePerHost = options.ratePerHost ?? 20;
  const honestCount = options.honest ?? 4;
  const floodMs = 2000 + honestCount * 1000;
  const net = new Network<EndpointEvent>({ seed, defaultLink: { latencyMs: options.latencyMs ?? 10 } });
  const addresses = Array.from({ length: hosts }, (_, i) => `10.66.${i >> 8}.${i & 255}:5000`);
  const spoofed = new Set(addresses);
  const secureServer = new SecureServerNode<EndpointEvent>(endpoint(seed * 7 + 1, { server: true, maxConnections: 64, timeoutMs: 10_000 }), {
    serverKey: KEY,
    protocolId: PROTOCOL,
    addresses: [SERVER],
    maxAssociations: 320,
    idleTimeoutMs: 30_000,
    unixSeconds: () => NOW + 1 + Math.floor(net.now / 1000),
  });
  const meter = net.addNode(SERVER, new Meter<EndpointEvent>(secureServer, (a) => spoofed.has(a)));
  const flood = net.addNode(FLOODER, new HelloFlood(addresses, (hosts * ratePerHost * TICK_MS) / 1000, floodMs) as SansIoNode<EndpointEvent>) as unknown as HelloFlood;
  const honest = Array.from({ length: honestCount }, (_, h) => {
    const address = `10.1.${h}.2:4000`;
    const ep = endpoint(seed * 7 + 10 + h);
    const token = parseConnectToken(createConnectToken({ serverKey: KEY, protocolId: PROTOCOL, clientId: 100 + h, serverAddresses: [SERVER], nowSeconds: NOW }), PROTOCOL, NOW);
    net.addNode(address, new SecureClientNode<EndpointEvent>(ep, SERVER, token));
    return { address, ep, startAt: 1000 + h * 1000, startedAt: NaN, connectedAt: NaN, connection: -1 };
  });
  let maxAssociations = 0;
  for (let t = 0; t < floodMs + 1000; t += TICK_MS) {
    for (const h of honest) {
      if (Number.isNaN(h.startedAt) && net.now >= h.startAt) {
        h.startedAt = net.now;
        h.connection = h.ep.connect(net.now, SERVER);
      }
    }
    net.drive({ maxTimeMs: TICK_MS, maxSteps: 100_000 });
    for (const h of honest) {
      for (const ev of net.takeEvents(h.address)) if (ev.type === "connect" && ev.connection === h.connection) h.connectedAt = net.now;
    }
    net.takeEvents(SERVER);
    maxAssociations = Math.max(maxAssociations, secureServer.security.size);
  }
  return {
    connectMs: honest.map((h) => h.connectedAt - h.startedAt),
    bytesIn: meter.bytesIn,
    bytesOut: meter.bytesOut,
    spoofedBytesIn: meter.spoofedIn,
    spoofedBytesOut: meter.spoofedOut,
    hellosSent: flood.sent,
    maxAssociations,
    security: { ...secureServer.security.counters },
    floodMs,
  };
}
