/**
 * One message to many connections of a server (`server.broadcast()`, `group.broadcast()`).
 *
 * The payload is copied once per broadcast, into a buffer of its own that nothing writes again,
 * and every connection's send queue keeps a reference to that buffer (SendOptions.shared)
 * instead of a copy of its own: N connections cost one copy, and their packets are written from
 * the same bytes. The arguments are checked once, before anything is queued.
 */
import { InvalidDataError, MessageTooLargeError, UnknownChannelError } from "../channels/errors.js";
import { copyExact } from "../channels/buffer-pool.js";
import type { SendOptions } from "../session/types.js";
import { Connection } from "./connection.js";
import type { EndpointLike } from "./endpoint-like.js";
import { InvalidOptionError } from "./errors.js";
import { firstUnknownKey, unknownOptionMessage } from "../util/closest-key.js";

export interface BroadcastOptions {
  /** Channel index (default 0). */
  channel?: number;
  /** LatestState channels: the state key (u32). */
  key?: number;
  /** Connections left out: one, or a list or set of them (e.g. the sender of a chat line). */
  except?: Connection | Iterable<Connection>;
}

/** What a broadcast needs of the server's driver. */
export interface BroadcastTarget {
  readonly endpoint: EndpointLike;
  requestService(): void;
}

const NO_OPTIONS: BroadcastOptions = Object.freeze({});
const KNOWN = ["channel", "key", "except"] as const;
const KNOWN_SET: ReadonlySet<string> = new Set(KNOWN);
/** Reused for every send of every broadcast: the endpoint reads it during the call only. */
const SEND: SendOptions & { key: number | undefined } = { channel: 0, key: undefined, shared: true };

/**
 * Queues `data` for each open connection of `connections` not in `options.except`; returns how
 * many got it. Throws before queueing anything for bad arguments (InvalidDataError,
 * UnknownChannelError, MessageTooLargeError, InvalidKeyError, InvalidOptionError for `except`).
 * A connection that ended meanwhile is skipped. Should one connection refuse the message while
 * others took it (a latest-state channel at its maxKeys there: TooManyKeysError), the rest still
 * get it and the first such error is thrown at the end.
 */
export function broadcastTo(target: BroadcastTarget, connections: Iterable<Connection>, data: Uint8Array, options: BroadcastOptions = NO_OPTIONS): number {
  if (!(data instanceof Uint8Array)) throw new InvalidDataError(data);
  checkOptions(options);
  const channel = options.channel ?? 0;
  const endpoint = target.endpoint;
  const limits = endpoint.maxMessageBytes;
  if (limits !== undefined) {
    if (!Number.isInteger(channel) || limits[channel] === undefined) throw new UnknownChannelError(channel, limits.length);
    if (data.length > limits[channel]!) throw new MessageTooLargeError(channel, data.length, limits[channel]!);
  }
  const except = exceptSet(options.except);
  // The one copy: the caller may reuse `data` as soon as this returns, the queues may not see it.
  const shared = copyExact(data);
  const send = SEND;
  send.channel = channel;
  send.key = options.key;
  let queued = 0;
  let failure: unknown;
  for (const connection of connections) {
    if (!connection.isOpen || (except !== undefined && except.has(connection))) continue;
    try {
      endpoint.send(connection.id, shared, send);
      queued++;
    } catch (error) {
      if (isEndedError(error)) continue;
      // Nothing queued yet: the arguments are wrong for every connection alike.
      if (queued === 0) throw error;
      failure ??= error;
    }
  }
  if (queued > 0) target.requestService();
  if (failure !== undefined) throw failure;
  return queued;
}

/** A misspelt or unsupported option would be ignored silently: refused instead. */
function checkOptions(options: BroadcastOptions): void {
  if (typeof options !== "object" || options === null) throw new InvalidOptionError(`broadcast(): options is an object ({ channel, key, except }), got ${options === null ? "null" : typeof options}`);
  const unknown = firstUnknownKey(options, KNOWN_SET);
  if (unknown === undefined) return;
  const hint = unknown === "receipt" || unknown === "delayMs" ? ` (a broadcast has no ${unknown}: loop over the connections with send() for that)` : undefined;
  throw new InvalidOptionError(unknownOptionMessage("broadcast()", unknown, KNOWN, "it takes", hint));
}

/** `except` as a set (undefined: none). */
function exceptSet(except: BroadcastOptions["except"]): ReadonlySet<Connection> | undefined {
  if (except === undefined) return undefined;
  if (except instanceof Connection) return new Set([except]);
  if (except instanceof Set) return except as ReadonlySet<Connection>;
  if (typeof except === "object" && except !== null && typeof (except as Partial<Iterable<Connection>>)[Symbol.iterator] === "function") return new Set(except);
  throw new InvalidOptionError(`broadcast(): except is a Connection, or an array or set of them, got ${except === null ? "null" : typeof except}`);
}

/** The session's errors for a connection it no longer holds or that is past Connected. */
function isEndedError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ERR_UNKNOWN_CONNECTION" || code === "ERR_CONNECTION_CLOSED";
}
