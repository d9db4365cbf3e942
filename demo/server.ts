/**
 * The demo's server side: checks every stream a client sends, relays chat to every client,
 * and broadcasts a 30 Hz snapshot of everyone's position.
 */
import type { Connection, ConnectionStats, Server } from "../src/index.js";
import { sha256Bytes } from "./host.js";
import {
  BULK_BYTES,
  Channel,
  decodeChat,
  decodeMove,
  decodeState,
  encodeChat,
  encodeSnapshot,
  type EntityState,
  type Move,
} from "./payloads.js";

/** A spectator's handshake user data (players send their index, 0..63). */
export const SPECTATOR = 0xff;

export interface BulkResult {
  bytes: number;
  verified: boolean;
  /** First 16 hex digits of the SHA-256 the server computed. */
  digest: string;
  arrivedAtMs: number;
}

/** What the server saw from one client. */
export class ServerPeer {
  readonly client: number;
  readonly conn: Connection;
  moves = 0;
  /** Unreliable-sequenced movement older than one already delivered: must never happen. */
  movesStale = 0;
  lastMove: Move | undefined;
  chats = 0;
  nextChatSeq = 0;
  chatOutOfOrder = 0;
  relaysSent = 0;
  states = 0;
  /** LatestState deliveries older than the stored version for the key: must never happen. */
  statesStale = 0;
  readonly table = new Map<number, EntityState>();
  /** Payloads that failed their self-check (any channel). */
  corrupt = 0;
  bulk: BulkResult | undefined;
  disconnect: string | undefined;
  /** Times the connection moved to a new client address (after the proxy's rebinding). */
  migrations = 0;
  /** The server side's stats of this connection, refreshed every tick (kept after close). */
  lastStats: ConnectionStats | undefined;

  constructor(client: number, conn: Connection) {
    this.client = client;
    this.conn = conn;
  }
}

export class DemoServer {
  readonly peers = new Map<number, ServerPeer>();
  /** Connections whose handshake user data was not a valid client index. */
  strangers = 0;
  /** Spectators (the --browser page: user data SPECTATOR): sent the snapshots, not checked as players. */
  readonly spectators = new Set<Connection>();
  #seed: number;
  #tick = 0;
  #startedAt: number;
  #now: () => number;
  #pendingHashes: Promise<void>[] = [];

  constructor(server: Server, seed: number, clients: number, clock: () => number) {
    this.#seed = seed;
    this.#now = clock;
    this.#startedAt = clock();
    server.on("connection", (conn) => {
      const client = conn.userData.length === 1 ? conn.userData[0]! : -1;
      if (client === SPECTATOR) {
        this.spectators.add(conn);
        conn.on("disconnect", () => this.spectators.delete(conn));
        return;
      }
      if (client < 0 || client >= clients || this.peers.has(client)) {
        this.strangers++;
        void conn.close("kicked");
        return;
      }
      const peer = new ServerPeer(client, conn);
      this.peers.set(client, peer);
      conn.on("message", (m) => this.#onMessage(peer, m.channel, m.data, m.key));
      conn.on("disconnect", (info) => (peer.disconnect = typeof info.reason === "string" ? info.reason : `app ${info.reason.app}`));
      conn.on("migrate", () => void peer.migrations++);
    });
  }

  #onMessage(peer: ServerPeer, channel: number, data: Uint8Array, key: number | undefined): void {
    switch (channel) {
      case Channel.Move: {
        const move = decodeMove(data);
        if (move === undefined || move.client !== peer.client) return void peer.corrupt++;
        if (peer.lastMove !== undefined && move.seq <= peer.lastMove.seq) peer.movesStale++;
        peer.lastMove = move;
        peer.moves++;
        return;
      }
      case Channel.Chat: {
        const chat = decodeChat(this.#seed, data);
        if (chat === undefined || chat.origin !== peer.client) return void peer.corrupt++;
        if (chat.seq !== peer.nextChatSeq) peer.chatOutOfOrder++;
        peer.nextChatSeq = chat.seq + 1;
        peer.chats++;
        // Relay to every connected client (the origin included), each with its own sequence.
        for (const to of this.peers.values()) {
          if (!to.conn.isOpen) continue;
          to.conn.send(encodeChat(this.#seed, { origin: chat.origin, seq: chat.seq, relaySeq: to.relaysSent }), { channel: Channel.Chat });
          to.relaysSent++;
        }
        return;
      }
      case Channel.State: {
        const state = decodeState(data);
        if (state === undefined || state.client !== peer.client || state.key !== key) return void peer.corrupt++;
        const held = peer.table.get(state.key);
        if (held !== undefined && state.version <= held.version) peer.statesStale++;
        else peer.table.set(state.key, state);
        peer.states++;
        return;
      }
      case Channel.Bulk: {
        const arrivedAtMs = this.#now() - this.#startedAt;
        // Copy: the view may point into a buffer the engine reuses after this callback.
        const copy = data.slice();
        this.#pendingHashes.push(
          sha256Bytes(copy.subarray(0, copy.length - 32)).then((digest) => {
            const claimed = copy.subarray(copy.length - 32);
            const verified = copy.length === BULK_BYTES && digest.every((b, i) => b === claimed[i]);
            const hex = Array.from(digest.subarray(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
            peer.bulk = { bytes: copy.length, verified, digest: hex, arrivedAtMs };
          }),
        );
        return;
      }
      default:
        peer.corrupt++;
    }
  }

  /** One 30 Hz tick: everyone's latest position to everyone, unreliable-sequenced. */
  tick(): void {
    const positions: Move[] = [];
    for (const peer of this.peers.values()) if (peer.lastMove !== undefined) positions.push(peer.lastMove);
    const snapshot = encodeSnapshot(this.#tick++, positions);
    for (const peer of this.peers.values()) {
      if (!peer.conn.isOpen) continue;
      peer.conn.send(snapshot, { channel: Channel.Move });
      peer.lastStats = peer.conn.stats();
    }
    for (const conn of this.spectators) if (conn.isOpen) conn.send(snapshot, { channel: Channel.Move });
  }

  /** Resolves once every bulk transfer received so far has been hashed. */
  async settled(): Promise<void> {
    await Promise.all(this.#pendingHashes);
  }
}
