/**
 * One demo client: a 30 Hz movement stream, 10 Hz chat, a 16-key entity table published on
 * the latest-state channel, and (client 0) one 1 MiB reliable transfer; it checks the
 * server's snapshots and relayed chat as they arrive.
 */
import type { Connection, ConnectionStats } from "../src/index.js";
import { sha256Bytes } from "./host.js";
import {
  BULK_BYTES,
  Channel,
  STATE_KEYS,
  bulkBody,
  decodeChat,
  decodeSnapshot,
  encodeChat,
  encodeMove,
  encodeState,
  mix,
  stateValue,
  type EntityState,
} from "./payloads.js";

/** Ticks (at 30 Hz) between chat messages and between entity-table updates. */
const CHAT_EVERY = 3;
const STATE_EVERY = 3;
/** Keys changed per entity-table update. */
const STATE_KEYS_PER_UPDATE = 2;
/** Client 0 starts its 1 MiB transfer at this tick (half a second in). */
export const BULK_TICK = 15;

export class DemoClient {
  readonly index: number;
  readonly conn: Connection;
  movesSent = 0;
  chatsSent = 0;
  statesSent = 0;
  snapshots = 0;
  snapshotsStale = 0;
  lastSnapshotTick = -1;
  relays = 0;
  nextRelaySeq = 0;
  relayOutOfOrder = 0;
  /** Per origin client: the next chat sequence expected in the relayed stream. */
  #relayNextFromOrigin = new Map<number, number>();
  corrupt = 0;
  /** The latest value published per key: what the server's table must converge to. */
  readonly table = new Map<number, EntityState>();
  bulk: { sentAtTick: number; receipt: boolean | undefined } | undefined;
  disconnect: string | undefined;
  /** A send that threw (it should not: the demo stays within every channel's limits). */
  sendError: string | undefined;
  /** The last stats read while the connection was open. */
  lastStats: ConnectionStats | undefined;
  #seed: number;

  constructor(index: number, conn: Connection, seed: number) {
    this.index = index;
    this.conn = conn;
    this.#seed = seed;
    conn.on("message", (m) => this.#onMessage(m.channel, m.data));
    conn.on("disconnect", (info) => (this.disconnect = typeof info.reason === "string" ? info.reason : `app ${info.reason.app}`));
  }

  #onMessage(channel: number, data: Uint8Array): void {
    if (channel === Channel.Move) {
      const tick = decodeSnapshot(data);
      if (tick === undefined) return void this.corrupt++;
      if (tick <= this.lastSnapshotTick) this.snapshotsStale++;
      this.lastSnapshotTick = tick;
      this.snapshots++;
      return;
    }
    if (channel === Channel.Chat) {
      const chat = decodeChat(this.#seed, data);
      if (chat === undefined) return void this.corrupt++;
      // Reliable-ordered: the server's relays to us must arrive 0, 1, 2... with no gap, and each
      // origin's messages in the order that origin sent them.
      const fromOrigin = this.#relayNextFromOrigin.get(chat.origin);
      if (chat.relaySeq !== this.nextRelaySeq || (fromOrigin !== undefined && chat.seq !== fromOrigin)) this.relayOutOfOrder++;
      this.nextRelaySeq = chat.relaySeq + 1;
      this.#relayNextFromOrigin.set(chat.origin, chat.seq + 1);
      this.relays++;
      return;
    }
    this.corrupt++;
  }

  /** One 30 Hz tick of traffic. Returns nothing; sends are queued into the connection. */
  tick(tick: number): void {
    if (!this.conn.isOpen) return;
    this.conn.send(encodeMove(this.index, this.movesSent++), { channel: Channel.Move });
    if ((tick + this.index) % CHAT_EVERY === 0) {
      this.conn.send(encodeChat(this.#seed, { origin: this.index, seq: this.chatsSent++, relaySeq: 0 }), { channel: Channel.Chat });
    }
    if ((tick + this.index + 1) % STATE_EVERY === 0) {
      for (let k = 0; k < STATE_KEYS_PER_UPDATE; k++) {
        const key = mix(this.#seed ^ this.index, tick * STATE_KEYS_PER_UPDATE + k) % STATE_KEYS;
        const version = (this.table.get(key)?.version ?? 0) + 1;
        const state: EntityState = { client: this.index, key, version, value: stateValue(this.#seed, this.index, key, version) };
        this.table.set(key, state);
        this.conn.send(encodeState(state), { channel: Channel.State, key });
        this.statesSent++;
      }
    }
    if (this.index === 0 && tick === BULK_TICK) void this.#sendBulk(tick);
    this.readStats();
  }

  async #sendBulk(tick: number): Promise<void> {
    const body = bulkBody(this.#seed, this.index);
    const message = new Uint8Array(BULK_BYTES);
    message.set(body);
    message.set(await sha256Bytes(body), body.length);
    if (!this.conn.isOpen) return;
    this.bulk = { sentAtTick: tick, receipt: undefined };
    const bulk = this.bulk;
    try {
      bulk.receipt = await this.conn.send(message, { channel: Channel.Bulk, receipt: true });
    } catch (error) {
      this.bulk = undefined;
      this.sendError = (error as Error).message;
    }
  }

  /** Refreshes `lastStats` (kept after close, for the summary). */
  readStats(): ConnectionStats | undefined {
    if (this.conn.isOpen) this.lastStats = this.conn.stats();
    return this.lastStats;
  }
}
