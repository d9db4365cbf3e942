// ackwire itself, through its public API (listen/connect on the runtime this process runs on),
// wrapped as a MessagePair so it runs exactly the drivers the baselines and peers run.
// A = the client Connection, B = the server's Connection for that client.

import type { MessagePair } from "../driver.js";
import { connect, listen, DEFAULT_CHANNELS, type Connection, type Server } from "../../../src/index.js";

const HOST = "127.0.0.1";
/** Any u32 both ends agree on ("E2EB"). */
export const BENCH_PROTOCOL_ID = 0x45324542;

/** Channels of DEFAULT_CHANNELS the benchmark uses. */
export const CHANNEL = {
  reliableOrdered: 0,
  unreliable: 2,
} as const;

export interface AckwireEnds {
  server: Server;
  client: Connection;
  /** The server side of `client`'s connection. */
  serverConn: Connection;
  close(): Promise<void>;
}

export interface AckwireEndsOptions {
  /** Where the client sends: the server itself (default) or a proxy in front of it. */
  via?: (serverPort: number) => Promise<{ host: string; port: number }>;
  mtu?: number;
  connectTimeoutMs?: number;
  /** Congestion controller of both ends (default: the endpoint's default). */
  congestion?: string;
}

/** A server on 127.0.0.1:0 and one client connected to it (directly or through `via`). */
export async function ackwireEnds(opt: AckwireEndsOptions = {}): Promise<AckwireEnds> {
  const common = { protocolId: BENCH_PROTOCOL_ID, channels: DEFAULT_CHANNELS, ...(opt.mtu !== undefined ? { mtu: opt.mtu } : {}), ...(opt.congestion !== undefined ? { congestion: opt.congestion } : {}) };
  const server = await listen({ ...common, port: 0, host: HOST });
  const accepted = new Promise<Connection>((resolve) => server.once("connection", resolve));
  const target = opt.via !== undefined ? await opt.via(server.address.port) : { host: HOST, port: server.address.port };
  let client: Connection;
  try {
    client = await connect(target, { ...common, connectTimeoutMs: opt.connectTimeoutMs ?? 5000 });
  } catch (e) {
    await server.close();
    throw e;
  }
  const serverConn = await accepted;
  return {
    server,
    client,
    serverConn,
    close: async () => {
      await client.close().catch(() => undefined);
      await server.close().catch(() => undefined);
    },
  };
}

/** One channel of an ackwire connection as a MessagePair (both directions on `channel`). */
export async function ackwirePair(channel: number, reliable: boolean): Promise<MessagePair> {
  const ends = await ackwireEnds();
  return pairOn(ends, channel, reliable, () => ends.close());
}

/**
 * `client` and `serverConn` as a MessagePair on `channel` (A = client, B = server side);
 * `close` ends whatever owns them. Sends after close() are dropped: the drivers' callbacks may
 * still fire while the ends shut down.
 */
export function pairOn(ends: { client: Connection; serverConn: Connection }, channel: number, reliable: boolean, close: () => Promise<void>): MessagePair {
  const { client, serverConn } = ends;
  let closing = false;
  const pair: MessagePair = {
    reliable,
    copiesOnSend: true, // Connection.send copies the bytes into the channel's queue
    onA: () => {},
    onB: () => {},
    sendAtoB: (m) => {
      if (!closing) client.send(m, { channel });
    },
    sendBtoA: (m) => {
      if (!closing) serverConn.send(m, { channel });
    },
    // send() schedules one driver service in a microtask, which drains everything queued.
    flush: () => {},
    close: () => {
      closing = true;
      return close();
    },
  };
  client.on("message", (m) => pair.onA(m.data));
  serverConn.on("message", (m) => pair.onB(m.data));
  return pair;
}
