/**
 * The impairment link between the demo's clients and its server: an in-process UDP proxy that
 * drives the simulator's sans-IO `ProxyCore` with sockets from the same runtime adapter
 * ackwire itself uses (node:dgram, Bun.udpSocket or Deno.listenDatagram). So the demo runs
 * unchanged on all three runtimes, and every packet really crosses the loopback interface.
 *
 * One listening socket faces the clients; each client flow gets its own upstream socket
 * (opened when the core reports the flow) so the server sees one address per client and its
 * replies can be routed back. One timer is armed for the core's next deadline.
 */
import { bunAdapter } from "../runtimes/bun/index.js";
import { denoAdapter } from "../runtimes/deno/index.js";
import { nodeAdapter } from "../runtimes/node/index.js";
import { formatAddress } from "../src/api/address.js";
import type { DatagramSocket, RuntimeAdapter } from "../src/api/socket.js";
import type { Address } from "../src/session/sans-io.js";
import type { LinkConfig } from "../src/sim/link.js";
import { ProxyCore, type ProxyStats } from "../src/sim/proxy.js";
import { g, now } from "./host.js";

export interface DemoProxyOptions {
  adapter: RuntimeAdapter;
  /** The server's address, e.g. "127.0.0.1:50123". */
  upstream: Address;
  link: LinkConfig;
  seed: number;
  /** A flow (its upstream socket) closes after this long without traffic. Default 60 s. */
  flowIdleMs?: number;
}

export interface DemoProxyStats extends ProxyStats {
  /** Datagrams on an upstream socket that did not come from the server. */
  strayUpstream: number;
  /** Upstream datagrams dropped because the flow's socket was not open yet or already gone. */
  upstreamNotReady: number;
  /** Datagrams of vanished clients (see vanish()), both ways. */
  vanishedDropped: number;
}

interface Flow {
  socket: DatagramSocket | undefined;
  /** Copies waiting for the socket to open (bounded). */
  waiting: Uint8Array[];
  closed: boolean;
}

const MAX_WAITING_PER_FLOW = 1024;

/** The socket adapter of `runtime` (the one ackwire itself picks there), for the proxy's sockets. */
export function runtimeAdapter(runtime: "node" | "bun" | "deno"): RuntimeAdapter {
  return runtime === "bun" ? bunAdapter : runtime === "deno" ? denoAdapter : nodeAdapter;
}

export class DemoProxy {
  readonly address: Address;
  #core: ProxyCore;
  #adapter: RuntimeAdapter;
  #listener: DatagramSocket;
  #upstream: Address;
  #flows = new Map<Address, Flow>();
  #timer: unknown;
  #closed = false;
  #strayUpstream = 0;
  #upstreamNotReady = 0;
  /** Clients that vanished (vanish()): everything from and to them is dropped. */
  #vanished = new Set<Address>();
  #vanishedDropped = 0;

  static async open(options: DemoProxyOptions): Promise<DemoProxy> {
    const listener = await options.adapter.openSocket({ host: "127.0.0.1", port: 0, receiveBufferBytes: 4 << 20, sendBufferBytes: 4 << 20 });
    return new DemoProxy(options, listener);
  }

  private constructor(options: DemoProxyOptions, listener: DatagramSocket) {
    this.#adapter = options.adapter;
    this.#upstream = options.upstream;
    this.#listener = listener;
    this.address = formatAddress(listener.localAddress.host, listener.localAddress.port);
    // The same impairments both ways; the core forks an independent stream per flow and direction.
    this.#core = new ProxyCore({ upstream: options.upstream, toUpstream: options.link, toClient: options.link, seed: options.seed, idleTimeoutMs: options.flowIdleMs });
    listener.onDatagrams((batch) => {
      const t = now();
      for (let i = 0; i < batch.length; i++) {
        if (this.#vanished.has(batch.from[i]!)) this.#vanishedDropped++;
        else this.#core.handleFromClient(t, batch.from[i]!, batch.bytes[i]!);
      }
      this.#pump();
    });
  }

  /**
   * A NAT that lost its mappings: every flow's upstream socket closes and a new one opens, so
   * the server sees each client come from a new port and its replies to the old one go
   * nowhere. The flows themselves (and their impairment streams) carry on.
   */
  rebind(): void {
    for (const [client, flow] of [...this.#flows]) {
      flow.closed = true;
      void flow.socket?.close();
      this.#openFlow(client);
    }
  }

  /**
   * A client that vanishes, as if its machine lost power: from now on nothing from the client
   * whose flow reaches the server from `upstreamAddress` gets through, and nothing the server
   * sends reaches it. Returns that client's own address (for `unvanish`), or undefined if no
   * open flow has that upstream address.
   */
  vanish(upstreamAddress: Address): Address | undefined {
    for (const [client, flow] of this.#flows) {
      const s = flow.socket;
      if (flow.closed || s === undefined || formatAddress(s.localAddress.host, s.localAddress.port) !== upstreamAddress) continue;
      this.#vanished.add(client);
      return client;
    }
    return undefined;
  }

  /** Lets `client`'s address through again (its socket is closed: the port may be reused). */
  unvanish(client: Address): void {
    this.#vanished.delete(client);
  }

  stats(): DemoProxyStats {
    return { ...this.#core.stats(), strayUpstream: this.#strayUpstream, upstreamNotReady: this.#upstreamNotReady, vanishedDropped: this.#vanishedDropped };
  }

  #openFlow(client: Address): void {
    const flow: Flow = { socket: undefined, waiting: [], closed: false };
    this.#flows.set(client, flow);
    this.#adapter.openSocket({ host: "127.0.0.1", port: 0, receiveBufferBytes: 4 << 20, sendBufferBytes: 4 << 20 }).then(
      (socket) => {
        if (flow.closed || this.#closed) return void socket.close();
        flow.socket = socket;
        socket.onDatagrams((batch) => {
          const t = now();
          for (let i = 0; i < batch.length; i++) {
            if (batch.from[i] !== this.#upstream) this.#strayUpstream++;
            else if (this.#vanished.has(client)) this.#vanishedDropped++;
            else this.#core.handleFromUpstream(t, client, batch.bytes[i]!);
          }
          this.#pump();
        });
        for (const bytes of flow.waiting) socket.send(bytes, this.#upstream);
        flow.waiting = [];
        socket.flush();
      },
      () => {
        flow.closed = true;
        this.#upstreamNotReady += flow.waiting.length;
        flow.waiting = [];
      },
    );
  }

  /** One wake-up: due timeouts, flow events, every due datagram out, then re-arm the timer. */
  #pump(): void {
    if (this.#closed) return;
    const core = this.#core;
    const t = now();
    const due = core.pollTimeout();
    if (due !== undefined && due <= t) core.handleTimeout(t);
    for (let ev = core.pollEvent(); ev !== undefined; ev = core.pollEvent()) {
      if (ev.type === "flowOpened") this.#openFlow(ev.client);
      else {
        const flow = this.#flows.get(ev.client);
        this.#flows.delete(ev.client);
        if (flow !== undefined) {
          flow.closed = true;
          void flow.socket?.close();
        }
      }
    }
    const touched = new Set<DatagramSocket>();
    for (let tx = core.pollTransmit(t); tx !== undefined; tx = core.pollTransmit(t)) {
      if (tx.direction === "toClient") {
        this.#listener.send(tx.bytes, tx.to);
        touched.add(this.#listener);
        continue;
      }
      const flow = this.#flows.get(tx.client);
      if (flow === undefined || flow.closed) this.#upstreamNotReady++;
      else if (flow.socket !== undefined) {
        flow.socket.send(tx.bytes, this.#upstream);
        touched.add(flow.socket);
      } else if (flow.waiting.length < MAX_WAITING_PER_FLOW) flow.waiting.push(tx.bytes.slice());
      else this.#upstreamNotReady++;
    }
    for (const socket of touched) socket.flush();
    if (this.#timer !== undefined) g.clearTimeout(this.#timer);
    this.#timer = undefined;
    const next = core.pollTimeout();
    // Rounded up to whole ms and at least 1 ms, so a wake-up never lands early and spins.
    if (next !== undefined) this.#timer = g.setTimeout(() => this.#pump(), Math.max(1, Math.ceil(next - now())));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== undefined) g.clearTimeout(this.#timer);
    const sockets = [this.#listener];
    for (const flow of this.#flows.values()) {
      flow.closed = true;
      if (flow.socket !== undefined) sockets.push(flow.socket);
    }
    this.#flows.clear();
    await Promise.all(sockets.map((s) => s.close().catch(() => undefined)));
  }
}
