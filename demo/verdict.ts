/**
 * What the run proved: per-client numbers, totals, and the reasons (if any) it failed.
 * `reliableSettled` is also the drain condition: the demo stops waiting once it holds.
 */
import type { DemoClient } from "./client.js";
import type { DemoServer, ServerPeer } from "./server.js";

export interface ClientReport {
  index: number;
  chatSent: number;
  chatArrived: number;
  chatOutOfOrder: number;
  relaySent: number;
  relayArrived: number;
  relayOutOfOrder: number;
  movesSent: number;
  statesSent: number;
  movesArrived: number;
  snapshots: number;
  stateKeys: number;
  stateConverged: number;
  corrupt: number;
  stale: number;
  rttMs: number;
  lossPercent: number;
  bandwidthBps: number;
  resendsUp: number;
  resendsDown: number;
  disconnect: string | undefined;
  /** Times the server saw this client's connection move to a new address. */
  migrations: number;
}

export interface Totals {
  reliableSent: number;
  reliableArrived: number;
  outOfOrder: number;
  stateKeys: number;
  stateConverged: number;
  corrupt: number;
  stale: number;
}

function convergedKeys(client: DemoClient, peer: ServerPeer | undefined): number {
  let converged = 0;
  for (const [key, state] of client.table) {
    const held = peer?.table.get(key);
    if (held !== undefined && held.version === state.version && held.value === state.value) converged++;
  }
  return converged;
}

export function reportClient(client: DemoClient, server: DemoServer): ClientReport {
  const peer = server.peers.get(client.index);
  const stats = client.readStats();
  return {
    index: client.index,
    chatSent: client.chatsSent,
    chatArrived: peer?.chats ?? 0,
    chatOutOfOrder: peer?.chatOutOfOrder ?? 0,
    relaySent: peer?.relaysSent ?? 0,
    relayArrived: client.relays,
    relayOutOfOrder: client.relayOutOfOrder,
    movesSent: client.movesSent,
    statesSent: client.statesSent,
    movesArrived: peer?.moves ?? 0,
    snapshots: client.snapshots,
    stateKeys: client.table.size,
    stateConverged: convergedKeys(client, peer),
    corrupt: client.corrupt + (peer?.corrupt ?? 0),
    stale: client.snapshotsStale + (peer?.movesStale ?? 0) + (peer?.statesStale ?? 0),
    rttMs: stats?.rttMs ?? Number.NaN,
    lossPercent: (stats?.lossRate ?? Number.NaN) * 100,
    bandwidthBps: stats?.bandwidthEstimateBps ?? Number.NaN,
    resendsUp: stats?.resends ?? 0,
    resendsDown: peer?.lastStats?.resends ?? 0,
    disconnect: client.disconnect ?? peer?.disconnect,
    migrations: peer?.migrations ?? 0,
  };
}

export function totalsOf(reports: readonly ClientReport[], bulkExpected: boolean, bulkVerified: boolean): Totals {
  const t: Totals = { reliableSent: 0, reliableArrived: 0, outOfOrder: 0, stateKeys: 0, stateConverged: 0, corrupt: 0, stale: 0 };
  for (const r of reports) {
    t.reliableSent += r.chatSent + r.relaySent;
    t.reliableArrived += r.chatArrived + r.relayArrived;
    t.outOfOrder += r.chatOutOfOrder + r.relayOutOfOrder;
    t.stateKeys += r.stateKeys;
    t.stateConverged += r.stateConverged;
    t.corrupt += r.corrupt;
    t.stale += r.stale;
  }
  if (bulkExpected) {
    t.reliableSent++;
    if (bulkVerified) t.reliableArrived++;
  }
  return t;
}

/** True once every reliable message sent so far has arrived and every table has converged. */
export function reliableSettled(clients: readonly DemoClient[], server: DemoServer, bulkExpected: boolean): boolean {
  if (bulkExpected && server.peers.get(0)?.bulk === undefined) return false;
  for (const client of clients) {
    const peer = server.peers.get(client.index);
    if (peer === undefined) return false;
    if (peer.chats < client.chatsSent || client.relays < peer.relaysSent) return false;
    if (convergedKeys(client, peer) < client.table.size) return false;
  }
  return true;
}

/** Every reason the run failed; empty when it passed. */
export function failures(
  reports: readonly ClientReport[],
  totals: Totals,
  server: DemoServer,
  bulkExpected: boolean,
  expectedClients: number,
  sendErrors: readonly string[],
  rebound: boolean,
): string[] {
  const reasons: string[] = [];
  if (reports.length < expectedClients) reasons.push(`only ${reports.length} of ${expectedClients} clients connected`);
  for (const r of reports) {
    const who = `client ${r.index}`;
    if (r.chatArrived < r.chatSent) reasons.push(`${who}: ${r.chatSent - r.chatArrived} of ${r.chatSent} chat messages never reached the server`);
    if (r.chatArrived > r.chatSent) reasons.push(`${who}: the server got ${r.chatArrived - r.chatSent} more chat messages than were sent (duplicates)`);
    if (r.relayArrived < r.relaySent) reasons.push(`${who}: ${r.relaySent - r.relayArrived} of ${r.relaySent} relayed chat messages never arrived`);
    if (r.relayArrived > r.relaySent) reasons.push(`${who}: ${r.relayArrived - r.relaySent} relayed chat messages arrived twice`);
    if (r.chatOutOfOrder + r.relayOutOfOrder > 0) reasons.push(`${who}: ${r.chatOutOfOrder + r.relayOutOfOrder} reliable-ordered messages out of order`);
    if (r.stateConverged < r.stateKeys) reasons.push(`${who}: latest-state table not converged (${r.stateConverged}/${r.stateKeys} keys match)`);
    if (r.corrupt > 0) reasons.push(`${who}: ${r.corrupt} payloads failed their self-check`);
    if (r.stale > 0) reasons.push(`${who}: ${r.stale} sequenced/latest-state deliveries older than one already delivered`);
    if (r.disconnect !== undefined) reasons.push(`${who}: disconnected before the end (${r.disconnect})`);
    if (r.movesSent > 0 && r.movesArrived === 0) reasons.push(`${who}: no movement arrived at all`);
    if (rebound && r.disconnect === undefined && r.migrations === 0) reasons.push(`${who}: its connection never moved to the port the NAT rebinding gave it`);
  }
  if (bulkExpected) {
    const bulk = server.peers.get(0)?.bulk;
    if (bulk === undefined) reasons.push("the 1 MiB transfer never completed");
    else if (!bulk.verified) reasons.push(`the 1 MiB transfer arrived corrupted (${bulk.bytes} bytes, SHA-256 mismatch)`);
  }
  if (server.strangers > 0) reasons.push(`${server.strangers} unexpected connections at the server`);
  for (const error of sendErrors) reasons.push(`a send failed: ${error}`);
  if (totals.reliableSent === 0) reasons.push("no reliable message was sent");
  return reasons;
}
