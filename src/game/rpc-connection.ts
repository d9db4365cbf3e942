/**
 * Binds an RpcPeer to a public-API Connection: messages on `channel` go to the peer, the peer's
 * sends go out on `channel`, call timeouts run on one timer, and the peer closes when the
 * connection ends. Other channels are untouched, so RPC shares a connection with game traffic.
 *
 * One peer per (connection, channel) at a time: every message on the channel goes to the peer
 * attached to it, so two peers would each see the other's answers (and call ids). A second
 * attachRpc() on an attached channel throws GameUsageError; after detach() the channel is free,
 * and the next peer's call ids continue where the old peer's stopped, so the answers to the old
 * peer's calls, which the remote still sends, match none of the new peer's calls.
 */
import type { Connection, Message } from "../api/connection.js";
import { monotonicNow } from "../api/host.js";
import { RpcPeer, type RpcOptions } from "./rpc.js";
import type { RpcCallArgs, RpcMethodName, RpcMethods, RpcNotifyArgs, RpcResult, UntypedRpc } from "./rpc-types.js";
import { GameUsageError, RpcClosedError } from "./errors.js";
import { ModuleTimer } from "./timer.js";

export interface AttachRpcOptions<Local extends RpcMethods<Local> = UntypedRpc> extends Omit<RpcOptions<Local>, "send" | "now" | "firstCallId"> {
  /** The connection channel carrying RPC. Default 0 (reliable-ordered in DEFAULT_CHANNELS). */
  channel?: number;
}

/** `Remote` / `Local`: the method maps, as RpcPeer's (./rpc-types.ts). */
export interface AttachedRpc<Remote extends RpcMethods<Remote> = UntypedRpc, Local extends RpcMethods<Local> = UntypedRpc> {
  peer: RpcPeer<Remote, Local>;
  call<M extends RpcMethodName<Remote>>(method: M, ...args: RpcCallArgs<Remote[M]>): Promise<RpcResult<Remote[M]>>;
  notify<M extends RpcMethodName<Remote>>(method: M, ...args: RpcNotifyArgs<Remote[M]>): void;
  /** Stops listening on the connection and closes the peer (the connection stays open). */
  detach(): void;
}

/** Per connection, per channel: the attached peer (if any) and the next call id to use there.
 *  Weak: a connection the application drops takes its entry with it. */
const channelsOf = new WeakMap<object, Map<number, { peer: { readonly isClosed: boolean } | undefined; nextCallId: number; release: (() => void) | undefined }>>();

/**
 * The number of channels the connection has (the channels maxMessageBytes() knows), or
 * undefined if it cannot tell (a custom endpoint that does not say).
 */
function channelCount(conn: Connection): number | undefined {
  if (conn.maxMessageBytes(0) === undefined) return undefined;
  let n = 1;
  while (n < 256 && conn.maxMessageBytes(n) !== undefined) n++;
  return n;
}

/**
 * Throws GameUsageError for a channel that is not a channel number, one the connection does not
 * have (sends there would all fail), or one that already has a peer attached.
 */
export function attachRpc<Remote extends RpcMethods<Remote> = UntypedRpc, Local extends RpcMethods<Local> = UntypedRpc>(conn: Connection, options: AttachRpcOptions<Local> = {}): AttachedRpc<Remote, Local> {
  const channel = options.channel ?? 0;
  if (!(Number.isInteger(channel) && channel >= 0 && channel <= 255)) throw new GameUsageError(`channel must be a channel number (an integer in 0..255), got ${String(channel)}`);
  const count = channelCount(conn);
  if (count !== undefined && channel >= count) {
    throw new GameUsageError(`channel ${channel} is not configured on this connection (it has channels 0..${count - 1}): pick one of those, or add it to the channels option of listen() and connect()`);
  }
  let slots = channelsOf.get(conn);
  if (slots === undefined) channelsOf.set(conn, (slots = new Map()));
  let slot = slots.get(channel);
  // A peer closed by its own close() (not detach()) holds nothing any more: its hold goes.
  if (slot?.peer !== undefined && slot.peer.isClosed) slot.release?.();
  if (slot?.peer !== undefined && conn.isOpen) {
    throw new GameUsageError(
      `an RPC peer is already attached to channel ${channel} of connection ${String(conn.id)}: detach() it first (each message on a channel goes to one peer), or attach this one to another channel`,
    );
  }
  const peer = new RpcPeer<Remote, Local>({
    ...options,
    firstCallId: slot?.nextCallId,
    send: (data) => {
      // A closing or ending connection cannot carry it: a call rejects at once with this
      // instead of waiting for its timeout (the peer is closed by "disconnect" soon after).
      if (!conn.isOpen) throw new RpcClosedError("the connection is closing");
      conn.send(data, { channel });
    },
    now: monotonicNow,
  });
  const timer = new ModuleTimer(peer);
  const api: AttachedRpc<Remote, Local> = {
    peer,
    call(method, ...args) {
      const result = peer.call(method, ...args);
      timer.poke();
      return result;
    },
    notify: (method, ...args) => peer.notify(method, ...args),
    detach: () => undefined,
  };
  if (!conn.isOpen) {
    // Attached to a connection that already ended (or is closing): nothing will ever come in,
    // and "disconnect" may be long past. Closed at once, so calls fail now rather than time out.
    timer.stop();
    peer.close("connection ended");
    return api;
  }
  if (slot === undefined) slots.set(channel, (slot = { peer: undefined, nextCallId: peer.nextCallId, release: undefined }));
  slot.peer = peer;
  const held = slot;
  // Listeners off, timer stopped, channel free. Once only: after it the channel may belong to a
  // newer peer, which a late detach() of this one must not touch.
  const release = () => {
    if (held.peer !== peer) return;
    conn.off("message", onMessage);
    conn.off("disconnect", onDisconnect);
    timer.stop();
    held.peer = undefined;
    held.release = undefined;
    held.nextCallId = peer.nextCallId;
  };
  held.release = release;
  const onMessage = (message: Message) => {
    if (message.channel === channel) peer.receive(message.data);
  };
  const onDisconnect = () => {
    peer.close("connection ended");
    release();
  };
  api.detach = () => {
    peer.close("detached");
    release();
  };
  conn.on("message", onMessage);
  conn.on("disconnect", onDisconnect);
  return api;
}
