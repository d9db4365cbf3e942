/**
 * Binds an RpcPeer to a public-API Connection: messages on `channel` go to the peer, the peer's
 * sends go out on `channel`, call timeouts run on one timer, and the peer closes when the
 * connection ends. Other channels are untouched, so RPC shares a connection with game traffic.
 */
import type { Connection, Message } from "../api/connection.js";
import { monotonicNow } from "../api/host.js";
import { RpcPeer, type CallOptions, type RpcOptions } from "./rpc.js";
import type { Value } from "./codec.js";
import { ModuleTimer } from "./timer.js";

export interface AttachRpcOptions extends Omit<RpcOptions, "send" | "now"> {
  /** The connection channel carrying RPC. Default 0 (reliable-ordered in DEFAULT_CHANNELS). */
  channel?: number;
}

export interface AttachedRpc {
  peer: RpcPeer;
  call(method: string, params?: unknown, options?: CallOptions): Promise<Value>;
  notify(method: string, params?: unknown): void;
  /** Stops listening on the connection and closes the peer (the connection stays open). */
  detach(): void;
}

export function attachRpc(conn: Connection, options: AttachRpcOptions = {}): AttachedRpc {
  const channel = options.channel ?? 0;
  const peer = new RpcPeer({ ...options, send: (data) => {
      // A send racing the connection's end is dropped: the peer is closed by "disconnect".
      if (conn.isOpen) conn.send(data, { channel });
    }, now: monotonicNow });
  const timer = new ModuleTimer(peer);
  const onMessage = (message: Message) => {
    if (message.channel === channel) peer.receive(message.data);
  };
  const detach = () => {
    conn.off("message", onMessage);
    conn.off("disconnect", onDisconnect);
    timer.stop();
    peer.close("detached");
  };
  const onDisconnect = () => {
    conn.off("message", onMessage);
    timer.stop();
    peer.close("connection ended");
  };
  conn.on("message", onMessage);
  conn.on("disconnect", onDisconnect);
  return {
    peer,
    call(method, params, callOptions) {
      const result = peer.call(method, params, callOptions);
      timer.poke();
      return result;
    },
    notify: (method, params) => peer.notify(method, params),
    detach,
  };
}
