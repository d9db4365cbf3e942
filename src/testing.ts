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
/** The secure layer as sans-IO nodes (SecureServerNode, SecureClientNode) and its two halves, for the simulator. */
export { SecureClientNode, SecureServerNode } from "./secure/nodes.js";
export { ClientSecurity } from "./secure/client-security.js";
export { ServerSecurity } from "./secure/server-security.js";
export type { ServerSecurityOptions } from "./secure/server-security.js";
export { parseConnectToken } from "./secure/token.js";
export type { ConnectToken } from "./secure/token.js";
