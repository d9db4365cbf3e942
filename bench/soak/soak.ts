/**
 * The soak: a server and client lives that come and go on loopback through the impairment
 * proxy (loss, delay, jitter that reorders, duplicates, flipped bits, NAT rebindings), for
 * minutes or hours, on Node, Bun or Deno. What it checks, all the way through:
 * - every message, at every arrival, against its delivery mode's promise (checks.ts);
 * - every graceful life: all its reliable messages (both ways) and its latest-state table
 *   arrive before the goodbye, and the server sees the goodbye as "normal";
 * - every vanished life: the server times it out;
 * - no reliable stream of a playing life stalls for STALL_MS;
 * - the server's packet counters add up, and it holds no connection once every life ended;
 * - memory and open file descriptors do not grow: in a run of 2 minutes or more, the median
 *   of the last third of the samples (after a forced GC where the runtime allows one) against
 *   the middle third's; and at two quiet points, a quarter into the run and at the end, when
 *   every life has ended and none plays, the heap of the second against the first.
 * Prints a SOAK_SAMPLE line per sample and one SOAK_RESULT line; exit code 0 only if nothing
 * failed. `--help` lists the flags.
 */
import { connect, createConnectToken, detectRuntime, generateServerKey, listen, type Connection } from "../../src/index.js";
import { Rng } from "../../src/sim/rng.js";
import { withTimeout } from "../../demo/host.js";
import { DemoProxy, runtimeAdapter } from "../../demo/proxy.js";
import { g, importDynamic, nowMs, runtimeName, runtimeVersion, scriptArgs, sleep } from "../lib/host.js";
import { median } from "../lib/stats.js";
import { parseSoakArgs, SOAK_HELP, SoakUsageError, type SoakOptions } from "./args.js";
import { ClientLife } from "./client.js";
import { Failures, LifeLedger, STREAM_NAMES } from "./ledger.js";
import { Stream, type StreamId } from "./payload.js";
import { lifeUserData, SoakServer } from "./server.js";

const PROTOCOL_ID = 0x50a4_0001;
const TICK_HZ = 30;
/** A reliable stream of a playing life with nothing new for this long has stalled. */
const STALL_MS = 10_000;
const CONNECT_TIMEOUT_MS = 10_000;
const CLOSE_BUDGET_MS = 8_000;
/** A graceful life's reliable messages must all arrive within this after it stops sending. */
function drainBudgetMs(o: SoakOptions): number {
  return 20_000 + 20 * (o.rttMs + o.jitterMs);
}
/** Runs shorter than this report memory but are not judged on it (too few samples). */
const MEMORY_JUDGED_FROM_S = 120;

interface Sample {
  t: number;
  heapUsedMB: number;
  rssMB: number;
  fds: number | undefined;
  lives: number;
  serverConnections: number;
  livesEnded: number;
  failures: number;
}

interface HostExtras {
  gc?: () => void;
  Bun?: { gc(force: boolean): void };
  process?: { memoryUsage(): { heapUsed: number; rss: number }; exit(code?: number): never; stdout: { write(s: string): boolean } };
}
const host = globalThis as unknown as HostExtras;

function collectGarbage(): boolean {
  if (host.gc !== undefined) {
    host.gc();
    return true;
  }
  if (host.Bun !== undefined) {
    host.Bun.gc(true);
    return true;
  }
  return false;
}

async function openFdCounter(): Promise<() => number | undefined> {
  try {
    const fs = await importDynamic<{ readdirSync(path: string): string[] }>("node:fs");
    fs.readdirSync("/proc/self/fd");
    return () => {
      try {
        return fs.readdirSync("/proc/self/fd").length;
      } catch {
        return undefined;
      }
    };
  } catch {
    return () => undefined;
  }
}

/** The median of the samples' `pick` in [from, to) of the run's time, or NaN if none. */
function medianOver(samples: readonly Sample[], from: number, to: number, pick: (s: Sample) => number | undefined): number {
  const values = samples.filter((s) => s.t >= from && s.t < to).map(pick).filter((v): v is number => v !== undefined);
  return values.length === 0 ? NaN : median(values);
}

export async function runSoak(o: SoakOptions): Promise<Record<string, unknown>> {
  const runtime = detectRuntime();
  const started = nowMs();
  const t = (): number => (nowMs() - started) / 1000;
  const failures = new Failures();
  const ledgers = new Map<number, LifeLedger>();
  const rng = new Rng(o.seed);
  const countFds = await openFdCounter();
  const gcAvailable = collectGarbage();
  const fdsAtStart = countFds();

  const serverKey = o.secure ? generateServerKey() : undefined;
  const server = await listen({
    protocolId: PROTOCOL_ID,
    host: "127.0.0.1",
    port: 0,
    maxConnections: 2 * o.clients + 8,
    timeoutMs: o.timeoutMs,
    ...(serverKey !== undefined ? { secure: { serverKey } } : {}),
  });
  const soakServer = new SoakServer(server, ledgers, failures, nowMs);
  const proxy = await DemoProxy.open({
    adapter: runtimeAdapter(runtime),
    upstream: `127.0.0.1:${server.address.port}`,
    seed: o.seed,
    // Short, so that once lives end their flows close and the quiet points see no proxy state.
    flowIdleMs: 3_000,
    link: {
      lossRate: o.lossPercent / 100,
      latencyMs: o.rttMs / 2,
      jitterMs: o.jitterMs,
      reorder: o.jitterMs > 0,
      duplicateRate: o.duplicatePercent / 100,
      corruptRate: o.corruptPercent / 100,
    },
  });

  const lives = new Set<ClientLife>();
  const counts = { started: 0, graceful: 0, vanished: 0, vanishedAsGraceful: 0, connectFailures: 0, gracefulTimedOut: 0, rebinds: 0 };
  const totals = { sent: new Map<StreamId, number>(), arrived: new Map<StreamId, number>() };
  let slowestTimeoutDetectionMs = 0;
  let nextLifeId = 1;
  const stopAt = started + o.seconds * 1000;
  // The quiet point (runs long enough to judge memory): at a quarter of the run every life
  // ends and none starts until the heap with no life is measured; the end is another such
  // point. What lives leave behind is the difference.
  const judgedRun = o.seconds >= MEMORY_JUDGED_FROM_S;
  const quietAt = judgedRun ? started + o.seconds * 250 : Infinity;
  let quietDone = !judgedRun;
  let openGate!: () => void;
  const quietGate = new Promise<void>((resolve) => (openGate = resolve));

  const retire = (ledger: LifeLedger): void => {
    for (const [map, into] of [[ledger.sent, totals.sent], [ledger.arrived, totals.arrived]] as const) {
      for (const [stream, n] of map) into.set(stream, (into.get(stream) ?? 0) + n);
    }
    ledgers.delete(ledger.id);
  };

  const waitFor = async (done: () => boolean, ms: number): Promise<boolean> => {
    const deadline = nowMs() + ms;
    while (!done() && nowMs() < deadline) await sleep(25);
    return done();
  };

  const leaveGracefully = async (life: ClientLife): Promise<void> => {
    const { ledger, connection } = life;
    ledger.leaving = true;
    counts.graceful++;
    if (!(await waitFor(() => ledger.unsettled().length === 0, drainBudgetMs(o)))) {
      failures.add(`life ${ledger.id}: ${drainBudgetMs(o) / 1000} s after it stopped sending, still unsettled: ${ledger.unsettled().slice(0, 6).join(", ")}`);
    }
    await withTimeout(connection.close("normal"), CLOSE_BUDGET_MS, undefined);
    // A DISCONNECT lost on every resend leaves the server to time the client out: counted, not failed.
    await waitFor(() => ledger.serverReason !== undefined, o.timeoutMs + 3000);
    if (ledger.serverReason === "timeout") counts.gracefulTimedOut++;
    else if (ledger.serverReason !== "normal") failures.add(`life ${ledger.id}: said goodbye, and the server saw ${ledger.serverReason ?? "no disconnect"}`);
  };

  const vanish = async (life: ClientLife): Promise<void> => {
    const { ledger, connection } = life;
    const serverSide = ledger.serverConnection;
    const client = serverSide === undefined ? undefined : proxy.vanish(serverSide.address);
    if (client === undefined) {
      // Between a rebinding and the client's next datagram the server's address is the old one.
      counts.vanishedAsGraceful++;
      return leaveGracefully(life);
    }
    ledger.leaving = true;
    counts.vanished++;
    const vanishedAt = nowMs();
    const closing = withTimeout(connection.close("normal"), CLOSE_BUDGET_MS, undefined); // its goodbye goes nowhere
    const budget = o.timeoutMs + 5000;
    await waitFor(() => ledger.serverReason !== undefined, budget);
    if (ledger.serverReason !== "timeout") failures.add(`life ${ledger.id}: vanished, and within ${budget} ms the server saw ${ledger.serverReason ?? "no disconnect"}`);
    else slowestTimeoutDetectionMs = Math.max(slowestTimeoutDetectionMs, (ledger.serverEndedAt ?? vanishedAt) - vanishedAt);
    await closing;
    proxy.unvanish(client);
  };

  const runSlot = async (): Promise<void> => {
    while (nowMs() < stopAt) {
      if (!quietDone && nowMs() >= quietAt) await quietGate;
      const id = nextLifeId++;
      const ledger = new LifeLedger(id, rng.next() * 100 < o.vanishPercent ? "vanished" : "graceful");
      ledgers.set(id, ledger);
      counts.started++;
      let connection: Connection;
      try {
        const connectToken =
          serverKey === undefined ? undefined : createConnectToken({ serverKey, protocolId: PROTOCOL_ID, clientId: id, serverAddresses: [proxy.address] });
        connection = await connect(proxy.address, {
          protocolId: PROTOCOL_ID,
          userData: lifeUserData(id),
          connectTimeoutMs: CONNECT_TIMEOUT_MS,
          timeoutMs: o.timeoutMs,
          ...(connectToken !== undefined ? { connectToken } : {}),
        });
      } catch (error) {
        counts.connectFailures++;
        failures.add(`life ${id}: connect failed: ${(error as Error).message}`);
        retire(ledger);
        await sleep(500);
        continue;
      }
      ledger.connectedAt = nowMs();
      const life = new ClientLife(ledger, connection, failures, nowMs, o.seed);
      lives.add(life);
      if (!(await waitFor(() => ledger.serverConnection !== undefined, 3000))) failures.add(`life ${id}: connected, but the server never reported the connection`);
      const lifetimeMs = 1000 * (o.minLifeS + rng.next() * (o.maxLifeS - o.minLifeS));
      const endAt = Math.min(nowMs() + lifetimeMs, stopAt, quietDone || nowMs() >= quietAt ? Infinity : quietAt);
      await sleep(Math.max(0, endAt - nowMs()));
      // Lives still playing at the end leave gracefully, so the last check covers everything.
      // (Lives ending for the quiet point leave gracefully too: it measures with none left.)
      if (ledger.end === "vanished" && nowMs() < stopAt && (quietDone || nowMs() < quietAt)) await vanish(life);
      else await leaveGracefully(life);
      lives.delete(life);
      retire(ledger);
      await sleep(rng.next() * 1000);
    }
  };

  // One 30 Hz tick drives every life and the server.
  const ticker = g.setInterval(() => {
    for (const life of lives) life.tick();
    soakServer.tick();
  }, 1000 / TICK_HZ);

  const stallCheck = (): void => {
    const now = nowMs();
    for (const life of lives) {
      const l = life.ledger;
      if (l.leaving || l.stallReported || l.serverConnection === undefined || now - l.connectedAt < STALL_MS) continue;
      const up = now - l.upProgressAt;
      const down = now - l.downProgressAt;
      if (up > STALL_MS || down > STALL_MS) {
        l.stallReported = true;
        failures.add(`life ${l.id}: no reliable message arrived for ${(Math.max(up, down) / 1000).toFixed(1)} s (${up > down ? "client to server" : "server to client"})`);
      }
    }
  };

  const samples: Sample[] = [];
  const out = host.process?.stdout;
  const takeSample = (): void => {
    collectGarbage();
    const m = host.process?.memoryUsage();
    soakServer.checkCounters();
    const s: Sample = {
      t: +t().toFixed(1),
      heapUsedMB: m === undefined ? NaN : +(m.heapUsed / 2 ** 20).toFixed(2),
      rssMB: m === undefined ? NaN : +(m.rss / 2 ** 20).toFixed(1),
      fds: countFds(),
      lives: lives.size,
      serverConnections: server.connections.size,
      livesEnded: counts.graceful + counts.vanished,
      failures: failures.count,
    };
    samples.push(s);
    out?.write(`SOAK_SAMPLE ${JSON.stringify(s)}\n`);
  };

  takeSample(); // before the first life
  /** The heap with no life, no connection and no proxy flow, and the lives ended by then. */
  const quietPoints: { heapUsedMB: number; livesEnded: number; t: number }[] = [];
  const quiet = (): boolean => lives.size === 0 && server.connections.size === 0 && proxy.stats().flowsOpen === 0;
  const takeQuietPoint = (): void => {
    takeSample();
    const s = samples[samples.length - 1]!;
    quietPoints.push({ heapUsedMB: s.heapUsedMB, livesEnded: s.livesEnded, t: s.t });
  };
  let lastRebind = nowMs();
  let lastSample = nowMs();
  const slots = Array.from({ length: o.clients }, () => runSlot());
  const allEnded = Promise.all(slots).then(() => true);
  let ended = false;
  void allEnded.then(() => (ended = true));
  // The slots end by themselves after stopAt (each step bounded); this loop watches them.
  const endBound = stopAt + drainBudgetMs(o) + o.timeoutMs + 2 * CLOSE_BUDGET_MS + 30_000;
  while (!ended && nowMs() < endBound) {
    await sleep(250);
    stallCheck();
    if (o.rebindS > 0 && nowMs() < stopAt && nowMs() - lastRebind >= o.rebindS * 1000) {
      proxy.rebind();
      counts.rebinds++;
      lastRebind = nowMs();
    }
    if (!quietDone && nowMs() >= quietAt && (quiet() || nowMs() > quietAt + 90_000)) {
      if (quiet()) takeQuietPoint();
      else failures.add(`the quiet point found ${lives.size} lives, ${server.connections.size} connections, ${proxy.stats().flowsOpen} proxy flows 90 s on`);
      quietDone = true;
      openGate();
    } else if (nowMs() - lastSample >= o.sampleS * 1000) {
      takeSample();
      lastSample = nowMs();
    }
  }
  if (!ended) failures.add(`lives still running ${((nowMs() - stopAt) / 1000).toFixed(0)} s after the end`);
  g.clearInterval(ticker);
  if (!(await waitFor(() => server.connections.size === 0 && soakServer.open === 0, 5000))) {
    failures.add(`every life ended, and the server still holds ${server.connections.size} connections (${soakServer.open} reported open)`);
  }
  await waitFor(quiet, 10_000);
  if (judgedRun) takeQuietPoint();
  else takeSample();
  if (soakServer.strangers > 0) failures.add(`${soakServer.strangers} connections the soak did not open`);

  // Memory and descriptors: the last third of the run against the middle third.
  const span = t();
  const judged = span >= MEMORY_JUDGED_FROM_S && samples.length >= 6;
  // (Samples with lives playing only: the quiet points are compared with each other below.)
  const playing = samples.filter((s) => s.lives > 0);
  const heapMid = medianOver(playing, span / 3, (2 * span) / 3, (s) => s.heapUsedMB);
  const heapLast = medianOver(playing, (2 * span) / 3, Infinity, (s) => s.heapUsedMB);
  const fdMid = medianOver(playing, span / 3, (2 * span) / 3, (s) => s.fds);
  const fdLast = medianOver(playing, (2 * span) / 3, Infinity, (s) => s.fds);
  if (judged && heapLast - heapMid > Math.max(2, 0.1 * heapMid)) {
    failures.add(`heap grew from ${heapMid.toFixed(1)} MB (middle third, median) to ${heapLast.toFixed(1)} MB (last third)`);
  }
  if (judged && fdLast - fdMid > 16) failures.add(`open descriptors grew from ${fdMid} (middle third, median) to ${fdLast} (last third)`);
  // What the lives between the two quiet points left behind.
  const [q1, q2] = quietPoints;
  const leftBehind =
    q1 === undefined || q2 === undefined
      ? undefined
      : { fromMB: q1.heapUsedMB, toMB: q2.heapUsedMB, lives: q2.livesEnded - q1.livesEnded, kbPerLife: +(((q2.heapUsedMB - q1.heapUsedMB) * 1024) / Math.max(1, q2.livesEnded - q1.livesEnded)).toFixed(2) };
  if (leftBehind !== undefined && leftBehind.toMB - leftBehind.fromMB > Math.max(1, 0.1 * leftBehind.fromMB)) {
    failures.add(`with no life, the heap grew from ${leftBehind.fromMB} MB (after a quarter of the run) to ${leftBehind.toMB} MB (at the end): ${leftBehind.kbPerLife} KB for each of the ${leftBehind.lives} lives between`);
  }
  if (judgedRun && leftBehind === undefined) failures.add("no two quiet points to compare the heap at");

  await withTimeout(server.close(), CLOSE_BUDGET_MS, undefined);
  await withTimeout(proxy.close(), CLOSE_BUDGET_MS, undefined);
  const streams: Record<string, { sent: number; arrived: number }> = {};
  for (const stream of Object.values(Stream)) {
    streams[STREAM_NAMES[stream]] = { sent: totals.sent.get(stream) ?? 0, arrived: totals.arrived.get(stream) ?? 0 };
  }
  const p = proxy.stats();
  return {
    ok: failures.count === 0,
    runtime: runtimeName(),
    version: runtimeVersion(),
    options: o,
    seconds: +span.toFixed(1),
    lives: counts,
    slowestTimeoutDetectionMs: Math.round(slowestTimeoutDetectionMs),
    streams,
    proxy: {
      toServer: { sent: p.toUpstream.sent, lost: p.toUpstream.lost, duplicated: p.toUpstream.duplicated, corrupted: p.toUpstream.corrupted },
      toClients: { sent: p.toClient.sent, lost: p.toClient.lost, duplicated: p.toClient.duplicated, corrupted: p.toClient.corrupted },
      vanishedDropped: p.vanishedDropped,
    },
    memory: {
      judged,
      gcForced: gcAvailable,
      heapMiddleMB: heapMid,
      heapLastMB: heapLast,
      quietPoints,
      leftBehind,
      fdsAfter: samples[samples.length - 1]!.fds,
      fdsAtStart,
      fdsMiddle: fdMid,
      fdsLast: fdLast,
      samples: samples.length,
    },
    failures: failures.count,
    failureLines: failures.lines,
  };
}

async function main(): Promise<void> {
  let options: SoakOptions | "help";
  try {
    options = parseSoakArgs(scriptArgs());
  } catch (error) {
    if (!(error instanceof SoakUsageError)) throw error;
    g.console.error(`ackwire soak: ${error.message}\n\n${SOAK_HELP}`);
    return host.process!.exit(2);
  }
  if (options === "help") {
    g.console.log(SOAK_HELP);
    return host.process!.exit(0);
  }
  const o = options;
  // Whatever happens, the process ends.
  const hardMs = (o.seconds + o.maxLifeS) * 1000 + drainBudgetMs(o) + o.timeoutMs + 4 * CLOSE_BUDGET_MS + 60_000;
  const hard = g.setTimeout(() => {
    g.console.error(`soak: hard deadline of ${(hardMs / 1000).toFixed(0)} s passed`);
    host.process!.exit(1);
  }, hardMs);
  const result = await runSoak(o);
  g.clearTimeout(hard);
  const line = JSON.stringify(result);
  if (o.out !== undefined) {
    const fs = await importDynamic<{ writeFileSync(path: string, text: string): void }>("node:fs");
    fs.writeFileSync(o.out, `${JSON.stringify(result, null, 2)}\n`);
  }
  host.process!.stdout.write(`SOAK_RESULT ${line}\n`);
  host.process!.exit(result.ok === true ? 0 : 1);
}

await main();
