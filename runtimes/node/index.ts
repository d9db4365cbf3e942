/**
 * ackwire on Node: node:dgram sockets (udp4/udp6 by the host), 4 MiB kernel buffers, the OS
 * resolver for host names. `import { listen, connect } from "ackwire/node"`.
 */
import { createRuntime } from "../../src/api/runtime.js";
import type { RuntimeAdapter } from "../../src/api/socket.js";
import { openNodeSocket, resolveWithNodeDns } from "./socket.js";

export const nodeAdapter: RuntimeAdapter = {
  name: "node",
  openSocket: (options) => openNodeSocket(options, { reuseCopies: true, connectToPeer: true }),
  resolve: resolveWithNodeDns,
};

export const { listen, connect, listenRelay } = createRuntime(nodeAdapter);
export * from "../../src/api/public.js";
// The UDP impairment proxy (docs/SIMULATOR.md): node:dgram, so only on this entry.
export { startProxy, formatProxyStats } from "./proxy.js";
export type { NodeProxyOptions, NodeProxyStats, ProxyAddress, RunningProxy } from "./proxy.js";
// Connection traces to .sqlog files (EndpointConfig.trace / the `trace` option).
export { qlogFiles } from "./trace.js";
