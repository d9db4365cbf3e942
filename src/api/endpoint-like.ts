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
   * call (the API reuses one object for every send): read it, do not keep it. `now`: as close()'s.
   */
  send(connection: ConnectionId, data: Uint8Array, options: SendOptions, now?: number): number | void;
  /** `now` (the driver's monotonic ms), when given, is the time of the call; without it the
   *  time of the driver's last wake-up, which is stale after an idle spell. `linger`: deliver
   *  what was sent before saying goodbye (the session Endpoint's close). */
  close(connection: ConnectionId, reason?: DisconnectReason, userData?: Uint8Array, now?: number, linger?: boolean): void;
  /** End a connection at once without telling the peer (the session Endpoint's reset());
   *  optional: without it the API closes the connection instead. */
  reset?(connection: ConnectionId, reason?: DisconnectReason): void;
  stats(connection: ConnectionId): ConnectionStats;
  /** stats(connection).queuedBytes, cheaply (the session Endpoint's); optional: without it the
   *  API reads stats(). */
  queuedBytes?(connection: ConnectionId): number;
  /** Each channel's largest message in bytes (the session Endpoint's); optional for other implementations. */
  readonly maxMessageBytes?: readonly number[];
  /** NAT hole punching (the session Endpoint's punch()); optional for other implementations. */
  punch?(now: number, address: Address, token: Uint8Array, acceptToken?: Uint8Array): void;
}

export type EndpointFactory = (config: EndpointConfig) => EndpointLike;
