/**
 * One client life of the soak: connect (through the impairment proxy), play for a while, and
 * end either gracefully (stop sending, wait until every reliable message of both ends and the
 * latest-state table arrived, then a goodbye the server must see as "normal") or by vanishing
 * (the proxy drops everything of this client from then on, as if its machine lost power: the
 * server must time it out).
 *
 * While it plays, each 30 Hz tick sends a sequenced movement message, and on some ticks a
 * reliable-ordered message (10 Hz), a reliable-unordered one (5 Hz), a latest-state update
 * (10 Hz, 8 keys) and, 1.5 s in and then every 5 s, a large reliable-ordered message (16-256 KiB, fragmented).
 */
import type { Connection } from "../../src/index.js";
import { mix } from "../../demo/payloads.js";
import { checkArrival, Channel } from "./checks.js";
import type { Failures, LifeLedger } from "./ledger.js";
import { encodeSoak, Stream } from "./payload.js";

const ORDERED_EVERY = 3;
const UNORDERED_EVERY = 6;
const STATE_EVERY = 3;
const BULK_EVERY = 150;
/** The first large message leaves 1.5 s into a life, so short lives send one too. */
const BULK_FIRST = 45;
const STATE_KEYS = 8;

export class ClientLife {
  readonly ledger: LifeLedger;
  readonly connection: Connection;
  clientReason: string | undefined;
  readonly #failures: Failures;
  readonly #now: () => number;
  #tick = 0;
  readonly #seed: number;

  constructor(ledger: LifeLedger, connection: Connection, failures: Failures, now: () => number, seed: number) {
    this.ledger = ledger;
    this.connection = connection;
    this.#failures = failures;
    this.#now = now;
    this.#seed = seed;
    ledger.downProgressAt = now();
    connection.on("message", (m) => void checkArrival(ledger, m.channel, false, m.data, this.#now(), this.#failures));
    connection.once("disconnect", (info) => (this.clientReason = typeof info.reason === "string" ? info.reason : `app ${info.reason.app}`));
  }

  /** One 30 Hz tick of this life's traffic (nothing once it is ending). */
  tick(): void {
    const { ledger, connection } = this;
    if (ledger.leaving || !connection.isOpen) return;
    const t = this.#tick++;
    const id = ledger.id;
    connection.send(encodeSoak(id, Stream.UpMove, ledger.bump(ledger.sent, Stream.UpMove), 24), { channel: Channel.Sequenced });
    if (t % ORDERED_EVERY === 0) {
      connection.send(encodeSoak(id, Stream.UpOrdered, ledger.bump(ledger.sent, Stream.UpOrdered), 16 + (mix(id, t) % 300)), { channel: Channel.Ordered });
    }
    if (t % UNORDERED_EVERY === 1) {
      connection.send(encodeSoak(id, Stream.UpUnordered, ledger.bump(ledger.sent, Stream.UpUnordered), 16 + (mix(id, t) % 100)), { channel: Channel.Unordered });
    }
    if (t % STATE_EVERY === 2) {
      const key = mix(this.#seed ^ id, t) % STATE_KEYS;
      const version = (ledger.clientState.get(key) ?? 0) + 1;
      ledger.clientState.set(key, version);
      ledger.bump(ledger.sent, Stream.UpState);
      connection.send(encodeSoak(id, Stream.UpState, version, 20 + key, key), { channel: Channel.State, key });
    }
    if (t % BULK_EVERY === BULK_FIRST) {
      const bytes = 16 * 1024 + (mix(id, t) % (240 * 1024));
      connection.send(encodeSoak(id, Stream.UpBulk, ledger.bump(ledger.sent, Stream.UpBulk), bytes), { channel: Channel.Bulk });
    }
  }
}
