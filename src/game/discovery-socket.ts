/**
 * LAN discovery on a real datagram socket, through the runtime adapter layer (the same
 * `DatagramSocket` the transport uses), on Node, Bun or Deno.
 *
 * Broadcast: both sockets are opened with `broadcast` (SO_BROADCAST on Node and Bun; Deno's
 * sockets allow it as they are), so a target may be a broadcast address: the subnet's
 * (e.g. "192.168.1.255:47777") or 255.255.255.255. A responder must be bound to 0.0.0.0 (the
 * default) to hear broadcasts; one bound to its own IP hears unicast queries only.
 */
import type { HostPort } from "../api/address.js";
import { host, monotonicNow } from "../api/host.js";
import type { DatagramSocket, RuntimeAdapter } from "../api/socket.js";
import type { Address } from "../session/sans-io.js";
import { DiscoveryAsker, DiscoveryResponder, checkInteger, checkNumber, type DiscoveredHost, type HostInfo } from "./discovery.js";
import { currentAdapter } from "./runtime-adapter.js";

function pump(socket: DatagramSocket, node: DiscoveryResponder | DiscoveryAsker): void {
  for (let t = node.pollTransmit(); t !== undefined; t = node.pollTransmit()) socket.send(t.bytes, t.to);
  socket.flush();
}

export interface RunningResponder {
  readonly address: HostPort;
  readonly responder: DiscoveryResponder;
  close(): Promise<void>;
}

/** Answers LAN queries on `host:port` (default 0.0.0.0; pick a fixed port the askers know). */
export async function startDiscoveryResponder(options: {
  appId: number;
  info: HostInfo;
  port: number;
  host?: string;
  adapter?: RuntimeAdapter;
}): Promise<RunningResponder> {
  checkInteger("port", options.port, 0, 65_535);
  const responder = new DiscoveryResponder({ appId: options.appId, info: options.info });
  const socket = await (options.adapter ?? currentAdapter()).openSocket({ host: options.host ?? "0.0.0.0", port: options.port, broadcast: true });
  socket.onDatagrams((batch) => {
    const now = monotonicNow();
    for (let i = 0; i < batch.length; i++) responder.handleDatagram(now, batch.from[i]!, batch.bytes[i]!);
    pump(socket, responder);
  });
  return { address: socket.localAddress, responder, close: () => socket.close() };
}

/** Queries at most every 10 ms: a shorter interval floods the LAN (and 0 never ended). */
const MIN_INTERVAL_MS = 10;
/** The longest host timer (a signed 32-bit ms count). */
const MAX_WAIT_MS = 2 ** 31 - 1;

/**
 * Sends a query to every target every `intervalMs` (10 ms or more, default 250) for `durationMs`
 * (default 1000) and returns the hosts that answered. Resolves after `durationMs` (a bounded
 * number of queries, then the socket closes). Bad options reject with GameUsageError before
 * anything is sent.
 */
export async function discoverHosts(options: {
  appId: number;
  targets: Address[];
  durationMs?: number;
  intervalMs?: number;
  /** Local bind address. Default 0.0.0.0 (use 127.0.0.1 to stay on loopback). */
  host?: string;
  adapter?: RuntimeAdapter;
  seed?: number;
}): Promise<DiscoveredHost[]> {
  const durationMs = checkNumber("durationMs", options.durationMs ?? 1000, 0, MAX_WAIT_MS, true);
  const intervalMs = checkNumber("intervalMs", options.intervalMs ?? 250, MIN_INTERVAL_MS, MAX_WAIT_MS);
  const seed = options.seed ?? host.crypto.getRandomValues(new Uint32Array(1))[0]!;
  const asker = new DiscoveryAsker({ appId: options.appId, targets: options.targets, seed, hostTtlMs: durationMs + intervalMs });
  const socket = await (options.adapter ?? currentAdapter()).openSocket({ host: options.host ?? "0.0.0.0", port: 0, broadcast: true });
  socket.onDatagrams((batch) => {
    const now = monotonicNow();
    for (let i = 0; i < batch.length; i++) asker.handleDatagram(now, batch.from[i]!, batch.bytes[i]!);
  });
  const rounds = Math.max(1, Math.ceil(durationMs / intervalMs));
  try {
    for (let round = 0; round < rounds; round++) {
      asker.query(monotonicNow());
      pump(socket, asker);
      await new Promise<void>((resolve) => host.setTimeout(resolve, intervalMs));
    }
    return asker.hosts(monotonicNow());
  } finally {
    await socket.close();
  }
}
