/**
 * `ackwire/testing`: the simulator (seeded links, virtual network, `Pair`, the proxy's sans-IO
 * core) and the sans-IO `Endpoint` with its session types, for tests that drive ackwire on a
 * virtual clock or over a carrier of their own.
 */
export * from "./sim/index.js";
export { Endpoint } from "./session/endpoint.js";
export type { EndpointCounters, ConnectOptions as EndpointConnectOptions } from "./session/endpoint.js";
export * from "./session/public.js";
/** The relay as sans-IO nodes (RelayNode, RelayedNode) and its forwarding table, for the simulator. */
export { RelayNode, RelayedNode } from "./relay/nodes.js";
export { RelayForwarder } from "./relay/forwarder.js";
