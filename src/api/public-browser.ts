/** What ackwire/browser exports besides connect(): the Connection, its types and the errors. */
export { Connection, DEFAULT_MAX_QUEUED_MESSAGES } from "./connection.js";
export type { CloseOptions, ConnectionEvents, DisconnectInfo, Message, SendCallOptions } from "./connection.js";
export type { CommonOptions, ConnectOptions } from "./options.js";
export type { AbortSignalLike } from "./host.js";
export { TypedEmitter } from "./emitter.js";
export * from "./errors.js";
export { SignalingError, WebRtcUnavailableError } from "./webrtc-errors.js";
export { ConnectTokenError, SecureConfigError } from "../secure/errors.js";
export { CongestionConfigError } from "../congestion/errors.js";
export * from "../session/public.js";
