/**
 * bench:core's client side: the 1,000 client endpoints and the simulated network between them
 * and the server (fixed latency, independent seeded loss, one bucket per millisecond). None of
 * this is timed. It runs in a process of its own (client-process.ts) so that its heap, its
 * garbage collections and its cache footprint do not land in the server's measurement — as on
 * a real server, whose clients are other machines; `--in-process` runs it beside the server.
 *
 * The order of work per millisecond is fixed (server turn, then the server's datagrams enter
 * the network, then the clients' turns), so one seed gives the same run in both set-ups.
 */
import { Endpoint } from "../../src/session/endpoint.js";
import {
  BatchWriter,
  CONNECTIONS,
  LATENCY_MS,
  LOSS,
  MESSAGE_BYTES,
  SEND_PERIOD_MS,
  SERVER,
  clientAddress,
  clientConfig,
  readBatch,
  type ScenarioOptions,
} from "./scenario.js";

interface Flight {
  to: number; // -1 = server, else client index
  from: number; // -1 = server, else client index
  bytes: Uint8Array;
}

const RING_MS = 64;

export interface ClientStats {
  clientMessagesIn: number;
  sentDatagrams: number;
  lostDatagrams: number;
}

export class ClientSide {
  private rng = 0x2545f491;
  private readonly buckets: Flight[][] = Array.from({ length: RING_MS }, () => []);
  private readonly clients: Endpoint[] = [];
  private readonly clientConn: number[] = new Array<number>(CONNECTIONS).fill(-1);
  private readonly message = new Uint8Array(MESSAGE_BYTES).fill(7);
  private readonly toServer = new BatchWriter();
  /** The clients' deliveries of each opened bucket, by millisecond (ring). */
  private readonly clientBound: (Map<number, Flight[]> | undefined)[] = new Array(RING_MS);
  /** The last millisecond whose bucket was opened, and the last whose client turns ran. */
  private opened = -1;
  private ran = -1;
  private readonly stats: ClientStats = { clientMessagesIn: 0, sentDatagrams: 0, lostDatagrams: 0 };

  constructor(options: ScenarioOptions) {
    for (let i = 0; i < CONNECTIONS; i++) this.clients.push(new Endpoint(clientConfig(options, i)));
  }

  connectAll(now: number): void {
    for (const c of this.clients) c.connect(now, SERVER);
  }

  /** Every client has its connect event (and no disconnect since). */
  allConnected(): boolean {
    return !this.clientConn.some((c) => c < 0);
  }

  counters(): ClientStats {
    return { ...this.stats };
  }

  /** Resets the datagram counters (the traffic phase counts its own). */
  resetDatagramCounts(): void {
    this.stats.sentDatagrams = 0;
    this.stats.lostDatagrams = 0;
  }

  /**
   * Opens the buckets of the milliseconds after the last opened, through `last`: each is split
   * into the server's deliveries (returned packed, by sending client, one batch per millisecond)
   * and the clients' (kept for runClients). A bucket is complete once the millisecond
   * LATENCY_MS before it has run, so `last` may be at most LATENCY_MS past the last run: the
   * server may work that far ahead of the clients, and the clients that far ahead of it.
   */
  openThrough(last: number): Uint8Array[] {
    if (last > this.ran + LATENCY_MS) throw new Error(`bench:core clients: bucket ${last} is not complete (ran through ${this.ran})`);
    const out: Uint8Array[] = [];
    for (let now = this.opened + 1; now <= last; now++) {
      const bucket = this.buckets[now % RING_MS];
      this.buckets[now % RING_MS] = [];
      const toClients = new Map<number, Flight[]>();
      for (const f of bucket) {
        if (f.to < 0) this.toServer.add(f.from, f.bytes);
        else {
          const list = toClients.get(f.to);
          if (list === undefined) toClients.set(f.to, [f]);
          else list.push(f);
        }
      }
      this.clientBound[now % RING_MS] = toClients;
      out.push(this.toServer.take());
    }
    this.opened = Math.max(this.opened, last);
    return out;
  }

  /** The server's datagrams of millisecond `now` (packed, by receiving client) enter the network. */
  fromServer(now: number, batch: Uint8Array): void {
    readBatch(batch, (client, bytes) => this.transmit(now, client, -1, bytes));
  }

  /** Every client's turn of millisecond `now` (its bucket opened, the one before it run). */
  runClients(now: number, tick: number, appSends: boolean): void {
    if (now > this.opened || now !== this.ran + 1) throw new Error(`bench:core clients: millisecond ${now} out of order`);
    const toClients = this.clientBound[now % RING_MS]!;
    this.clientBound[now % RING_MS] = undefined;
    for (let i = 0; i < CONNECTIONS; i++) this.clientTurn(now, i, toClients.get(i), appSends, tick);
    this.ran = now;
  }

  private random(): number {
    let r = this.rng;
    r ^= r << 13;
    r ^= r >>> 17;
    r ^= r << 5;
    this.rng = r;
    return (r >>> 0) / 4294967296;
  }

  private transmit(now: number, to: number, from: number, bytes: Uint8Array): void {
    this.stats.sentDatagrams++;
    if (this.random() < LOSS) {
      this.stats.lostDatagrams++;
      return;
    }
    this.buckets[(now + LATENCY_MS) % RING_MS].push({ to, from, bytes: bytes.slice() });
  }

  private clientTurn(now: number, i: number, deliveries: Flight[] | undefined, appSends: boolean, tick: number): void {
    const c = this.clients[i];
    if (deliveries !== undefined) for (const f of deliveries) c.handleDatagram(now, SERVER, f.bytes);
    const due = c.pollTimeout();
    if (due !== undefined && due <= now) c.handleTimeout(now);
    else if (deliveries === undefined && !appSends) return;
    for (let ev = c.pollEvent(); ev !== undefined; ev = c.pollEvent()) {
      if (ev.type === "connect") this.clientConn[i] = ev.connection;
      else if (ev.type === "message") this.stats.clientMessagesIn++;
      else if (ev.type === "disconnect") this.clientConn[i] = -1;
    }
    const conn = this.clientConn[i];
    if (appSends && conn >= 0 && (tick + i) % SEND_PERIOD_MS === 0) c.send(conn, this.message, { channel: 0 });
    for (let tx = c.pollTransmit(now); tx !== undefined; tx = c.pollTransmit(now)) this.transmit(now, -1, i, tx.bytes);
  }
}

/** A client address's index (the server's transmit names its peer by address). */
export function clientIndexMap(): Map<string, number> {
  const m = new Map<string, number>();
  for (let i = 0; i < CONNECTIONS; i++) m.set(clientAddress(i), i);
  return m;
}

/**
 * The requests the server process makes of the client side (over IPC, structured clone, when
 * the clients run in their own process):
 *   {type: "start", options}                  -> {} (clients created, connect() called at 0)
 *   {type: "run", now, tick, count, appSends, fromServer, openThrough}
 *       -> RunReply: for each of the `count` milliseconds from `now` (app ticks from `tick`) in
 *          order, the server's datagrams of that millisecond (fromServer[k]) enter the network,
 *          then the clients' turns run; then the buckets through `openThrough` are opened.
 *   {type: "reset"} (the traffic phase starts)  -> {}
 *   {type: "stats"}                             -> ClientStats
 */
export type ClientRequest =
  | { type: "start"; options: ScenarioOptions }
  | { type: "run"; now: number; tick: number; count: number; appSends: boolean; fromServer: Uint8Array[]; openThrough: number }
  | { type: "reset" }
  | { type: "stats" };

export interface RunReply {
  /** The server's deliveries of each newly opened millisecond, in order, packed by sending client. */
  serverBound: Uint8Array[];
  allConnected: boolean;
}

/** Answers ClientRequests, holding the ClientSide that "start" creates. */
export class ClientHost {
  private side: ClientSide | undefined;

  handle(m: ClientRequest): RunReply | ClientStats | Record<string, never> {
    if (m.type === "start") {
      this.side = new ClientSide(m.options);
      this.side.connectAll(0);
      return {};
    }
    const side = this.side;
    if (side === undefined) throw new Error(`bench:core clients: "${m.type}" before "start"`);
    switch (m.type) {
      case "run":
        for (let k = 0; k < m.count; k++) {
          side.fromServer(m.now + k, m.fromServer[k]!);
          side.runClients(m.now + k, m.tick + k, m.appSends);
        }
        return { serverBound: side.openThrough(m.openThrough), allConnected: side.allConnected() };
      case "reset":
        side.resetDatagramCounts();
        return {};
      case "stats":
        return side.counters();
    }
  }
}
