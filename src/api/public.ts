/** Everything an application imports besides listen/connect: classes, types and errors. */
export { Connection, DEFAULT_MAX_QUEUED_MESSAGES } from "./connection.js";
export type { CloseOptions, ConnectionEvents, DisconnectInfo, Message, SendCallOptions } from "./connection.js";
export { Server } from "./runtime.js";
export type { Runtime, ServerConnectOptions, ServerEvents } from "./runtime.js";
export type { BroadcastOptions } from "./broadcast.js";
export { Group } from "./groups.js";
export type { ServerStats } from "./server-stats.js";
export type { CommonOptions, ConnectOptions, ListenOptions, SecureConnectRequestInfo, SecureListenOptions } from "./options.js";
export { createConnectToken, generateServerKey, SERVER_KEY_BYTES, MAX_TOKEN_USER_DATA, MAX_TOKEN_ADDRESSES } from "../secure/token.js";
export type { ConnectTokenOptions } from "../secure/token.js";
export type { ClientIdentity, ServerSecurityCounters } from "../secure/server-security.js";
export { ConnectTokenError, SecureConfigError } from "../secure/errors.js";
export { CongestionConfigError } from "../congestion/errors.js";
export { EngineConfigError } from "../engine/layout.js";
export type { ConnectTokenProblem } from "../secure/errors.js";
export { SECURE_OVERHEAD } from "../secure/wire.js";
export type { HostPort, Target } from "./address.js";
export type { AbortSignalLike } from "./host.js";
export type { DatagramBatch, DatagramSocket, OpenSocketOptions, RuntimeAdapter } from "./socket.js";
export type { EndpointLike, EndpointFactory } from "./endpoint-like.js";
export { createRuntime } from "./runtime.js";
export { RelayServer } from "./relay-server.js";
export type { RelayListenOptions } from "./relay-server.js";
export { RelayForwarder } from "../relay/forwarder.js";
export type { RelayAllocation, RelayForwarderCounters, RelayForwarderOptions, RelayTransmit } from "../relay/forwarder.js";
export { RelayRoutes, MAX_RELAY_ROUTES } from "../relay/routes.js";
export type { RelayRoute } from "../relay/routes.js";
export { RelayNode, RelayedNode } from "../relay/nodes.js";
export { RelayConfigError } from "../relay/errors.js";
export { virtualAddress, isVirtualAddress, RELAY_TOKEN_BYTES, MAX_RELAY_DATAGRAM } from "../relay/wire.js";
export { Driver, DEFAULT_HIGH_WATER_MARK } from "./driver.js";
// Seed 001's packet-level notification API, for applications that build their own replication
// on raw packets (docs/CHANNELS.md, "DeliveryNotificationManager (public)").
export { DeliveryNotificationManager } from "../channels/delivery-notification.js";
export type { DeliveryHandler, DeliveryNotificationOptions } from "../channels/delivery-notification.js";
export { TypedEmitter } from "./emitter.js";
export * from "./errors.js";
export * from "../session/public.js";
