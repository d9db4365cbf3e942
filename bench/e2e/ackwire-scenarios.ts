// ackwire's own scenarios, run inside a scenario process (see scenarios.ts):
//   "ackwire": loopback throughput and ping-pong over the public API, same drivers as the
//              baselines (driver.ts), payload verified;
//   "loss":    reliable-ordered delivery through the impairment proxy (a separate Node
//              process, proxy-child.ts) at 1%, 5%, 10% loss and 50 ms RTT: a 30 Hz stream's
//              delivery latency and bulk goodput/latency.

import { errorText, onFreshPair, runPing, runThroughput, scenarioSettings, withTimeout, type MessagePair, type PingResult, type ThroughputResult } from "./driver.js";
import { ackwirePair, BENCH_PROTOCOL_ID, CHANNEL, pairOn } from "./transports/ackwire.js";
import { checkPayload, fillPayload } from "../lib/payload.js";
import { cdfPoints, percentileSorted, round, sortedCopy } from "../lib/stats.js";
import { g, importDynamic, nowMs, sleep } from "../lib/host.js";
import { repoRoot } from "../lib/paths.js";
import { connect, listen, DEFAULT_CHANNELS, type Connection, type Server } from "../../src/index.js";
import { RELIABLE_FLOW } from "./flows.js";

/**
 * Unreliable 100 B messages: ackwire packs about ten per datagram, so the raw baseline's 64
 * messages in flight would be ~6 datagrams; it gets the reliable window instead (1024 messages,
 * ~90 datagrams in flight), acks every 64, and lost windows are written off after 20 ms.
 */
const UNRELIABLE_FLOW = { window: 1024, ackEvery: 64 };

export interface AckwireGroupResult {
  impl: "wasm-or-asm.js";
  api: string;
  unreliableMps100: number;
  reliableOrderedMbps1000: number;
  aggregatedMps100: number;
  pingP50Us: number;
  pingP99Us: number;
  /** Aliases in the baselines' vocabulary, so the charts treat ackwire like any transport. */
  pps100: number;
  mbps1000: number;
  pingCdfUs: number[];
  verified: boolean;
  flow: { reliable: typeof RELIABLE_FLOW; unreliable: typeof UNRELIABLE_FLOW };
  details: {
    unreliable100?: ThroughputResult;
    reliableOrdered1000?: ThroughputResult;
    aggregated100?: ThroughputResult;
    pingReliable?: PingResult;
    pingUnreliable?: PingResult;
  };
  errors?: string[];
}

export async function measureAckwire(quick: boolean): Promise<AckwireGroupResult> {
  const s = scenarioSettings(quick);
  const budget = s.warmupMs + s.durationMs + 5000;
  const errors: string[] = [];
  const attempt = async <T>(what: string, f: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await f();
    } catch (e) {
      errors.push(`${what}: ${errorText(e)}`);
      return undefined;
    }
  };
  const timing = { durationMs: s.durationMs, warmupMs: s.warmupMs };
  const unreliable100 = await attempt("unreliable 100 B", () =>
    onFreshPair(() => ackwirePair(CHANNEL.unreliable, false), (p) => runThroughput(p, { size: 100, ...UNRELIABLE_FLOW, ...timing }), budget, "unreliable 100 B"),
  );
  const reliableOrdered1000 = await attempt("reliable-ordered 1000 B", () =>
    onFreshPair(() => ackwirePair(CHANNEL.reliableOrdered, true), (p) => runThroughput(p, { size: 1000, ...RELIABLE_FLOW, ...timing }), budget, "reliable-ordered 1000 B"),
  );
  const aggregated100 = await attempt("reliable-ordered 100 B", () =>
    onFreshPair(() => ackwirePair(CHANNEL.reliableOrdered, true), (p) => runThroughput(p, { size: 100, ...RELIABLE_FLOW, ...timing }), budget, "reliable-ordered 100 B"),
  );
  const ping = (channel: number, reliable: boolean): Promise<PingResult | undefined> =>
    attempt(`ping ${reliable ? "reliable" : "unreliable"}`, () =>
      onFreshPair(
        () => ackwirePair(channel, reliable),
        (p) => runPing(p, { size: 100, count: s.pingCount, warmup: 200, maxMs: s.pingMaxMs, lossTimeoutMs: reliable ? 2000 : 50 }),
        s.pingMaxMs + 5000,
        "ping",
      ),
    );
  const pingReliable = await ping(CHANNEL.reliableOrdered, true);
  const pingUnreliable = await ping(CHANNEL.unreliable, false);
  const num = (v: number | undefined): number => (v === undefined || !Number.isFinite(v) ? 0 : v);
  const aggregatedMps100 = num(aggregated100?.messagesPerSec);
  const reliableOrderedMbps1000 = num(reliableOrdered1000?.mbPerSec);
  return {
    impl: "wasm-or-asm.js",
    api: "ackwire listen()/connect(), DEFAULT_CHANNELS (0 reliable-ordered, 2 unreliable), mtu 1200 with path MTU discovery up to 1452 (the defaults)",
    unreliableMps100: num(unreliable100?.messagesPerSec),
    reliableOrderedMbps1000,
    aggregatedMps100,
    pingP50Us: num(pingReliable?.p50Us),
    pingP99Us: num(pingReliable?.p99Us),
    pps100: aggregatedMps100,
    mbps1000: reliableOrderedMbps1000,
    pingCdfUs: pingReliable?.cdfUs ?? [],
    verified:
      (unreliable100?.corrupt === 0 && (unreliable100?.delivered ?? 0) > 0) &&
      (reliableOrdered1000?.verified ?? false) &&
      (aggregated100?.verified ?? false) &&
      pingReliable?.corrupt === 0 &&
      pingReliable.lost === 0,
    flow: { reliable: RELIABLE_FLOW, unreliable: UNRELIABLE_FLOW },
    details: { unreliable100, reliableOrdered1000, aggregated100, pingReliable, pingUnreliable },
    ...(errors.length > 0 ? { errors } : {}),
  };
}

// ---- loss: through the impairment proxy -------------------------------------------------

export const LOSS_PERCENTS = [1, 5, 10] as const;
/** One-way delay per direction: RTT 50 ms. */
export const ONE_WAY_MS = 25;
const STREAM_CLIENTS = 8;
const STREAM_HZ = 30;
const STREAM_SIZE = 100;
/**
 * The loss group's channels: the defaults plus channel 8, a reliable-ordered channel with
 * `piggyback: 1` (docs/CHANNELS.md), the setting for a latency-sensitive reliable stream: each
 * datagram that carries the channel's data also carries a copy of its newest unacknowledged
 * message, so a single lost datagram is repaired by the next one (~1 send interval) instead of
 * by loss detection (the next packet's ack: ~1 interval + 1 RTT). Both peers configure it.
 */
const LOSS_CHANNELS = [...DEFAULT_CHANNELS, { mode: "reliable-ordered", piggyback: 1 }] as const;
const PIGGYBACK_STREAM_CHANNEL = 8;

interface Pipe {
  on(ev: "data", fn: (b: Uint8Array) => void): void;
}
interface ProxyProcess {
  stdout: Pipe;
  stderr: Pipe;
  stdin: { end(): void };
  on(ev: "close", fn: (code: number | null) => void): void;
  kill(sig?: string): boolean;
}
interface SpawnModule {
  spawn(cmd: string, args: string[], opts: { stdio: ("pipe" | "ignore")[] }): ProxyProcess;
}

interface RunningProxy {
  port: number;
  /** Ends the proxy process; resolves with its counters. */
  stop(): Promise<unknown>;
}

async function startProxyProcess(nodePath: string, upstreamPort: number, lossPercent: number, seed: number): Promise<RunningProxy> {
  const cp = await importDynamic<SpawnModule>("node:child_process");
  const script = repoRoot() + "dist/bench/e2e/proxy-child.js";
  const child = cp.spawn(nodePath, [script, String(upstreamPort), String(lossPercent), String(ONE_WAY_MS), String(seed), "150"], { stdio: ["pipe", "pipe", "pipe"] });
  const decoder = new g.TextDecoder();
  let out = "";
  let err = "";
  let onLine: (() => void) | undefined;
  let exited = false;
  const closed = new Promise<void>((resolve) => child.on("close", () => ((exited = true), resolve(), onLine?.())));
  child.stdout.on("data", (b) => ((out += decoder.decode(b, { stream: true })), onLine?.()));
  child.stderr.on("data", (b) => (err += decoder.decode(b, { stream: true })));
  const port = await withTimeout(
    new Promise<number>((resolve, reject) => {
      onLine = () => {
        const m = /PROXY_READY (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
        else if (exited) reject(new Error(`proxy process exited: ${err.trim().slice(0, 300)}`));
      };
      onLine();
    }),
    10_000,
    "proxy start",
  );
  return {
    port,
    stop: async () => {
      child.stdin.end();
      await withTimeout(closed, 3000, "proxy stop").catch(() => child.kill("SIGKILL"));
      const m = /PROXY_STATS (.*)/.exec(out);
      return m ? (JSON.parse(m[1]!) as unknown) : null;
    },
  };
}

interface LossLevel {
  lossPercent: number;
  server: Server;
  proxy: RunningProxy;
  /** Client i and the server's connection for it (matched by handshake user data). */
  clients: { client: Connection; serverConn: Connection }[];
}

async function openLevel(nodePath: string, lossPercent: number, clientCount: number): Promise<LossLevel> {
  const common = { protocolId: BENCH_PROTOCOL_ID, channels: LOSS_CHANNELS };
  const server = await listen({ ...common, port: 0, host: "127.0.0.1" });
  const byIndex = new Map<number, Connection>();
  server.on("connection", (c) => byIndex.set(c.userData[0] ?? 255, c));
  const proxy = await startProxyProcess(nodePath, server.address.port, lossPercent, 1000 + lossPercent);
  // Handshake packets go through the lossy link too; connect() resends them itself.
  const conns = await Promise.all(
    Array.from({ length: clientCount }, (_, i) => connect({ host: "127.0.0.1", port: proxy.port }, { ...common, userData: new Uint8Array([i]), connectTimeoutMs: 8000 })),
  );
  for (let t = 0; t < 100 && byIndex.size < clientCount; t++) await sleep(10);
  const clients = conns.map((client, i) => {
    const serverConn = byIndex.get(i);
    if (serverConn === undefined) throw new Error(`server never saw client ${i}`);
    return { client, serverConn };
  });
  return { lossPercent, server, proxy, clients };
}

async function closeLevel(level: LossLevel): Promise<unknown> {
  await Promise.all(level.clients.map((c) => withTimeout(c.client.close(), 3000, "close").catch(() => undefined)));
  await withTimeout(level.server.close(), 3000, "server close").catch(() => undefined);
  return level.proxy.stop();
}

export interface LatencySummary {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  /** p0..p100 of delivery latency (ms), for the CDF chart. */
  cdfMs: number[];
}

function summarize(latencies: number[]): LatencySummary {
  const sorted = sortedCopy(latencies);
  return {
    samples: sorted.length,
    p50Ms: round(percentileSorted(sorted, 50), 2),
    p99Ms: round(percentileSorted(sorted, 99), 2),
    p999Ms: round(percentileSorted(sorted, 99.9), 2),
    maxMs: round(sorted[sorted.length - 1] ?? Number.NaN, 2),
    cdfMs: cdfPoints(sorted),
  };
}

export interface StreamResult extends LatencySummary {
  channel: number;
  clients: number;
  hz: number;
  size: number;
  sent: number;
  delivered: number;
  /** Sent but not delivered by the end of the drain time (must be 0: reliable). */
  undelivered: number;
  corrupt: number;
  outOfOrder: number;
}

/**
 * Every client sends a 100 B reliable-ordered message 30 times a second (client i offset by
 * i/N of a period); the server side records send() -> verified delivery time. After the
 * sending time, up to 3 s for the last resends to land.
 */
async function runStream(level: LossLevel, durationMs: number, channel: number): Promise<StreamResult> {
  const period = 1000 / STREAM_HZ;
  const skipFirst = 5; // the first messages race the connection's first RTT samples
  const latencies: number[] = [];
  let sent = 0;
  let delivered = 0;
  let corrupt = 0;
  let outOfOrder = 0;
  const timers: unknown[] = [];
  const start = nowMs();
  const expected = level.clients.map(() => 0);
  const sentAt = level.clients.map(() => [] as number[]);
  level.clients.forEach(({ client, serverConn }, i) => {
    serverConn.on("message", (m) => {
      const seq = checkPayload(m.data);
      if (seq < 0 || m.data.length !== STREAM_SIZE || m.channel !== channel) {
        corrupt++;
        return;
      }
      if (seq !== expected[i]) outOfOrder++;
      expected[i] = seq + 1;
      delivered++;
      if (seq >= skipFirst) latencies.push(nowMs() - sentAt[i]![seq]!);
    });
    let seq = 0;
    const tick = (): void => {
      const t = nowMs();
      if (t - start >= durationMs) return;
      const buf = new Uint8Array(STREAM_SIZE);
      fillPayload(buf, seq);
      sentAt[i]![seq] = t;
      client.send(buf, { channel });
      seq++;
      sent++;
      // Next send at its slot on the grid, so timer lateness does not accumulate.
      const next = start + (i / level.clients.length) * period + seq * period;
      timers.push(g.setTimeout(tick, Math.max(0, next - nowMs())));
    };
    timers.push(g.setTimeout(tick, (i / level.clients.length) * period));
  });
  await sleep(durationMs + 50);
  for (let t = 0; t < 300 && delivered < sent; t++) await sleep(10);
  for (const t of timers) g.clearTimeout(t);
  return { channel, clients: level.clients.length, hz: STREAM_HZ, size: STREAM_SIZE, sent, delivered, undelivered: sent - delivered, corrupt, outOfOrder, ...summarize(latencies) };
}

export interface BulkResult extends LatencySummary {
  goodputMBps: number;
  messagesPerSec: number;
  verified: boolean;
  window: number;
  ackEvery: number;
}

async function runBulk(level: LossLevel, quick: boolean): Promise<BulkResult> {
  // The level's connections stay open after the run (closeLevel ends them).
  const pair = pairOn(level.clients[level.clients.length - 1]!, CHANNEL.reliableOrdered, true, async () => {});
  const r = await runThroughput(pair, { size: 1000, ...RELIABLE_FLOW, durationMs: quick ? 2000 : 5000, warmupMs: quick ? 500 : 1000, recordLatency: true });
  return {
    goodputMBps: r.mbPerSec,
    messagesPerSec: r.messagesPerSec,
    verified: r.verified,
    window: RELIABLE_FLOW.window,
    ackEvery: RELIABLE_FLOW.ackEvery,
    ...summarize(r.latenciesMs ?? []),
  };
}

export interface LossLevelResult {
  /**
   * The 30 Hz reliable-ordered stream's delivery latency on the channel configured for it
   * (`piggyback: 1`; the goal's figure), and bulk goodput.
   */
  p50Ms: number;
  p99Ms: number;
  goodputMBps: number;
  /** The same stream on a default reliable-ordered channel (no copies): loss detection only. */
  defaultChannelP50Ms?: number;
  defaultChannelP99Ms?: number;
  stream?: StreamResult;
  streamDefault?: StreamResult;
  bulk?: BulkResult;
  /** What the proxy counted (datagrams sent/delivered/lost per direction). */
  proxy?: unknown;
  /** Connection stats of the bulk client at the end (RTT, resends...). */
  bulkClientStats?: unknown;
  errors?: string[];
}

export async function measureLoss(quick: boolean, nodePath: string): Promise<{ link: unknown; levels: Record<string, LossLevelResult> }> {
  const levels: Record<string, LossLevelResult> = {};
  const opened: LossLevel[] = [];
  const errors = new Map<number, string[]>(LOSS_PERCENTS.map((p) => [p, []]));
  // The three levels' streams run at the same time (8 clients x 30 Hz each is light load); the
  // bulk runs go one after another, alone.
  for (const pct of LOSS_PERCENTS) {
    try {
      // Clients 0..7: stream on the default reliable-ordered channel; 8..15: stream on the
      // piggyback channel; the last one: bulk.
      opened.push(await openLevel(nodePath, pct, 2 * STREAM_CLIENTS + 1));
    } catch (e) {
      errors.get(pct)!.push(`setup: ${errorText(e)}`);
    }
  }
  const streamMs = quick ? 4000 : 15_000;
  const streamOn = (level: LossLevel, first: number, channel: number, label: string): Promise<StreamResult | undefined> =>
    runStream({ ...level, clients: level.clients.slice(first, first + STREAM_CLIENTS) }, streamMs, channel).catch((e: unknown) => {
      errors.get(level.lossPercent)!.push(`${label}: ${errorText(e)}`);
      return undefined;
    });
  // Both streams of all three levels run at the same time (48 clients x 30 Hz: light load).
  const [streams, defaultStreams] = await Promise.all([
    Promise.all(opened.map((level) => streamOn(level, STREAM_CLIENTS, PIGGYBACK_STREAM_CHANNEL, "stream"))),
    Promise.all(opened.map((level) => streamOn(level, 0, CHANNEL.reliableOrdered, "default-channel stream"))),
  ]);
  for (let i = 0; i < opened.length; i++) {
    const level = opened[i]!;
    let bulk: BulkResult | undefined;
    try {
      bulk = await withTimeout(runBulk(level, quick), 20_000, "bulk");
    } catch (e) {
      errors.get(level.lossPercent)!.push(`bulk: ${errorText(e)}`);
    }
    let bulkClientStats: unknown;
    try {
      const st = level.clients[level.clients.length - 1]!.client.stats();
      bulkClientStats = { rttMs: st.rttMs, minRttMs: st.minRttMs, lossRate: st.lossRate, resends: st.resends, packets: st.packets, bandwidthEstimateBps: st.bandwidthEstimateBps };
    } catch {
      bulkClientStats = undefined;
    }
    const proxy = await closeLevel(level);
    const stream = streams[i];
    const streamDefault = defaultStreams[i];
    levels[String(level.lossPercent)] = {
      p50Ms: stream?.p50Ms ?? 0,
      p99Ms: stream?.p99Ms ?? 0,
      goodputMBps: bulk?.goodputMBps ?? 0,
      defaultChannelP50Ms: streamDefault?.p50Ms ?? 0,
      defaultChannelP99Ms: streamDefault?.p99Ms ?? 0,
      ...(stream ? { stream } : {}),
      ...(streamDefault ? { streamDefault } : {}),
      ...(bulk ? { bulk } : {}),
      proxy,
      bulkClientStats,
    };
  }
  for (const pct of LOSS_PERCENTS) {
    const errs = errors.get(pct)!;
    if (errs.length > 0) levels[String(pct)] = { ...(levels[String(pct)] ?? { p50Ms: 0, p99Ms: 0, goodputMBps: 0 }), errors: errs };
  }
  return {
    link: { oneWayLatencyMs: ONE_WAY_MS, rttMs: 2 * ONE_WAY_MS, lossBothDirections: true, proxy: "runtimes/node/proxy.ts startProxy in a separate Node process" },
    levels,
  };
}
