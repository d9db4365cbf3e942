/**
 * The messages between the application's thread and the network worker (`ackwire/worker`).
 *
 * Both directions are batched: one `postMessage` carries an array of commands (everything the
 * application did in one synchronous stretch, flushed in a microtask) or of events (everything
 * the worker's endpoint produced in one wake-up). Payload bytes travel as Uint8Arrays whose
 * ArrayBuffers are in the transfer list: each one is owned by exactly one message (see
 * docs/WORKER.md, "Who owns the bytes").
 */
import type { ClientIdentity } from "../secure/server-security.js";
import type { HostPort, Target } from "../api/address.js";
import type { DisconnectInfo } from "../api/connection.js";
import type { ConnectOptions, ListenOptions } from "../api/options.js";
import type { ConnectionStats, DisconnectReason } from "../session/types.js";
import type { WireError } from "./wire-errors.js";

/** Options that cross to the worker: no functions, no AbortSignal (those stay on this thread). */
export type WireListenOptions = Omit<ListenOptions, "accept" | "createEndpoint">;
export type WireConnectOptions = Omit<ConnectOptions, "signal" | "createEndpoint">;

export type RuntimeName = "node" | "bun" | "deno";

/** Application thread -> worker. `c` is the endpoint's connection id. */
export type Command =
  | { op: "listen"; options: WireListenOptions; statsIntervalMs: number }
  | { op: "connect"; target: Target; options: WireConnectOptions; statsIntervalMs: number }
  /** The connect() AbortSignal fired. */
  | { op: "abort" }
  /** `tag` > 0 asks for a receipt event carrying that tag; 0 means no receipt. */
  | { op: "send"; c: number; data: Uint8Array; channel: number; key: number | undefined; tag: number; delayMs: number | undefined; deadlineMs: number | undefined }
  | { op: "close"; c: number; reason: DisconnectReason; userData: Uint8Array | undefined; linger: boolean }
  /** A fresh stats snapshot, answered by a "stats" event with the same `req` (> 0). */
  | { op: "stats"; c: number; req: number }
  /** Server: close every connection, then the socket. Client: the connection is over. Answered by "shut". */
  | { op: "shutdown" }
  /** Server: connect from the listening socket (server.connect); answered by "opened" or "open-failed" with `req`. */
  | { op: "server-connect"; req: number; target: Target; options: WireServerConnectOptions }
  /** That connect's AbortSignal fired. */
  | { op: "server-connect-abort"; req: number }
  /** Server: one NAT_PUNCH (server.punch). */
  | { op: "punch"; address: string; token: Uint8Array; acceptToken: Uint8Array }
  /** Server: a relay route under the number this thread chose (server.addRelayRoute), with one bind. */
  /** `seq` counts relay-route commands, so an eviction the worker reported before a re-add is told apart. */
  | { op: "relay-route"; relay: string; token: Uint8Array; id: number; virtual: string; seq: number }
  | { op: "relay-bind"; virtual: string }
  | { op: "relay-unroute"; virtual: string };

/** server.connect() options that cross (the signal stays on this thread). */
export interface WireServerConnectOptions {
  userData?: Uint8Array;
  connectTimeoutMs?: number;
}

export interface SocketCounters {
  wakeups: number;
  datagramsIn: number;
  datagramsOut: number;
  sendFailures: number;
  receiveErrors: number;
  /** A server's relay routes (the root Server's counters().relay), once the worker pushed them. */
  relay?: { wrapped: number; unwrapped: number; dropped: number; evicted: number; unrouted: number; fromVirtual: number };
}

/** Worker -> application thread. */
export type WorkerEvent =
  /** The worker's module loaded and listens for commands (sent once, before anything else). */
  | { t: "ready"; runtime: RuntimeName }
  | { t: "listening"; address: HostPort }
  | { t: "connected"; c: number; address: string; userData: Uint8Array; stats: ConnectionStats; limits: number[] }
  /** listen() or connect() failed in the worker: the typed error, rebuilt on the other side. */
  | { t: "failed"; error: WireError }
  | { t: "connection"; c: number; address: string; userData: Uint8Array; stats: ConnectionStats; limits: number[]; identity?: ClientIdentity }
  | { t: "message"; c: number; channel: number; data: Uint8Array; key: number | undefined }
  | { t: "unresponsive"; c: number; silentMs: number }
  | { t: "responsive"; c: number }
  | { t: "bandwidth"; c: number; bitsPerSecond: number }
  | { t: "pathMtu"; c: number; pathMtu: number; belowBase: boolean }
  | { t: "migrate"; c: number; from: string; to: string }
  | { t: "receipt"; c: number; tag: number; delivered: boolean }
  /** A send the worker's endpoint refused (too large, too many keys...). */
  | { t: "send-error"; c: number; tag: number; error: WireError }
  | { t: "disconnect"; c: number; info: DisconnectInfo }
  /** `req` 0: the periodic push; otherwise the answer to a "stats" command. */
  | { t: "stats"; c: number; req: number; stats: ConnectionStats | undefined }
  | { t: "counters"; counters: SocketCounters }
  /** Everything is closed; the worker may be terminated. */
  | { t: "shut" }
  /** A server-connect succeeded: connection `id` (its events then carry `c: id`). */
  | { t: "opened"; req: number; id: number; address: string; userData: Uint8Array; stats: ConnectionStats; limits: number[] }
  | { t: "open-failed"; req: number; error: WireError }
  /** The server's "punch" event. */
  | { t: "punch"; address: string; token: Uint8Array }
  /**
   * The worker's server refused a relay route: the front end checks the arguments first, so
   * only while closing, or when the two sides' lists briefly disagree. It is dropped.
   */
  | { t: "relay-refused"; virtual: string; seq: number }
  /** The worker's server evicted a relay route to make room (its least recently used); `seq` of the relay-route that added it. */
  | { t: "relay-evicted"; virtual: string; seq: number };

/** Default period of the stats push (ms). */
export const DEFAULT_STATS_INTERVAL_MS = 100;
