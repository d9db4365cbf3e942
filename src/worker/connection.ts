/**
 * A connection whose endpoint lives on the network worker, with the shape of the in-thread
 * `Connection`: typed events, send (with optional receipt), stats, close, async iteration.
 *
 * Differences, all because the endpoint is on another thread:
 * - `send()` copies `data` (the application may reuse its buffer) unless the front end was
 *   started with `transferOnSend: true`. It checks the connection state, the channel index and a
 *   latest-state key at once (same typed errors as in-thread); anything the endpoint itself
 *   refuses (too large for the channel, too many keys) arrives later: as the rejection of the
 *   receipt promise, or as an "error" event when no receipt was asked for.
 * - `stats()` returns the newest snapshot the worker pushed (every `statsIntervalMs`, default
 *   100 ms; `statsAt` says when it arrived); `fetchStats()` asks for a fresh one (a round trip).
 * - Receipt ids in the "receipt" event are this front end's own numbering.
 */
import type { ClientIdentity } from "../secure/server-security.js";
import type { Address } from "../session/sans-io.js";
import type { ChannelConfig, ConnectionId, ConnectionStats, DisconnectReason } from "../session/types.js";
import { checkCloseArguments, lingerOf, type CloseOptions, type ConnectionEvents, type DisconnectInfo, type Message, type SendCallOptions } from "../api/connection.js";
import { TypedEmitter } from "../api/emitter.js";
import { ClosedError } from "../api/errors.js";
import { host, monotonicNow } from "../api/host.js";
import { InvalidDataError, MessageTooLargeError, UnknownChannelError } from "../channels/errors.js";
import { checkSendDeadline, checkSendDelay, checkSendKey } from "../channels/send-checks.js";
import { UserDataTooLargeError } from "../session/errors.js";
import { MAX_DISCONNECT_USER_DATA } from "../wire/control.js";
import type { WorkerLink } from "./link.js";
import { MessageQueue } from "../api/message-queue.js";
import { channelNameIndex, checkSendOptionKeys, resolveChannel } from "../api/send-options.js";
import type { RuntimeName, WorkerEvent } from "./protocol.js";
import { fromWireError } from "./wire-errors.js";

export interface WorkerConnectionEvents extends Omit<ConnectionEvents, "error"> {
  /** A send the worker's endpoint refused, when no receipt promise was there to reject. */
  error: Error;
}

/** Events addressed to one connection. */
export type ConnectionEvent = Extract<WorkerEvent, { c: number }>;

export interface WorkerConnectionInit {
  link: WorkerLink;
  id: ConnectionId;
  address: Address;
  userData: Uint8Array;
  stats: ConnectionStats;
  /** Each channel's largest message (the worker's endpoint's maxMessageBytes). */
  limits: readonly number[];
  maxQueued: number;
  channels: readonly ChannelConfig[];
  transferOnSend: boolean;
  onClosed: (conn: WorkerConnection) => void;
  runtime: RuntimeName;
  /** Client side: the worker's end (the connection owns its worker). */
  workerStopped?: Promise<void>;
  /** A secure server's client: who its connect token says it is. */
  identity?: ClientIdentity;
}

export class WorkerConnection extends TypedEmitter<WorkerConnectionEvents> implements AsyncIterable<Message> {
  readonly id: ConnectionId;
  /** The peer's address; on a server it changes if the client migrates ("migrate"). */
  address: Address;
  readonly userData: Uint8Array;
  /** On a secure server (listen's `secure`), who the client's connect token says it is; else undefined. */
  readonly identity: ClientIdentity | undefined;
  readonly closed: Promise<DisconnectInfo>;
  /** The runtime the network worker runs in (reported by the worker itself). */
  readonly runtime: RuntimeName;
  /** Client side: resolves once this connection's worker was terminated (after the disconnect). Undefined on a server's connections. */
  readonly workerStopped: Promise<void> | undefined;
  #link: WorkerLink;
  #open = true;
  #closing = false;
  /** The close in progress lingers (and was not followed by one without). */
  #lingering = false;
  #stats: ConnectionStats;
  #statsAt: number;
  #channels: readonly ChannelConfig[];
  /** Channel name -> index, built at the first send by name. */
  #names: ReadonlyMap<string, number> | undefined;
  #limits: readonly number[];
  #transferOnSend: boolean;
  #maxQueued: number;
  #onClosed: (conn: WorkerConnection) => void;
  #resolveClosed!: (info: DisconnectInfo) => void;
  #lastTag = 0;
  #receipts = new Map<number, { resolve: (delivered: boolean) => void; reject: (error: unknown) => void }>();
  #statsRequests = new Map<number, { resolve: (stats: ConnectionStats) => void; reject: (error: unknown) => void }>();
  #iterators = new Set<MessageQueue>();
  #held: ConnectionEvent[] | undefined;

  /** @internal created by the worker front end's listen() and connect(). */
  constructor(init: WorkerConnectionInit) {
    super();
    this.#link = init.link;
    this.id = init.id;
    this.address = init.address;
    this.userData = init.userData;
    this.identity = init.identity;
    this.#stats = init.stats;
    this.#statsAt = monotonicNow();
    this.#maxQueued = init.maxQueued;
    this.#channels = init.channels;
    this.#limits = init.limits;
    this.#transferOnSend = init.transferOnSend;
    this.#onClosed = init.onClosed;
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    this.workerStopped = init.workerStopped;
    this.runtime = init.runtime;
  }

  /** False from close() on, and after the disconnect. */
  get isOpen(): boolean {
    return this.#open && !this.#closing;
  }

  /** The largest message send() takes on `channel` (as the root Connection's); undefined for a
   *  channel the connection does not have. */
  maxMessageBytes(channel = 0): number | undefined {
    return this.#limits[channel];
  }

  /** When the snapshot returned by stats() arrived (monotonic ms, performance.now()). */
  get statsAt(): number {
    return this.#statsAt;
  }

  send(data: Uint8Array, options?: SendCallOptions & { receipt?: false }): void;
  send(data: Uint8Array, options: SendCallOptions & { receipt: true }): Promise<boolean>;
  send(data: Uint8Array, options: SendCallOptions = {}): Promise<boolean> | void {
    if (!this.#open || this.#closing) throw new ClosedError(`connection ${this.id} to ${this.address}`);
    if (!(data instanceof Uint8Array)) throw new InvalidDataError(data);
    checkSendOptionKeys(options);
    const named = options.channel ?? 0;
    const channel = typeof named === "number" ? named : resolveChannel(named, (this.#names ??= channelNameIndex(this.#channels) ?? new Map()));
    const config = Number.isInteger(channel) ? this.#channels[channel] : undefined;
    if (config === undefined) throw new UnknownChannelError(channel, this.#channels.length);
    const key = options.key;
    // As the root's send() does, at once (else the worker's refusal came as a later "error").
    checkSendKey(channel, config.mode === "latest-state", key);
    checkSendDelay(options.delayMs);
    checkSendDeadline(options.deadlineMs, config.mode === "latest-state");
    const limit = this.#limits[channel];
    if (limit !== undefined && data.byteLength > limit) throw new MessageTooLargeError(channel, data.byteLength, limit);
    const bytes = this.#outgoing(data);
    const tag = options.receipt === true ? ++this.#lastTag : 0;
    this.#link.command({ op: "send", c: this.id, data: bytes, channel, key, tag, delayMs: options.delayMs, deadlineMs: options.deadlineMs }, bytes.byteLength > 0 ? (bytes.buffer as ArrayBuffer) : undefined);
    if (tag === 0) return;
    return new Promise<boolean>((resolve, reject) => this.#receipts.set(tag, { resolve, reject }));
  }

  /**
   * The bytes that cross: a copy, or (transferOnSend) the caller's own buffer when the view spans
   * all of it, moved out at once: the commands cross in a batch at the end of the turn, and until
   * then the caller could still write into a buffer it believes detached. structuredClone with a
   * transfer list detaches the original now and hands its memory to a new ArrayBuffer, no copy.
   */
  #outgoing(data: Uint8Array): Uint8Array {
    if (this.#transferOnSend && data.buffer instanceof ArrayBuffer && data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.byteLength > 0) {
      return new Uint8Array(host.structuredClone(data.buffer, { transfer: [data.buffer] }));
    }
    try {
      return data.slice();
    } catch {
      // A view of a buffer a previous send() took (transferOnSend), e.g. one message sent to two
      // connections: a typed error, not the runtime's TypeError.
      throw new InvalidDataError(data, `send(): this Uint8Array's buffer was detached (transferOnSend hands the buffer of each send to the network worker): send a copy (data.slice()) to each further connection`);
    }
  }

  /** The newest snapshot from the worker (at most statsIntervalMs old while the thread is free). */
  stats(): ConnectionStats {
    if (!this.#open) throw new ClosedError(`connection ${this.id} to ${this.address}`);
    return this.#stats;
  }

  /** Crossings between the threads so far (postMessage batches and the commands/events in them), for this connection's worker (shared by a server's connections). */
  workerCounters(): WorkerLink["counters"] {
    return { ...this.#link.counters };
  }

  /** A fresh snapshot from the worker (one round trip between the threads). */
  fetchStats(): Promise<ConnectionStats> {
    if (!this.#open) return Promise.reject(new ClosedError(`connection ${this.id} to ${this.address}`));
    const req = ++this.#lastTag;
    this.#link.command({ op: "stats", c: this.id, req });
    return new Promise((resolve, reject) => this.#statsRequests.set(req, { resolve, reject }));
  }

  /** Graceful close, as in-thread (linger by default): resolves when the peer acknowledged or
   *  the close timeout passed. A second close without linger while the first lingers goes on. */
  close(reason: DisconnectReason = "normal", userData?: Uint8Array, options?: CloseOptions): Promise<DisconnectInfo> {
    // Checked here, on the application's thread, as the root's close() checks them: refused in
    // the worker, the close would never resolve.
    checkCloseArguments(reason, userData);
    if (userData !== undefined && userData.length > MAX_DISCONNECT_USER_DATA) throw new UserDataTooLargeError(userData.length, MAX_DISCONNECT_USER_DATA, "disconnect");
    const linger = lingerOf(options);
    if (this.#open && (!this.#closing || (this.#lingering && !linger))) {
      this.#closing = true;
      this.#lingering = linger;
      this.#link.command({ op: "close", c: this.id, reason, userData: userData?.slice(), linger });
    }
    return this.closed;
  }

  [Symbol.asyncIterator](): AsyncIterator<Message> {
    const queue = new MessageQueue(() => this.#iterators.delete(queue));
    if (this.#open) this.#iterators.add(queue);
    else queue.end();
    return queue;
  }

  /** @internal holds events until _release() (client: until connect() resolved to the app). */
  _hold(): void {
    this.#held ??= [];
  }

  /** @internal */
  _release(): void {
    const held = this.#held;
    this.#held = undefined;
    if (held !== undefined) for (const event of held) this._dispatch(event);
  }

  /** @internal one event from the worker for this connection. */
  _dispatch(event: ConnectionEvent): void {
    if (this.#held !== undefined && event.t !== "stats") {
      this.#held.push(event);
      return;
    }
    switch (event.t) {
      case "message": {
        // From close() on, none (as the root Connection: a listener could not answer it).
        if (this.#closing) return;
        const message: Message = event.key === undefined ? { channel: event.channel, data: event.data } : { channel: event.channel, data: event.data, key: event.key };
        for (const queue of this.#iterators) queue.push(message, this.#maxQueued);
        this.emit("message", message);
        return;
      }
      case "receipt": {
        const pending = this.#receipts.get(event.tag);
        if (pending !== undefined) {
          this.#receipts.delete(event.tag);
          pending.resolve(event.delivered);
        }
        this.emit("receipt", { receipt: event.tag, delivered: event.delivered });
        return;
      }
      case "send-error": {
        const error = fromWireError(event.error);
        const pending = this.#receipts.get(event.tag);
        if (event.tag > 0 && pending !== undefined) {
          this.#receipts.delete(event.tag);
          pending.reject(error);
        } else this.emit("error", error);
        return;
      }
      case "stats": {
        if (event.stats !== undefined) {
          this.#stats = event.stats;
          this.#statsAt = monotonicNow();
        }
        if (event.req === 0) return;
        const pending = this.#statsRequests.get(event.req);
        if (pending === undefined) return;
        this.#statsRequests.delete(event.req);
        if (event.stats !== undefined) pending.resolve(event.stats);
        else pending.reject(new ClosedError(`connection ${this.id} to ${this.address}`));
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
      case "disconnect":
        return this._end(event.info);
      case "connected":
      case "connection":
        return;
    }
  }

  /** @internal the worker failed: report it, then end the connection (reason "aborted"). */
  _fail(error: Error): void {
    this.emit("error", error);
    this._end({ reason: "aborted" });
  }

  /** @internal the connection is over (its disconnect event, or the worker failed). */
  _end(info: DisconnectInfo): void {
    if (!this.#open) return;
    this.#open = false;
    this.#held = undefined;
    for (const pending of this.#receipts.values()) pending.resolve(false);
    this.#receipts.clear();
    for (const pending of this.#statsRequests.values()) pending.reject(new ClosedError(`connection ${this.id} to ${this.address}`));
    this.#statsRequests.clear();
    for (const queue of this.#iterators) queue.end();
    this.#onClosed(this);
    this.emit("disconnect", info);
    this.#resolveClosed(info);
  }
}
