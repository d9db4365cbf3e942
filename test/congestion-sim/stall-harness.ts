/**
 * A bulk reliable-ordered transfer between two real Endpoints on the simulator, shaped like the
 * end-to-end benchmark's "loss" group (bench/e2e/ackwire-scenarios.ts runBulk): the client sends
 * 1000 B messages on channel 0 (reliable-ordered), never more than `appWindow` beyond the
 * receiver's application-level acks, which the server sends every 64 messages (8 B each) on the
 * same channel. Links: 25 ms each way, random loss each way, an optional bottleneck.
 *
 * Stalls: `StallingNode` stands for a process that runs nothing for a while (GC, JIT, a late
 * timer; both ends and the socket reads share one thread in the benchmark): datagrams that
 * arrive meanwhile wait in the socket and are read together when the stall ends; no timer fires,
 * nothing is sent and the application sees no event until then.
 */
import { Pair } from "../../src/sim/network.js";
import { Endpoint } from "../../src/session/endpoint.js";
import type { Address, SansIoNode, Transmit } from "../../src/session/sans-io.js";
import type { EndpointEvent } from "../../src/session/types.js";
import type { LinkConfig } from "../../src/sim/link.js";
import { ACK_SIZE, ACK_TAG } from "../../bench/e2e/driver.js";

/** What the runtime driver hands to the endpoint between two services (src/api/driver.ts). */
const DATAGRAMS_PER_SERVICE = 32;

export class StallingNode<E> implements SansIoNode<E> {
  private readonly stalls: { start: number; end: number }[] = [];
  /** Datagrams that arrived during a stall, read when it ends. */
  private readonly waiting: { from: Address; bytes: Uint8Array }[] = [];
  /** Transmits produced while the waiting datagrams were read (sent with the next poll). */
  private readonly outgoing: Transmit[] = [];

  constructor(
    readonly inner: SansIoNode<E>,
    private readonly clock: () => number,
  ) {}

  /** The node processes nothing in [start, end). */
  stall(start: number, end: number): void {
    this.stalls.push({ start, end });
  }

  /** End of the stall covering `t`, or undefined. */
  private stallEnd(t: number): number | undefined {
    for (const s of this.stalls) if (t >= s.start && t < s.end) return s.end;
    return undefined;
  }

  /**
   * The datagrams that waited, read as the runtime's driver reads a burst: at most
   * DATAGRAMS_PER_SERVICE, then a service (timers, transmits), and so on (src/api/driver.ts).
   */
  private release(now: number): void {
    let n = 0;
    while (this.waiting.length > 0) {
      const d = this.waiting.shift()!;
      this.inner.handleDatagram(now, d.from, d.bytes);
      if (++n % DATAGRAMS_PER_SERVICE === 0 || this.waiting.length === 0) {
        const due = this.inner.pollTimeout();
        if (due !== undefined && due <= now) this.inner.handleTimeout(now);
        for (let tx = this.inner.pollTransmit(now); tx !== undefined; tx = this.inner.pollTransmit(now)) this.outgoing.push({ to: tx.to, bytes: tx.bytes.slice() });
      }
    }
  }

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    if (this.stallEnd(now) !== undefined) {
      this.waiting.push({ from, bytes: bytes.slice() });
      return;
    }
    this.release(now);
    this.inner.handleDatagram(now, from, bytes);
  }

  handleTimeout(now: number): void {
    if (this.stallEnd(now) !== undefined) return;
    this.release(now);
    const due = this.inner.pollTimeout();
    if (due !== undefined && due <= now) this.inner.handleTimeout(now);
  }

  pollTimeout(): number | undefined {
    const now = this.clock();
    const current = this.stallEnd(now);
    if (current !== undefined && this.waiting.length > 0) return current;
    const t = this.inner.pollTimeout();
    if (t === undefined || Number.isNaN(t)) return t;
    // A timer due inside a stall fires when the stall ends.
    return this.stallEnd(Math.max(t, now)) ?? t;
  }

  pollTransmit(now: number): Transmit | undefined {
    if (this.stallEnd(now) !== undefined) return undefined;
    return this.outgoing.shift() ?? this.inner.pollTransmit(now);
  }

  pollEvent(): E | undefined {
    return this.stallEnd(this.clock()) === undefined ? this.inner.pollEvent() : undefined;
  }
}

export interface StallBulkOptions {
  seed: number;
  /** Random loss per datagram, each way. */
  lossRate: number;
  /** One-way delay (default 25 ms: RTT 50 ms). */
  oneWayMs?: number;
  /** Bottleneck each way (default none, as the benchmark's proxy). */
  bandwidthBps?: number;
  queuePackets?: number;
  /** Connected and idle this long before the bulk starts (the benchmark: its 4 s stream phase). */
  idleMs?: number;
  /** Bulk duration measured from its start. */
  durationMs: number;
  /** Stalls, relative to the bulk start (negative = during the idle phase). */
  senderStalls?: [number, number][];
  receiverStalls?: [number, number][];
  /** Messages in flight beyond the receiver's application acks (benchmark: 1024). */
  appWindow?: number;
  /** Sample the sender's controller this often (ms); 0 = not. */
  traceEveryMs?: number;
  /**
   * The bottleneck's rate changes during the bulk: [time relative to the bulk start, bit/s],
   * both directions, queue kept (needs bandwidthBps). The link's own config is changed in place.
   */
  bandwidthSteps?: [number, number][];
  /** The one-way delay changes during the bulk: [time relative to the bulk start, ms], both
   *  directions. */
  latencySteps?: [number, number][];
  /**
   * false: the receiver sends no application acks (so no data back, only the session's pure
   * acks, hence no receive-time reports); the sender keeps `appWindow` messages beyond what
   * the receiver got (read directly from the receiver: a simulation shortcut). Default true.
   */
  receiverAcks?: boolean;
}

export interface ControllerView {
  state: string;
  filledPipe: boolean;
  btlBwMbps: number;
  lossStats: { congestive: number; ignored: number; reactions: number; spurious: number; undone: number };
}

export interface StallBulkResult {
  /** Application bytes the receiver got per second of bulk, over the whole run and per 500 ms. */
  goodputMBps: number;
  goodputPerHalfSecondMBps: number[];
  dispatched: number;
  /** Datagrams the client -> server bottleneck dropped because its queue was full. */
  tailDropped: number;
  bandwidthEstimateMbps: number;
  controller: ControllerView;
  /** Controller state when the bulk started. */
  atStart: ControllerView;
  trace: { t: number; view: ControllerView; inFlight: number }[];
  /**
   * Startup's end: time relative to the bulk start, btlBw then, and what ended it: a loss
   * reaction, the bandwidth plateau (seen after an ack), or something before the bulk started.
   * Undefined: still in Startup.
   */
  startupExit?: { t: number; btlBwMbps: number; by: "loss" | "plateau" | "before-bulk" };
}

const PROTOCOL_ID = 0x5e551011;
const MESSAGE_BYTES = 1000;
const ACK_EVERY = 64;

interface ControllerInternals {
  state: string;
  filledPipe: boolean;
  btlBw(): number;
  lossStats: ControllerView["lossStats"];
  onLoss(now: number, p: unknown, inFlight: number): void;
  onAcks(now: number, acks: unknown, inFlight: number): void;
}

/** The default controller of a connection (the endpoint's private state: for diagnostics). */
export function controllerOf(ep: Endpoint, connection: number): ControllerInternals {
  const conn = (ep as unknown as { byId: Map<number, { cc: ControllerInternals }> }).byId.get(connection);
  if (conn === undefined) throw new Error(`no connection ${connection}`);
  return conn.cc;
}

export function viewOf(cc: ControllerInternals): ControllerView {
  return { state: cc.state, filledPipe: cc.filledPipe, btlBwMbps: Number(((cc.btlBw() * 8000) / 1e6).toFixed(3)), lossStats: { ...cc.lossStats } };
}

export function runStallBulk(o: StallBulkOptions): StallBulkResult {
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: o.seed * 2 + 1, engine: "ts" });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: o.seed * 2 + 2, engine: "ts" });
  let clock = (): number => 0;
  const serverNode = new StallingNode<EndpointEvent>(server, () => clock());
  const clientNode = new StallingNode<EndpointEvent>(client, () => clock());
  const handlers: ((address: Address, e: EndpointEvent) => void)[] = [];
  const link: LinkConfig = {
    latencyMs: o.oneWayMs ?? 25,
    lossRate: o.lossRate,
    ...(o.bandwidthBps ? { bandwidthBps: o.bandwidthBps, queuePackets: o.queuePackets ?? 1000, overheadBytes: 28 } : {}),
    seed: `stall-bulk:${o.seed}`,
  };
  const pair = new Pair<StallingNode<EndpointEvent>, StallingNode<EndpointEvent>, EndpointEvent>(serverNode, clientNode, {
    seed: o.seed,
    link,
    onEvent: (a, e) => handlers.forEach((h) => h(a, e)),
  });
  clock = () => pair.now;

  let serverConn = -1;
  let clientConn = -1;
  handlers.push((a, e) => {
    if (e.type !== "connect") return;
    if (a === pair.serverAddress) serverConn = e.connection;
    else clientConn = e.connection;
  });
  client.connect(pair.now, pair.serverAddress);
  while ((serverConn < 0 || clientConn < 0) && pair.now < 10_000) pair.drive({ maxTimeMs: 5 });
  if (serverConn < 0 || clientConn < 0) throw new Error(`handshake did not finish (seed ${o.seed})`);

  const t0 = pair.now + (o.idleMs ?? 0);
  for (const [a, b] of o.senderStalls ?? []) clientNode.stall(t0 + a, t0 + b);
  for (const [a, b] of o.receiverStalls ?? []) serverNode.stall(t0 + a, t0 + b);
  pair.drive({ until: t0 });

  const cc = controllerOf(client, clientConn);
  const atStart = viewOf(cc);
  let startupExit: StallBulkResult["startupExit"];
  const watch = (by: "loss" | "plateau") => {
    if (startupExit === undefined && cc.filledPipe) startupExit = { t: pair.now - t0, btlBwMbps: viewOf(cc).btlBwMbps, by };
  };
  if (cc.filledPipe) startupExit = { t: 0, btlBwMbps: atStart.btlBwMbps, by: "before-bulk" };
  const onLoss = cc.onLoss.bind(cc);
  const onAcks = cc.onAcks.bind(cc);
  cc.onLoss = (now, p, f) => {
    onLoss(now, p, f);
    watch("loss");
  };
  cc.onAcks = (now, acks, f) => {
    onAcks(now, acks, f);
    watch("plateau");
  };

  const appWindow = o.appWindow ?? 1024;
  const payload = new Uint8Array(MESSAGE_BYTES);
  const ack = new Uint8Array(ACK_SIZE);
  let sent = 0;
  let acked = 0;
  let received = 0;
  let receivedBytes = 0;
  let sinceAck = 0;
  const pump = (): void => {
    while (sent - acked < appWindow) {
      new DataView(payload.buffer).setUint32(0, sent, true);
      client.send(clientConn, payload, { channel: 0 });
      sent++;
    }
  };
  handlers.push((a, e) => {
    if (e.type !== "message") return;
    if (a === pair.serverAddress && e.connection === serverConn) {
      received++;
      receivedBytes += e.data.length;
      if (o.receiverAcks === false) {
        acked = received;
        pump();
      } else if (++sinceAck >= ACK_EVERY) {
        sinceAck = 0;
        const v = new DataView(ack.buffer);
        v.setUint32(0, ACK_TAG, true);
        v.setUint32(4, received, true);
        server.send(serverConn, ack, { channel: 0 });
      }
    } else if (a === pair.clientAddress && e.connection === clientConn && e.data.length === ACK_SIZE) {
      acked = Math.max(acked, new DataView(e.data.buffer, e.data.byteOffset, 8).getUint32(4, true));
      pump();
    }
  });
  client.handleTimeout(pair.now);
  pump();

  const perHalf: number[] = [];
  const trace: StallBulkResult["trace"] = [];
  const every = o.traceEveryMs ?? 0;
  let lastBytes = 0;
  const steps: [number, keyof LinkConfig, number][] = [
    ...(o.bandwidthSteps ?? []).map(([at, bps]): [number, keyof LinkConfig, number] => [at, "bandwidthBps", bps]),
    ...(o.latencySteps ?? []).map(([at, ms]): [number, keyof LinkConfig, number] => [at, "latencyMs", ms]),
  ].sort((a, b) => a[0] - b[0]);
  for (let t = 0; t < o.durationMs; ) {
    let step = every > 0 ? Math.min(every, 500 - (t % 500)) : 500 - (t % 500);
    while (steps.length > 0 && steps[0]![0] <= t) {
      const [, field, value] = steps.shift()!;
      for (const l of [pair.toServer, pair.toClient]) (l.config as Record<string, unknown>)[field] = value;
    }
    if (steps.length > 0) step = Math.min(step, steps[0]![0] - t);
    t += step;
    pair.drive({ until: t0 + t });
    if (every > 0 && t % every === 0) trace.push({ t, view: viewOf(cc), inFlight: client.stats(clientConn).packets.inFlight });
    if (t % 500 === 0) {
      perHalf.push(Number(((receivedBytes - lastBytes) / 500 / 1000).toFixed(3)));
      lastBytes = receivedBytes;
    }
  }
  const stats = client.stats(clientConn);
  return {
    goodputMBps: Number((receivedBytes / o.durationMs / 1000).toFixed(3)),
    goodputPerHalfSecondMBps: perHalf,
    dispatched: stats.packets.dispatched,
    tailDropped: pair.toServer.stats.tailDropped,
    bandwidthEstimateMbps: Number((stats.bandwidthEstimateBps / 1e6).toFixed(3)),
    controller: viewOf(cc),
    atStart,
    trace,
    startupExit,
  };
}
