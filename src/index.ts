/**
 * ackwire: reliable UDP for real-time games on Node, Bun and Deno.
 *
 * `listen()` and `connect()` use the adapter of the runtime this module runs in (globalThis.Bun,
 * then globalThis.Deno, else Node). The adapters touch their runtime's APIs only when a socket
 * is opened, so importing this module is safe everywhere. Subpaths `ackwire/node`, `ackwire/bun`
 * and `ackwire/deno` pin one adapter.
 */
import type { Target } from "./api/address.js";
import type { Connection } from "./api/connection.js";
import type { ConnectOptions, ListenOptions } from "./api/options.js";
import type { Runtime, Server } from "./api/runtime.js";
import type { RelayListenOptions, RelayServer } from "./api/relay-server.js";
import * as bun from "../runtimes/bun/index.js";
import * as deno from "../runtimes/deno/index.js";
import * as node from "../runtimes/node/index.js";

export type RuntimeName = "node" | "bun" | "deno";

/** The runtime this module is running in. */
export function detectRuntime(): RuntimeName {
  const g = globalThis as { Bun?: unknown; Deno?: unknown };
  if (g.Bun !== undefined) return "bun";
  if (g.Deno !== undefined) return "deno";
  return "node";
}

const runtimes: Record<RuntimeName, Pick<Runtime, "listen" | "connect" | "listenRelay">> = { node, bun, deno };

/** Opens a server socket on `options.port` (0: any free port; read `server.address.port`). */
export function listen(options: ListenOptions): Promise<Server> {
  return runtimes[detectRuntime()].listen(options);
}

/** Connects to `"host:port"`; resolves once the handshake completes. */
export function connect(target: Target, options: ConnectOptions): Promise<Connection> {
  return runtimes[detectRuntime()].connect(target, options);
}

/**
 * Opens a relay (PROTOCOL §8) for peers that NAT punching cannot connect; hand it to the
 * lobby's NatIntroducer (`relay` option).
 */
export function listenRelay(options?: RelayListenOptions): Promise<RelayServer> {
  return runtimes[detectRuntime()].listenRelay(options);
}

export * from "./api/public.js";
/** The sans-IO endpoint the adapters drive: drive it yourself over any datagram carrier. */
export { Endpoint } from "./session/endpoint.js";
export type { EndpointCounters } from "./session/endpoint.js";
