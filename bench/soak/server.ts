/**
 * The soak's game server: it checks every message of every client life as it arrives
 * (checks.ts), and sends each connected life its own streams: a 30 Hz sequenced snapshot, a
 * 10 Hz reliable-ordered stream, and a large reliable-ordered message every 10 s (fragmented).
 * It learns which life a connection is from the handshake's user data (plain) or the connect
 * token's client id (secure).
 */
import type { Connection, Server } from "../../src/index.js";
import { checkArrival, Channel } from "./checks.js";
import type { Failures, LifeLedger } from "./ledger.js";
import { encodeSoak, Stream } from "./payload.js";

/** Ticks (30 Hz) between the server's messages on each stream of a life. */
const ORDERED_EVERY = 3;
const BULK_EVERY = 300;
const BULK_BYTES = 64 * 1024;

/** The life a connection belongs to: its handshake user data, 4 bytes little-endian. */
export function lifeIdOf(connection: Connection): number | undefined {
  const identity = connection.identity;
  if (identity !== undefined) return Number(identity.clientId);
  const u = connection.userData;
  if (u.length !== 4) return undefined;
  return (u[0]! | (u[1]! << 8) | (u[2]! << 16) | (u[3]! << 24)) >>> 0;
}

export function lifeUserData(id: number): Uint8Array {
  return Uint8Array.of(id & 0xff, (id >>> 8) & 0xff, (id >>> 16) & 0xff, id >>> 24);
}

export class SoakServer {
  readonly server: Server;
  /** Connections of lives the soak did not start (must stay 0). */
  strangers = 0;
  readonly #ledgers: ReadonlyMap<number, LifeLedger>;
  readonly #failures: Failures;
  readonly #now: () => number;
  readonly #open = new Map<Connection, LifeLedger>();
  #tick = 0;

  constructor(server: Server, ledgers: ReadonlyMap<number, LifeLedger>, failures: Failures, now: () => number) {
    this.server = server;
    this.#ledgers = ledgers;
    this.#failures = failures;
    this.#now = now;
    server.on("connection", (connection) => this.#onConnection(connection));
  }

  #onConnection(connection: Connection): void {
    const id = lifeIdOf(connection);
    const ledger = id === undefined ? undefined : this.#ledgers.get(id);
    if (ledger === undefined || ledger.serverConnection !== undefined) {
      this.strangers++;
      this.#failures.add(`a connection from ${connection.address} for ${ledger === undefined ? "no life of the soak" : `life ${id}, which already had one`}`);
      void connection.close("kicked");
      return;
    }
    const now = this.#now();
    ledger.serverConnection = connection;
    ledger.upProgressAt = now;
    this.#open.set(connection, ledger);
    connection.on("message", (m) => void checkArrival(ledger, m.channel, true, m.data, this.#now(), this.#failures));
    connection.once("disconnect", (info) => {
      this.#open.delete(connection);
      ledger.serverReason = typeof info.reason === "string" ? info.reason : `app ${info.reason.app}`;
      ledger.serverEndedAt = this.#now();
    });
  }

  /** Connections open now. */
  get open(): number {
    return this.#open.size;
  }

  /** One 30 Hz tick: each connected life that is not ending gets its streams. */
  tick(): void {
    const t = this.#tick++;
    for (const [connection, ledger] of this.#open) {
      if (ledger.leaving || !connection.isOpen) continue;
      const id = ledger.id;
      connection.send(encodeSoak(id, Stream.DownSnapshot, ledger.bump(ledger.sent, Stream.DownSnapshot), 120), { channel: Channel.Sequenced });
      if ((t + id) % ORDERED_EVERY === 0) {
        connection.send(encodeSoak(id, Stream.DownOrdered, ledger.bump(ledger.sent, Stream.DownOrdered), 40 + (t % 160)), { channel: Channel.Ordered });
      }
      if ((t + id * 7) % BULK_EVERY === 0) {
        connection.send(encodeSoak(id, Stream.DownBulk, ledger.bump(ledger.sent, Stream.DownBulk), BULK_BYTES), { channel: Channel.Bulk });
      }
    }
  }

  /**
   * The packet counters of every open connection obey dispatched = delivered + dropped +
   * inFlight; returns how many connections were checked.
   */
  checkCounters(): number {
    let checked = 0;
    for (const [connection, ledger] of this.#open) {
      if (!connection.isOpen) continue;
      const p = connection.stats().packets;
      checked++;
      if (p.dispatched !== p.delivered + p.dropped + p.inFlight) {
        this.#failures.add(`life ${ledger.id}: server packet counters dispatched ${p.dispatched} != delivered ${p.delivered} + dropped ${p.dropped} + in flight ${p.inFlight}`);
      }
    }
    return checked;
  }
}
