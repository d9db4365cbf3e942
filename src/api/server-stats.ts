/**
 * `server.stats()`: one object of server-wide figures, from the driver's, the socket's and the
 * session endpoint's counters (since listen()) and the open connections' stats, summed.
 */
import type { Connection } from "./connection.js";

export interface ServerStats {
  /** Connections open now (clients' and the server's own connect()s), closing ones included. */
  connections: number;
  // ---- since listen() ----
  datagramsIn: number;
  datagramsOut: number;
  /** Datagram bytes received and sent (undefined with a custom `createEndpoint` that keeps none). */
  bytesIn: number | undefined;
  bytesOut: number | undefined;
  /** Datagrams and frames the session dropped, every reason summed (see `dropsByReason`). */
  drops: number;
  /** The drops by reason (server.counters().session.drops); undefined with a custom endpoint. */
  dropsByReason: Readonly<Record<string, number>> | undefined;
  /** Sends the OS refused, and receive errors. */
  sendFailures: number;
  receiveErrors: number;
  // ---- the connections open now, summed ----
  /** Frames resent after a loss. */
  resends: number;
  /** Packets sent, given up as lost, and in flight (ConnectionStats.packets). */
  packetsSent: number;
  packetsLost: number;
  packetsInFlight: number;
  /** Messages sent and received, every channel summed. */
  messagesSent: number;
  messagesReceived: number;
  /** Application bytes held to send (back-pressure across the server). */
  queuedBytes: number;
  /** Unreliable messages dropped unsent after their channel's maxQueueMs. */
  messagesExpired: number;
  /** Round-trip time over the connections that have one: mean and largest (0 with none). */
  meanRttMs: number;
  maxRttMs: number;
}

/** What serverStats() reads of the server (its counters() result, in part). */
export interface ServerCounterSource {
  datagramsIn: number;
  datagramsOut: number;
  sendFailures: number;
  receiveErrors: number;
  session?: { bytesReceived: number; bytesSent: number; drops: Readonly<Record<string, number>> };
}

export function serverStats(counters: ServerCounterSource, connections: Iterable<Connection>): ServerStats {
  const session = counters.session;
  let drops = 0;
  if (session !== undefined) for (const name in session.drops) drops += session.drops[name]!;
  const s: ServerStats = {
    connections: 0,
    datagramsIn: counters.datagramsIn,
    datagramsOut: counters.datagramsOut,
    bytesIn: session?.bytesReceived,
    bytesOut: session?.bytesSent,
    drops,
    dropsByReason: session?.drops,
    sendFailures: counters.sendFailures,
    receiveErrors: counters.receiveErrors,
    resends: 0,
    packetsSent: 0,
    packetsLost: 0,
    packetsInFlight: 0,
    messagesSent: 0,
    messagesReceived: 0,
    queuedBytes: 0,
    messagesExpired: 0,
    meanRttMs: 0,
    maxRttMs: 0,
  };
  let rttSum = 0;
  let rttCount = 0;
  for (const connection of connections) {
    s.connections++;
    let c;
    try {
      c = connection.stats();
    } catch {
      continue; // ended meanwhile: its "disconnect" is on its way
    }
    s.resends += c.resends;
    s.packetsSent += c.packets.dispatched;
    s.packetsLost += c.packets.dropped;
    s.packetsInFlight += c.packets.inFlight;
    for (const n of c.messagesSent) s.messagesSent += n;
    for (const n of c.messagesReceived) s.messagesReceived += n;
    s.queuedBytes += c.queuedBytes;
    s.messagesExpired += c.messagesExpired;
    if (c.rttMs >= 0) {
      rttSum += c.rttMs;
      rttCount++;
      if (c.rttMs > s.maxRttMs) s.maxRttMs = c.rttMs;
    }
  }
  if (rttCount > 0) s.meanRttMs = rttSum / rttCount;
  return s;
}
