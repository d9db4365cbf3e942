/**
 * Shared pieces of the congestion scenarios: real `Endpoint`s on a `World`, connecting them,
 * a bulk sender that keeps its queue full but bounded, timestamped messages, statistics.
 */
import { Endpoint } from "../../src/session/endpoint.js";
import type { Address } from "../../src/session/sans-io.js";
import type { EndpointConfig, EndpointEvent } from "../../src/session/types.js";
import { Link, type LinkConfig } from "../../src/sim/link.js";
import { World } from "./world.js";

export const PROTOCOL_ID = 0xacc0c0de;
export const MTU = 1200;
/** Payload of a reliable message that fills one datagram: mtu - 13 (header + CRC) - 6 (frame header). */
export const FULL_MESSAGE_BYTES = MTU - 13 - 6;
/** IPv4 + UDP header bytes counted at every bottleneck. */
export const WIRE_OVERHEAD_BYTES = 28;

export const SERVER: Address = "10.0.0.1:7777";
export const clientAddress = (i: number): Address => `10.0.1.${i + 1}:50000`;

export type Handler = (address: Address, event: EndpointEvent, now: number) => void;

/** A world of endpoints with a list of event handlers (scenarios add their own). */
export class Scene {
  readonly handlers: Handler[] = [];
  /** Called for every datagram a node hands to a link (world time). */
  readonly transmitHandlers: ((from: Address, to: Address, bytes: Uint8Array, now: number) => void)[] = [];
  readonly world: World<EndpointEvent>;
  readonly server: Endpoint;
  readonly clients: Endpoint[] = [];

  constructor(
    readonly seed: number,
    options: { server?: Partial<EndpointConfig>; serverClockOffsetMs?: number; engine?: "wasm" | "ts" } = {},
  ) {
    this.world = new World<EndpointEvent>({
      onEvent: (a, e, n) => this.handlers.forEach((h) => h(a, e, n)),
      onTransmit: (f, t, b, n) => this.transmitHandlers.forEach((h) => h(f, t, b, n)),
    });
    this.server = new Endpoint({
      protocolId: PROTOCOL_ID,
      server: true,
      seed: seed * 7 + 1,
      mtu: MTU,
      engine: options.engine ?? "wasm",
      ...options.server,
    });
    this.world.addNode(SERVER, this.server, options.serverClockOffsetMs ?? 0);
  }

  /** Add client i with its own links (or a shared server->client link). */
  addClient(config: Partial<EndpointConfig> = {}, engine: "wasm" | "ts" = "wasm"): Endpoint {
    const i = this.clients.length;
    const client = new Endpoint({
      protocolId: PROTOCOL_ID,
      seed: this.seed * 7 + 2 + i,
      mtu: MTU,
      engine,
      ...config,
    });
    this.clients.push(client);
    this.world.addNode(clientAddress(i), client);
    return client;
  }

  /** A link seeded from the scenario seed and a label. */
  link(label: string, config: LinkConfig): Link {
    return new Link({ ...config, seed: `${this.seed}:${label}` });
  }

  /**
   * Connect client i; returns [clientConnection, serverConnection]. Throws if the handshake does
   * not finish within `maxMs` of virtual time (bounded).
   */
  connect(i: number, maxMs = 5000): [number, number] {
    const address = clientAddress(i);
    const client = this.clients[i];
    let serverConn = -1;
    let clientConn = -1;
    const h: Handler = (a, e) => {
      if (e.type !== "connect") return;
      if (a === SERVER && e.address === address) serverConn = e.connection;
      if (a === address) clientConn = e.connection;
    };
    this.handlers.push(h);
    client.connect(this.world.nodeNow(address), SERVER);
    const deadline = this.world.now + maxMs;
    while ((serverConn < 0 || clientConn < 0) && this.world.now < deadline) this.world.runUntil(this.world.now + 5);
    this.handlers.splice(this.handlers.indexOf(h), 1);
    if (serverConn < 0 || clientConn < 0) throw new Error(`client ${i}: handshake did not finish in ${maxMs} ms (seed ${this.seed})`);
    return [clientConn, serverConn];
  }
}

/**
 * Sends full-datagram reliable messages from `from` on `connection`, keeping at most `window`
 * messages sent and not yet received by the peer's application (a bounded send queue, as a
 * game streaming a level or a replay would). Counts what the receiver got.
 */
export class BulkSender {
  sent = 0;
  received = 0;
  receivedBytes = 0;
  active = false;
  private readonly payload = new Uint8Array(FULL_MESSAGE_BYTES);

  constructor(
    private readonly scene: Scene,
    private readonly from: Endpoint,
    private readonly connection: number,
    receiverAddress: Address,
    private readonly channel = 0,
    private readonly window = 256,
  ) {
    scene.handlers.push((a, e) => {
      if (a !== receiverAddress || e.type !== "message" || e.channel !== this.channel) return;
      this.received++;
      this.receivedBytes += e.data.length;
      this.topUp();
    });
  }

  start(): void {
    this.active = true;
    this.topUp();
  }

  stop(): void {
    this.active = false;
  }

  topUp(): void {
    if (!this.active) return;
    while (this.sent - this.received < this.window) {
      new DataView(this.payload.buffer).setUint32(0, this.sent, true);
      this.from.send(this.connection, this.payload, { channel: this.channel });
      this.sent++;
    }
  }
}

/** A message carrying its send time (world ms) and a sequence number, padded to `size`. */
export function stampedMessage(size: number, seq: number, sentAt: number): Uint8Array {
  const b = new Uint8Array(Math.max(12, size));
  const v = new DataView(b.buffer);
  v.setUint32(0, seq, true);
  v.setFloat64(4, sentAt, true);
  return b;
}

export function readStamp(b: Uint8Array): { seq: number; sentAt: number } {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return { seq: v.getUint32(0, true), sentAt: v.getFloat64(4, true) };
}

/** Nearest-rank percentile of a list (p in (0, 100]). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.max(rank, 1) - 1];
}

/** Jain's fairness index: (sum x)^2 / (n * sum x^2); 1 = perfectly fair, 1/n = one flow has all. */
export function jainIndex(xs: readonly number[]): number {
  const sum = xs.reduce((a, b) => a + b, 0);
  const sq = xs.reduce((a, b) => a + b * b, 0);
  return sq === 0 ? 0 : (sum * sum) / (xs.length * sq);
}

/** Bits a link carried (datagram bytes plus its per-datagram overhead) per its counters. */
export function wireBits(link: Link): number {
  const s = link.stats;
  return (s.deliveredBytes + s.delivered * (link.config.overheadBytes ?? 0)) * 8;
}

export const round = (x: number, digits = 3): number => Number(x.toFixed(digits));
