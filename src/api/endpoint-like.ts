/**
 * The part of the session layer's sans-IO `Endpoint` (src/session/endpoint.ts) the driver uses.
 * Written as an interface so the API can also drive any other implementation (a test double,
 * a future engine) passed as `createEndpoint`.
 */
import type { Address, SansIoNode } from "../session/sans-io.js";
import type { ConnectionId, ConnectionStats, DisconnectReason, EndpointConfig, EndpointEvent, SendOptions } from "../session/types.js";
import type { AbortSignalLike } from "./host.js";

export interface EndpointLike extends SansIoNode<EndpointEvent> {
  connect(now: number, address: Address, options?: { userData?: Uint8Array; timeoutMs?: number; signal?: AbortSignalLike }): ConnectionId;
  /**
   * Returns the receipt number when `options.receipt` is set. `options` is valid only during the
   * call (the API reuses one object for every send): read it, do not keep it.
   */
  send(connection: ConnectionId, data: Uint8Array, options: SendOptions): number | void;
  close(connection: ConnectionId, reason?: DisconnectReason, userData?: Uint8Array): void;
  stats(connection: ConnectionId): ConnectionStats;
  /** NAT hole punching (the session Endpoint's punch()); optional for other implementations. */
  punch?(now: number, address: Address, token: Uint8Array, acceptToken?: Uint8Array): void;
}

export type EndpointFactory = (config: EndpointConfig) => EndpointLike;
