/** Everything an application imports besides listen/connect: classes, types and errors. */
export { Connection, DEFAULT_MAX_QUEUED_MESSAGES } from "./connection.js";
export type { ConnectionEvents, DisconnectInfo, Message, SendCallOptions } from "./connection.js";
export { Server } from "./runtime.js";
export type { Runtime, ServerConnectOptions, ServerEvents } from "./runtime.js";
export type { CommonOptions, ConnectOptions, ListenOptions } from "./options.js";
export type { HostPort, Target } from "./address.js";
export type { AbortSignalLike } from "./host.js";
export type { DatagramBatch, DatagramSocket, OpenSocketOptions, RuntimeAdapter } from "./socket.js";
export type { EndpointLike, EndpointFactory } from "./endpoint-like.js";
export { createRuntime } from "./runtime.js";
export { Driver } from "./driver.js";
export { TypedEmitter } from "./emitter.js";
export * from "./errors.js";
export * from "../session/public.js";
