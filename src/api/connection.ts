/**
 * A connection as the application holds it: typed events, send with optional receipt, stats,
 * close, and async iteration of messages.
 *
 * Async-iteration buffering policy: messages are queued for an iterator only while one is open
 * (from the `[Symbol.asyncIterator]()` call until it returns), and at most `maxQueuedMessages`
 * of them (default 65536). Past that the iterator throws MessageQueueOverflowError once the
 * queued messages are consumed: an open iterator never loses reliable data silently. The "message" event
 * sees every message whether or not an iterator is open. The iterator ends (done) after the
 * disconnect, once the queue is drained.
 *
 * Sends racing the peer's disconnect: the endpoint drops a connection the moment it learns it
 * ended (the peer's DISCONNECT, a timeout), but the "disconnect" event reaches the application
 * only after the events queued before it, e.g. the messages of the same datagram burst. A
 * `send()` from such a "message" listener cannot know; it is dropped (a receipt resolves
 * false) and `isOpen` turns false at once. Once "disconnect" was emitted, or after close(),
 * `send()` throws ClosedError (ERR_CLOSED). From close() on no "message" is emitted (nor queued
 * for an iterator): what the peer still sends is acknowledged by the transport and dropped; the
 * receipts and the "disconnect" still come.
 */
import type { ClientIdentity } from "../secure/server-security.js";
import type { Address } from "../session/sans-io.js";
import type { ConnectionId, ConnectionStats, DenyReason, DisconnectReason, EndpointEvent } from "../session/types.js";
import { InvalidDataError } from "../channels/errors.js";
import { TypedEmitter } from "./emitter.js";
import { ClosedError, InvalidOptionError, type ListenerError } from "./errors.js";
import { MessageQueue } from "./message-queue.js";
import { checkSendOptionKeys, resolveChannel } from "./send-options.js";
import { DEFAULT_HIGH_WATER_MARK, type Driver } from "./driver.js";
import { host, monotonicNow } from "./host.js";

export interface Message {
  channel: number;
  data: Uint8Array;
  /** LatestState channels: the state key. */
  key?: number;
}

/** Why a connection ended ("disconnect" event, `closed`, close()'s promise). */
export interface DisconnectInfo {
  reason: DisconnectReason;
  /** A denied connect: the server's reason. */
  deny?: DenyReason;
  /** What the peer sent with its close (or deny). */
  userData?: Uint8Array;
  /**
   * The connection's final stats, as `stats()` keeps answering after the end. Absent only with a
   * custom endpoint (`createEndpoint`) that does not report them, or when close()'s safety net
   * ended a connection its endpoint never reported closed.
   */
  stats?: ConnectionStats;
}

export interface ConnectionEvents {
  message: Message;
  unresponsive: { silentMs: number };
  responsive: undefined;
  disconnect: DisconnectInfo;
  receipt: { receipt: number; delivered: boolean };
  bandwidth: { bitsPerSecond: number };
  /** Path MTU discovery found a black hole: datagrams of the size in use vanished while smaller
   *  ones got through. `pathMtu` is the size it fell to: the base `mtu`, or below it
   *  (`belowBase`) down to 548 bytes (docs/SESSION.md, "Path MTU discovery"). */
  pathMtu: { pathMtu: number; belowBase: boolean };
  /** Server side: the client's address changed and the connection moved with it (`address`
   *  is already the new one). */
  migrate: { from: Address; to: Address };
  /**
   * One of this connection's listeners threw (`error.event` says which; `error.cause` is what
   * it threw). The connection keeps running. Without an "error" listener here the error goes to
   * the server's "error" listeners, and without those it is printed to the console
   * (docs/RUNTIMES.md, "Errors thrown by your listeners").
   */
  error: ListenerError;
  /**
   * The bytes held to send fell below `highWaterMark` after a send() had left them at or above
   * it (`needsDrain` turned false): send more now. `queuedBytes` is the figure then.
   */
  drain: { queuedBytes: number };
}

export interface SendCallOptions {
  /**
   * Channel index (default 0: reliable-ordered in the default channel list), or the `name` of
   * a channel in the channels config (`"chat"`): an unknown name throws UnknownChannelNameError.
   */
  channel?: number | string;
  /** LatestState channels: the state key (u32). Undefined, as a received message's `key` is
   *  on other channels, is the same as absent: an echo can pass `{ channel, key }` through. */
  key?: number | undefined;
  /** Ask for a delivery receipt: send() then returns Promise<boolean> (true delivered, false lost). */
  receipt?: boolean;
  /** Hold the message until now + delayMs (a delayed send, e.g. to pace a large state
   *  transfer to a joining player); see docs/CHANNELS.md "Delayed sends". */
  delayMs?: number;
  /**
   * Give the message up if it is not delivered within deadlineMs of this call: it is never
   * resent after that, and its receipt resolves false; on a reliable-ordered channel the peer
   * is told to skip it, so later messages do not wait behind it. Not on latest-state channels.
   * See docs/CHANNELS.md "Deadlines".
   */
  deadlineMs?: number;
}

export const DEFAULT_MAX_QUEUED_MESSAGES = 65_536;
const NO_OPTIONS: SendCallOptions = Object.freeze({});
const SEND_OPTIONS: { channel: number; key: number | undefined; receipt: boolean; delayMs: number | undefined; deadlineMs: number | undefined } = {
  channel: 0,
  key: undefined,
  receipt: false,
  delayMs: undefined,
  deadlineMs: undefined,
};
/** Longer than the endpoint's graceful close timeout (closeTimeoutMs, 3 s by default); a
 *  longer closeTimeoutMs gets a second more than itself. */
const CLOSE_SAFETY_NET_MS = 5_000;

/** The protocol's own reasons (PROTOCOL §4) an application may close with; the others
 *  (timeout, protocol-violation, denied...) report what the connection itself saw. */
const APP_CLOSE_REASONS: ReadonlySet<unknown> = new Set(["normal", "kicked", "server-shutdown"]);

/**
 * Throws InvalidOptionError unless `reason` is one an application may close with: "normal",
 * "kicked", "server-shutdown" or { app: n } with n an integer in 64..255 (PROTOCOL §4: codes
 * below 64 are the protocol's; the wire has one byte), and `userData` is undefined or a
 * Uint8Array. Shared by the root's and the worker's Connection.close().
 */
export function checkCloseArguments(reason: unknown, userData: unknown): asserts reason is DisconnectReason {
  if (!APP_CLOSE_REASONS.has(reason)) {
    const app = typeof reason === "object" && reason !== null && !Array.isArray(reason) ? (reason as { app?: unknown }).app : undefined;
    if (!(typeof app === "number" && Number.isInteger(app) && app >= 64 && app <= 255)) {
      const got = typeof reason === "object" && reason !== null && !Array.isArray(reason) ? `{ app: ${typeof app === "string" ? JSON.stringify(app) : String(app)} }` : typeof reason === "string" ? JSON.stringify(reason) : String(reason);
      throw new InvalidOptionError(
        `close(): the reason is "normal", "kicked", "server-shutdown" or { app: n } with n an integer in 64..255 ` +
          `(0..63 are reserved by the protocol; "timeout", "protocol-violation", "denied"... are reported by the connection, not given to it), got ${got}`,
      );
    }
  }
  if (userData !== undefined && !(userData instanceof Uint8Array)) {
    throw new InvalidOptionError(`close(): userData is a Uint8Array of at most 512 bytes (the peer's DisconnectInfo.userData), got ${userData === null ? "null" : typeof userData}`);
  }
}

/** close()'s options. */
export interface CloseOptions {
  /** Deliver what was sent before the close, then say goodbye (default true); false drops it. */
  linger?: boolean;
}

/** close()'s `linger` (default true), or InvalidOptionError. Shared by the root's and the
 *  worker's Connection.close(). */
export function lingerOf(options: CloseOptions | undefined): boolean {
  const linger = options?.linger ?? true;
  if (typeof linger !== "boolean") throw new InvalidOptionError(`close(): options.linger is true (deliver what was sent, then say goodbye) or false (drop it), got ${String(linger)}`);
  return linger;
}

export class Connection extends TypedEmitter<ConnectionEvents> implements AsyncIterable<Message> {
  readonly id: ConnectionId;
  /** The peer's address, e.g. "127.0.0.1:7777". On a server it changes if the client migrates
   *  (the "migrate" event). */
  address: Address;
  /** User data the peer sent with its handshake (server side) or its accept (client side). */
  readonly userData: Uint8Array;
  /**
   * On a secure server (listen's `secure`), who the client's connect token says it is: the id
   * and user data your backend put in it. Undefined elsewhere.
   */
  identity: ClientIdentity | undefined = undefined;
  /** Resolves once, with why the connection ended. */
  readonly closed: Promise<DisconnectInfo>;
  /**
   * Back-pressure threshold in bytes (default: listen/connect's `highWaterMark`, 1 MiB): a
   * send() that leaves `queuedBytes` at or above it sets `needsDrain`, and "drain" follows once
   * they fall below it. Set it at any time; Infinity turns it off.
   */
  highWaterMark: number;
  #needsDrain = false;
  /** Held bytes when last counted, and bytes sent since: their sum bounds the held bytes. */
  #lastCount = 0;
  #sentSinceCount = 0;
  #driver: Driver;
  #open = true;
  /** close() was called with linger (and not again without). */
  #lingering = false;
  /** close() was called: no more sends, waiting for the endpoint's disconnect event. */
  #closing = false;
  /** The endpoint no longer holds this connection; its "disconnect" event is on its way. */
  #ended = false;
  #resolveClosed!: (info: DisconnectInfo) => void;
  #receipts = new Map<number, (delivered: boolean) => void>();
  #iterators = new Set<MessageQueue>();
  #maxQueued: number;
  #onClosed: (conn: Connection) => void;
  /** Client side: events that arrive before connect() has resolved to the application. */
  #held: EndpointEvent[] | undefined;
  /** The final stats the disconnect brought: stats() answers with them from then on. */
  #finalStats: ConnectionStats | undefined;
  /** Where a listener's error goes when this connection has no "error" listener (its server's). */
  #errorParent: ((error: ListenerError) => void) | undefined;

  /** @internal created by Server and connect(), not by applications. */
  constructor(driver: Driver, id: ConnectionId, address: Address, userData: Uint8Array, maxQueued: number, onClosed: (conn: Connection) => void) {
    super();
    this.#driver = driver;
    this.id = id;
    this.address = address;
    this.userData = userData;
    this.#maxQueued = maxQueued;
    this.#onClosed = onClosed;
    // (Tests of code that only holds connections pass no driver.)
    this.highWaterMark = (driver as Driver | undefined)?.highWaterMark ?? DEFAULT_HIGH_WATER_MARK;
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
  }

  /**
   * @internal Holds events until `_release()`: connect() resolves a few microtasks after the
   * handshake, and messages that came in the same datagram burst must wait for the
   * application's listeners and iterators.
   */
  _hold(): void {
    this.#held ??= [];
  }

  /** @internal */
  _release(): void {
    const held = this.#held;
    this.#held = undefined;
    if (held !== undefined) for (const event of held) this._dispatch(event);
  }

  /** @internal The server hands errors no "error" listener here took to its own. */
  _setErrorParent(parent: (error: ListenerError) => void): void {
    this.#errorParent = parent;
  }

  /** @internal */
  protected override _unhandledError(error: ListenerError): void {
    if (this.#errorParent !== undefined) this.#errorParent(error);
    else super._unhandledError(error);
  }

  /** Bytes of application data this connection holds to send: queued, in flight or waiting to
   *  be resent, delayed sends included (stats().queuedBytes, read cheaply). 0 after the end. */
  get queuedBytes(): number {
    return this.#open ? this.#driver.queuedBytes(this.id) : 0;
  }

  /** True from a send() that left `queuedBytes` at or above `highWaterMark` until the "drain". */
  get needsDrain(): boolean {
    return this.#needsDrain;
  }

  /**
   * After a send of `bytes`: `needsDrain` if the held bytes reached highWaterMark. Acks only
   * lower them, so the last count plus what was sent since bounds them from above: the
   * endpoint is asked only once that bound reaches the mark (rarely, with small messages).
   */
  #checkHighWater(bytes: number): void {
    this.#sentSinceCount += bytes;
    if (this.#lastCount + this.#sentSinceCount < this.highWaterMark) return;
    const queued = this.#driver.queuedBytes(this.id);
    this.#lastCount = queued;
    this.#sentSinceCount = 0;
    if (queued < this.highWaterMark) return;
    this.#needsDrain = true;
    this.#driver.draining.add(this);
  }

  /** @internal the driver asks after each service while `needsDrain`. */
  _checkDrain(): void {
    const queued = this.#open ? this.#driver.queuedBytes(this.id) : 0;
    this.#lastCount = queued;
    this.#sentSinceCount = 0;
    if (this.#open && queued >= this.highWaterMark) return;
    this.#driver.draining.delete(this);
    this.#needsDrain = false;
    if (this.#open) this.emit("drain", { queuedBytes: queued });
  }

  /** False from close() on (and after any disconnect). */
  get isOpen(): boolean {
    return this.#open && !this.#closing && !this.#ended;
  }

  /**
   * Sends `data` on `options.channel` (default 0). With `receipt: true` returns a promise of
   * whether the peer got it (true) or it was given up as lost (false). Throws a typed error on
   * misuse: ClosedError (closed connection), and the ChannelErrors UnknownChannelError,
   * MessageTooLargeError, InvalidKeyError, TooManyKeysError, InvalidDelayError, InvalidDataError
   * (data not a Uint8Array), UnknownChannelNameError (a channel name no config has), and
   * InvalidOptionError for an option key send() does not know (`chanel`), InvalidDeadlineError.
   * `delayMs` and `deadlineMs` count from this call.
   */
  send(data: Uint8Array, options?: SendCallOptions & { receipt?: false }): void;
  send(data: Uint8Array, options: SendCallOptions & { receipt: true }): Promise<boolean>;
  send(data: Uint8Array, options: SendCallOptions = NO_OPTIONS): Promise<boolean> | void {
    if (!this.#open || this.#closing) throw new ClosedError(`connection ${this.id} to ${this.address}`);
    if (!(data instanceof Uint8Array)) throw new InvalidDataError(data);
    if (options !== NO_OPTIONS) checkSendOptionKeys(options);
    const receiptWanted = options.receipt === true;
    let receipt: number | void = undefined;
    if (!this.#ended) {
      try {
        // One options object reused for every send (the endpoint reads it during the call and
        // keeps nothing): an allocation per message less on the bulk path.
        const o = SEND_OPTIONS;
        const channel = options.channel ?? 0;
        o.channel = typeof channel === "number" ? channel : resolveChannel(channel, this.#driver.channelNames);
        o.key = options.key;
        o.receipt = receiptWanted;
        const delayMs = (o.delayMs = options.delayMs);
        const deadlineMs = (o.deadlineMs = options.deadlineMs);
        // A delay or a deadline counts from now, not from the driver's last wake-up (the
        // endpoint's clock between wake-ups). Read the clock only then: the bulk path reads none.
        receipt =
          delayMs === undefined && deadlineMs === undefined
            ? this.#driver.endpoint.send(this.id, data, o)
            : this.#driver.endpoint.send(this.id, data, o, monotonicNow());
      } catch (error) {
        if (!isEndedError(error)) throw error;
        this.#ended = true;
      }
    }
    if (this.#ended) return receiptWanted ? Promise.resolve(false) : undefined;
    if (!this.#needsDrain) this.#checkHighWater(data.byteLength);
    this.#driver.requestService();
    if (!receiptWanted) return;
    if (typeof receipt !== "number") return Promise.resolve(false);
    return new Promise<boolean>((resolve) => this.#receipts.set(receipt, resolve));
  }

  /**
   * The largest message `send()` takes on `channel` (its `maxMessageBytes`, the default resolved
   * for the mtu: 1 MiB on reliable modes, 64 KiB on unreliable ones, at most 1024 fragments);
   * undefined for a channel the connection does not have (or a custom endpoint that does not
   * say). `channel` may be a channel's name.
   */
  maxMessageBytes(channel: number | string = 0): number | undefined {
    const index = typeof channel === "number" ? channel : this.#driver.channelNames?.get(channel);
    return index === undefined ? undefined : this.#driver.endpoint.maxMessageBytes?.[index];
  }

  /**
   * The connection's figures: RTT (`rttMs` smoothed as RFC 6298, `rttEwmaMs` the 10% moving
   * average), loss, pings, packets, bytes, queued bytes... After the connection ended,
   * its final figures (also in the "disconnect" event's `stats`). Throws ClosedError only when
   * they are unknown (a custom endpoint that does not report them).
   */
  stats(): ConnectionStats {
    if (this.#finalStats !== undefined) return this.#finalStats;
    if (!this.#open) throw new ClosedError(`connection ${this.id} to ${this.address}`);
    try {
      return this.#driver.endpoint.stats(this.id);
    } catch (error) {
      if (!isEndedError(error)) throw error;
      this.#ended = true;
      throw new ClosedError(`connection ${this.id} to ${this.address}`);
    }
  }

  /**
   * Closes gracefully: what was sent before is delivered first (`linger`, the default; its
   * receipts resolve as they settle), then the peer is told (with `reason`), and the promise
   * resolves once it has acknowledged, or the endpoint's close timeout (`closeTimeoutMs`, 3 s by
   * default, counted from this call, at most half of it lingering) has passed. With
   * `{ linger: false }` what is still queued or unacknowledged is dropped (receipts: false) and
   * the goodbye goes at once. `reason` is "normal" (default), "kicked", "server-shutdown" or
   * `{ app: n }` with n in 64..255; anything else throws InvalidOptionError. `userData` (at most
   * 512 bytes, else UserDataTooLargeError) reaches the peer's DisconnectInfo. A close that threw
   * leaves the connection open. Sends after close() throw ClosedError. Closing a closed
   * connection resolves with the original reason; closing again while lingering closes at once.
   */
  close(reason: DisconnectReason = "normal", userData?: Uint8Array, options?: CloseOptions): Promise<DisconnectInfo> {
    checkCloseArguments(reason, userData);
    const linger = lingerOf(options);
    if (this.#open && this.#closing && this.#lingering && !linger) {
      // A second close, without linger, while the first still delivers: goodbye now. (The flag
      // after the call: a throw, user data too large, leaves the first close as it was.)
      this.#driver.endpoint.close(this.id, reason, userData, monotonicNow());
      this.#lingering = false;
      this.#driver.service();
    }
    if (this.#open && !this.#closing) {
      // The close timeout counts from now, not from the driver's last wake-up. A throw
      // (userData too large) leaves the connection as it was.
      this.#driver.endpoint.close(this.id, reason, userData, monotonicNow(), linger);
      this.#lingering = linger;
      this.#closing = true;
      this.#driver.service();
      if (this.#open) {
        // The endpoint reports the disconnect when the peer acknowledges or its close timeout
        // passes. A custom endpoint that never reports it is covered by this safety net.
        const configured = (this.#driver.endpoint as { config?: { closeTimeoutMs?: unknown } }).config?.closeTimeoutMs;
        const safetyNetMs = typeof configured === "number" ? Math.max(CLOSE_SAFETY_NET_MS, configured + 1_000) : CLOSE_SAFETY_NET_MS;
        const timer = host.setTimeout(() => this._dispatch({ type: "disconnect", connection: this.id, reason }), safetyNetMs);
        void this.closed.then(() => host.clearTimeout(timer));
      }
    }
    return this.closed;
  }

  /** @internal routes one endpoint event for this connection. */
  _dispatch(event: EndpointEvent): void {
    if (this.#held !== undefined) {
      this.#held.push(event);
      return;
    }
    switch (event.type) {
      case "message": {
        // From close() on the connection is over for the application: a message listener could
        // not answer (send() throws), and the quick start's echo, answering one while a server
        // closed, threw out of the listener and took the process down.
        if (this.#closing) return;
        // The endpoint's event is a fresh object per message and already has Message's fields
        // (plus `type` and `connection`): handing it on saves an allocation per message.
        const message: Message = event;
        if (this.#iterators.size > 0) for (const queue of this.#iterators) queue.push(message, this.#maxQueued);
        this.emit("message", message);
        return;
      }
      case "receipt": {
        const resolve = this.#receipts.get(event.receipt);
        if (resolve !== undefined) {
          this.#receipts.delete(event.receipt);
          resolve(event.delivered);
        }
        this.emit("receipt", { receipt: event.receipt, delivered: event.delivered });
        return;
      }
      case "unresponsive":
        return this.emit("unresponsive", { silentMs: event.silentMs });
      case "responsive":
        return this.emit("responsive", undefined);
      case "bandwidth":
        return this.emit("bandwidth", { bitsPerSecond: event.bitsPerSecond });
      case "pathMtu":
        return this.emit("pathMtu", { pathMtu: event.pathMtu, belowBase: event.belowBase });
      case "migrate":
        this.address = event.to;
        return this.emit("migrate", { from: event.from, to: event.to });
      case "disconnect": {
        if (!this.#open) return;
        this.#open = false;
        this.#driver.draining.delete(this);
        const info: DisconnectInfo = { reason: event.reason };
        if (event.deny !== undefined) info.deny = event.deny;
        if (event.userData !== undefined) info.userData = event.userData;
        if (event.stats !== undefined) info.stats = this.#finalStats = event.stats;
        for (const resolve of this.#receipts.values()) resolve(false);
        this.#receipts.clear();
        for (const queue of this.#iterators) queue.end();
        this.#onClosed(this);
        this.emit("disconnect", info);
        this.#resolveClosed(info);
        return;
      }
      case "connect":
        return;
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<Message> {
    const queue = new MessageQueue(() => this.#iterators.delete(queue));
    if (this.#open) this.#iterators.add(queue);
    else queue.end();
    return queue;
  }
}

/**
 * The session's errors for a connection it no longer holds (removed) or that is past Connected
 * (the peer's disconnect arrived): both mean "ended", whatever the application could see.
 */
function isEndedError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ERR_UNKNOWN_CONNECTION" || code === "ERR_CONNECTION_CLOSED";
}
