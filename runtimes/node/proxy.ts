/**
 * The UDP impairment proxy on node:dgram: one listening socket for clients, one upstream socket
 * per client flow (so the server's replies can be routed back), one timer armed for the next
 * thing the sans-IO core has due. All decisions are made by `ProxyCore`.
 */

import type { LinkConfig } from "../../src/sim/link.js";
import { formatHostPort, parseHostPort, ProxyUsageError, type HostPort } from "../../src/sim/proxy-options.js";
import { ProxyCore, type ProxyStats } from "../../src/sim/proxy.js";

// The project compiles with `"types": []` so nothing in src/ can lean on runtime globals by
// accident; the adapter declares the narrow slice of Node it uses (Hono's habit) and loads
// node:dgram through a string-typed dynamic import so tsc needs no @types/node.

export interface RemoteInfo {
  address: string;
  family: string;
  port: number;
}

export interface UdpSocket {
  on(event: "message", listener: (msg: Uint8Array, rinfo: RemoteInfo) => void): UdpSocket;
  on(event: "error", listener: (err: Error) => void): UdpSocket;
  once(event: "error", listener: (err: Error) => void): UdpSocket;
  off(event: "error", listener: (err: Error) => void): UdpSocket;
  bind(port: number, address: string, callback: () => void): void;
  send(msg: Uint8Array, port: number, address: string, callback: (err: Error | null) => void): void;
  address(): { address: string; port: number; family: string };
  close(callback?: () => void): void;
}

export interface DgramModule {
  createSocket(options: { type: "udp4" | "udp6" }): UdpSocket;
}

interface NodeGlobals {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
  performance: { now(): number };
}

const host = globalThis as unknown as NodeGlobals;

/** `import(name)` with a non-literal specifier, so tsc does not try to resolve node:* types. */
export async function importNodeModule<T>(name: string): Promise<T> {
  return (await import(name)) as T;
}

/** "127.0.0.1" -> 4, "::1" -> 6, anything else (a host name) -> 0. */
function ipVersion(text: string): 0 | 4 | 6 {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(text)) return 4;
  if (text.includes(":")) return 6;
  return 0;
}

/** A proxy address: "host:port" text as on the command line ("127.0.0.1:0", "[::1]:9000"), or
 *  { host, port } (the family, if left out, follows the host). */
export type ProxyAddress = string | { host: string; port: number; family?: HostPort["family"] };

export interface NodeProxyOptions {
  listen: ProxyAddress;
  upstream: ProxyAddress;
  link: LinkConfig;
  seed?: number;
  idleTimeoutMs?: number;
  maxFlows?: number;
}

export interface NodeProxyStats extends ProxyStats {
  /** Datagrams on an upstream socket that did not come from the upstream address. */
  strayUpstream: number;
  sendErrors: number;
}

export interface RunningProxy {
  /** The bound listening address (useful with port 0). */
  readonly address: { host: string; port: number };
  stats(): NodeProxyStats;
  /**
   * A NAT rebinding: every flow's upstream socket closes and the flow's next datagram opens a
   * new one, so the server sees each client come from a new port (and its replies to the old
   * port go nowhere). For testing address migration over real sockets.
   */
  rebind(): void;
  close(): Promise<void>;
}

function socketType(host: HostPort): "udp4" | "udp6" {
  return host.family === 6 ? "udp6" : "udp4";
}

function formatRemote(info: RemoteInfo): string {
  return formatHostPort(info.address, info.port);
}

/** A ProxyAddress as the sockets need it; anything else is a ProxyUsageError saying what is. */
function proxyAddress(value: unknown, name: string): HostPort {
  if (typeof value === "string") {
    try {
      return parseHostPort(value, name);
    } catch (e) {
      throw new ProxyUsageError(`startProxy: ${name}: ${(e as Error).message.replace(/^--\S+ /, "")}`);
    }
  }
  if (value !== null && typeof value === "object") {
    const { host, port } = value as { host?: unknown; port?: unknown };
    if (typeof host === "string" && host.length > 0 && typeof port === "number" && Number.isInteger(port) && port >= 0 && port <= 65535) {
      return { host, port, family: ipVersion(host) === 0 ? "name" : ipVersion(host) as 4 | 6 };
    }
  }
  throw new ProxyUsageError(`startProxy: ${name} must be "host:port" (e.g. "127.0.0.1:0") or { host, port } with a port in 0..65535, got ${String(JSON.stringify(value))}`);
}

export async function startProxy(given: NodeProxyOptions): Promise<RunningProxy> {
  const options = { ...given, listen: proxyAddress(given.listen, "listen"), upstream: proxyAddress(given.upstream, "upstream") };
  const upstreamAddress = formatHostPort(options.upstream.host, options.upstream.port);
  const core = new ProxyCore({
    upstream: upstreamAddress,
    toUpstream: options.link,
    toClient: options.link,
    seed: options.seed ?? 1,
    idleTimeoutMs: options.idleTimeoutMs,
    maxFlows: options.maxFlows,
  });
  const dgram = await importNodeModule<DgramModule>("node:dgram");
  const performance = host.performance;
  const upstreamIsLiteral = ipVersion(options.upstream.host) !== 0;
  const upstreamSockets = new Map<string, UdpSocket>();
  let strayUpstream = 0;
  let sendErrors = 0;
  let timer: unknown;
  let closed = false;

  const listener = dgram.createSocket({ type: socketType(options.listen) });
  const onSent = (err: Error | null): void => {
    if (err) sendErrors++;
  };

  // Parse the client address once per flow: the core keys flows by the formatted text.
  const clientTargets = new Map<string, { host: string; port: number }>();

  const upstreamFor = (client: string): UdpSocket => {
    let socket = upstreamSockets.get(client);
    if (socket) return socket;
    const s = dgram.createSocket({ type: socketType(options.upstream) });
    s.on("message", (msg, rinfo) => {
      const fromUpstream =
        rinfo.port === options.upstream.port && (!upstreamIsLiteral || sameHost(rinfo.address, options.upstream.host));
      if (!fromUpstream) {
        strayUpstream++;
        return;
      }
      core.handleFromUpstream(performance.now(), client, msg);
      pump();
    });
    s.on("error", () => {
      sendErrors++;
    });
    upstreamSockets.set(client, s);
    socket = s;
    return socket;
  };

  // One wake-up: timers due, events, transmits, then re-arm the single timer.
  const pump = (): void => {
    if (closed) return;
    const now = performance.now();
    const due = core.pollTimeout();
    if (due !== undefined && due <= now) core.handleTimeout(now);
    for (let ev = core.pollEvent(); ev !== undefined; ev = core.pollEvent()) {
      if (ev.type === "flowClosed") {
        upstreamSockets.get(ev.client)?.close();
        upstreamSockets.delete(ev.client);
        clientTargets.delete(ev.client);
      }
    }
    for (let tx = core.pollTransmit(now); tx !== undefined; tx = core.pollTransmit(now)) {
      if (tx.direction === "toUpstream") {
        upstreamFor(tx.client).send(tx.bytes, options.upstream.port, options.upstream.host, onSent);
      } else {
        const target = clientTargets.get(tx.client);
        if (target) listener.send(tx.bytes, target.port, target.host, onSent);
      }
    }
    if (timer !== undefined) host.clearTimeout(timer);
    timer = undefined;
    const next = core.pollTimeout();
    if (next !== undefined) {
      // Round up so a wake-up never lands a fraction of a millisecond early and spins.
      timer = host.setTimeout(pump, Math.max(1, Math.ceil(next - performance.now())));
    }
  };

  listener.on("message", (msg, rinfo) => {
    const client = formatRemote(rinfo);
    if (!clientTargets.has(client)) clientTargets.set(client, { host: rinfo.address, port: rinfo.port });
    core.handleFromClient(performance.now(), client, msg);
    if (!core.hasFlow(client)) clientTargets.delete(client); // rejected: too many flows
    pump();
  });

  await new Promise<void>((resolve, reject) => {
    listener.once("error", reject);
    listener.bind(options.listen.port, options.listen.host, () => {
      listener.off("error", reject);
      listener.on("error", () => {
        sendErrors++;
      });
      resolve();
    });
  });
  const bound = listener.address();

  return {
    address: { host: bound.address, port: bound.port },
    stats: () => ({ ...core.stats(), strayUpstream, sendErrors }),
    rebind: () => {
      for (const socket of upstreamSockets.values()) socket.close();
      upstreamSockets.clear();
    },
    close: async () => {
      if (closed) return;
      closed = true;
      if (timer !== undefined) host.clearTimeout(timer);
      const sockets = [listener, ...upstreamSockets.values()];
      upstreamSockets.clear();
      await Promise.all(sockets.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}

function sameHost(a: string, b: string): boolean {
  if (a === b) return true;
  // An IPv4 server reached from a dual-stack socket shows up as ::ffff:a.b.c.d.
  return a === `::ffff:${b}` || b === `::ffff:${a}`;
}

/** Counters as a short, human-readable block for the CLI. */
export function formatProxyStats(stats: NodeProxyStats): string {
  const row = (label: string, c: ProxyStats["toUpstream"]): string =>
    `${label.padEnd(12)} sent ${c.sent}  delivered ${c.delivered}  lost ${c.lost} (burst ${c.burstLost})  ` +
    `tail-dropped ${c.tailDropped}  mtu-dropped ${c.mtuDropped}  duplicated ${c.duplicated}  ` +
    `corrupted ${c.corrupted}  reordered ${c.reordered}`;
  const q = stats.queueDelay;
  return [
    `flows        open ${stats.flowsOpen}  opened ${stats.flowsOpened}  closed ${stats.flowsClosed}  rejected ${stats.flowsRejected}`,
    row("to server", stats.toUpstream),
    row("to clients", stats.toClient),
    `queue delay  samples ${q.count}  p50 ${q.p50.toFixed(2)} ms  p95 ${q.p95.toFixed(2)} ms  max ${q.max.toFixed(2)} ms`,
    `errors       send ${stats.sendErrors}  stray-upstream ${stats.strayUpstream}  unknown-flow ${stats.unknownFlow}`,
  ].join("\n");
}
