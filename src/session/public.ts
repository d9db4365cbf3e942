/** The session layer's public surface (errors, default channels, types), re-exported once by
 *  the package root (through src/api/public.ts) and by `ackwire/testing`. */
export * from "./errors.js";
export { DEFAULT_CHANNELS } from "./types.js";
export type {
  AcceptDecision,
  ChannelConfig,
  ConnectRequestInfo,
  ConnectionId,
  ConnectionStats,
  DeliveryMode,
  DenyReason,
  DisconnectReason,
  EndpointConfig,
  EndpointEvent,
  SendOptions,
} from "./types.js";
export type { Address, SansIoNode, Transmit } from "./sans-io.js";
