/**
 * bench:core — one server Endpoint, 1,000 simulated clients, sans-IO (no sockets).
 *
 * Each client connection sends 30 messages/s of 100 bytes (reliable-ordered) and the server
 * sends 30/s of 100 bytes back on each connection, over a seeded simulated path (10 ms one way,
 * 5% independent loss each way), for 60 simulated seconds (--quick: 4, under 30 s wall).
 *
 * Two measurements of the same server on the same traffic:
 * - live: the server runs in this process against the clients, which run with the simulated
 *   network in a forked process (client-process.ts). The two exchange packed batches of
 *   datagrams; since a datagram takes 10 ms to arrive, each side may run 10 ms of turns before
 *   it needs the other's (`--batch N` runs N, 1..10; the order of work, and so the run, is the
 *   same for every N). The clients' process runs beside the server on the same two cores and
 *   the same shared cache: 1,000 endpoints with their own WASM memories, as much work as the
 *   server's again, evicting the server's connections between their turns.
 * - server alone (the figure in core.json): the server's inputs of the live run are recorded,
 *   and a fresh server in a fresh process (server-replay.ts) replays them with nothing else
 *   running, turns back to back, as on a machine that only serves; 3 reps, the median kept.
 *   It must transmit exactly what the live server did (an FNV hash of every datagram and its
 *   receiver is compared; the run fails if they differ).
 *
 * Timed: only the server side — its handleDatagram / handleTimeout / pollEvent / pollTransmit
 * calls and its application's send() calls (engine included), with process.cpuUsage() around
 * them (that process only). Copying each outgoing datagram out of the send arena (what a
 * socket send does: one memcpy, into a reused buffer here) is timed; packing batches is not.
 * The cost of the two cpuUsage() calls per timed turn is measured and subtracted (raw figures
 * in core-detail.json).
 * Memory: heapUsed + arrayBuffers delta of the live server's process (after a GC when run with
 * --expose-gc) from before the handshakes to after all 1,000 are connected, divided by 1,000,
 * plus the server engine's linear memory / 1,000. (With --in-process the clients run in this
 * process too and the delta also holds their small handshake-completion growth.)
 *
 *   node --expose-gc dist/bench/core/core.js [--quick] [--in-process] [--batch N] [--engine ts|wasm]
 *        [--ack-delay ms] [--ack-piggyback ms] [--out name] [--keep-recording path]
 * Writes bench/results/core.json (and core-detail.json with the supporting figures).
 * --keep-recording keeps the server's recorded inputs at `path` (and what ab.ts needs to replay
 * them, at `path`.json) for a paired comparison of two builds on the same inputs (ab.ts).
 */
import { ClientHost, type ClientRequest, type ClientStats, type RunReply } from "./clients.js";
import { encodeTurn, type RecordingSidecar } from "./recording.js";
import { CONNECTIONS, LATENCY_MS, LOSS, RATE_HZ, TICK_MS, type ScenarioOptions } from "./scenario.js";
import { ServerSide, calibrateTimerOverhead, cpuSecondsPerSimSecond, type ReplayReport } from "./server.js";

interface ProcessLike {
  argv: string[];
  cpuUsage(previous?: { user: number; system: number }): { user: number; system: number };
  memoryUsage(): { heapUsed: number; external: number; arrayBuffers: number };
  exit(code: number): never;
}
interface HostGlobals {
  process: ProcessLike;
  performance: { now(): number };
  console: { log(...a: unknown[]): void; error(...a: unknown[]): void };
  URL: new (path: string, base: string) => object;
  gc?: () => void;
}
interface ForkedChild {
  on(event: "message", fn: (m: unknown) => void): void;
  on(event: "exit", fn: (code: number | null) => void): void;
  send(m: unknown): boolean;
  disconnect(): void;
  stdout: { on(event: "data", fn: (d: unknown) => void): void } | null;
}
const host = globalThis as unknown as HostGlobals;
const proc = host.process;
const performance = host.performance;
const console = host.console;
const moduleUrl = (import.meta as unknown as { url: string }).url;
const gc = host.gc;
const args = proc.argv.slice(2);
const quick = args.includes("--quick");
const inProcess = args.includes("--in-process");
const options: ScenarioOptions = {
  engine: args[args.indexOf("--engine") + 1] === "ts" ? "ts" : "wasm",
  ackDelayMs: args.includes("--ack-delay") ? Number(args[args.indexOf("--ack-delay") + 1]) : undefined,
  ackPiggybackMs: args.includes("--ack-piggyback") ? Number(args[args.indexOf("--ack-piggyback") + 1]) : undefined,
};
const outName = args.includes("--out") ? args[args.indexOf("--out") + 1] : "core";
const keepRecording = args.includes("--keep-recording") ? args[args.indexOf("--keep-recording") + 1] : undefined;
/** Server turns run back to back per exchange with the clients (1..LATENCY_MS; see the header). */
const BATCH_MS = args.includes("--batch") ? Math.max(1, Math.min(LATENCY_MS, Math.floor(Number(args[args.indexOf("--batch") + 1])) || 1)) : LATENCY_MS;
const SIM_SECONDS = quick ? 4 : 60;
const url = (await import("node:" + "url")) as { fileURLToPath(u: object): string };
const childProcess = (await import("node:" + "child_process")) as { fork(path: string, args: string[], o: object): ForkedChild };

// ---- the client side: a forked process, or (--in-process) right here ----------------------
type Request = (m: ClientRequest) => Promise<unknown>;
async function openClients(): Promise<{ request: Request; close(): void }> {
  if (inProcess) {
    const clients = new ClientHost();
    return { request: async (m) => clients.handle(m), close: () => undefined };
  }
  const child = childProcess.fork(url.fileURLToPath(new host.URL("./client-process.js", moduleUrl)), [], {
    serialization: "advanced",
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  let waiting: ((reply: unknown) => void) | undefined;
  let closing = false;
  child.on("message", (reply) => {
    const resolve = waiting;
    waiting = undefined;
    resolve?.(reply);
  });
  child.on("exit", (code) => {
    if (closing) return;
    console.error(`bench:core: the clients' process exited (code ${code}) mid-run`);
    proc.exit(1);
  });
  return {
    request: (m) =>
      new Promise((resolve) => {
        waiting = resolve;
        child.send(m);
      }),
    close: () => {
      closing = true;
      child.disconnect();
    },
  };
}

// ---- the live server, and the recording of its inputs ----------------------------------------
const server = new ServerSide(options, proc);
const os = (await import("node:" + "os")) as { tmpdir(): string };
const fs = (await import("node:" + "fs")) as {
  writeFileSync(path: string, data: string): void;
  mkdirSync(path: string, o: object): void;
  openSync(path: string, flags: string): number;
  writeSync(fd: number, data: Uint8Array): number;
  closeSync(fd: number): void;
  rmSync(path: string, o: object): void;
  renameSync(from: string, to: string): void;
  copyFileSync(from: string, to: string): void;
};
const recordingPath = `${os.tmpdir()}/ackwire-bench-core-${Date.now()}-${Math.floor(Math.random() * 1e9)}.bin`;
const recording = fs.openSync(recordingPath, "w");
let recordingBytes = 0;
let timing = false;

function serverTurn(now: number, deliveries: Uint8Array, appSends: boolean, tick: number): Uint8Array {
  const chunk = encodeTurn({ now, tick, appSends, timed: timing, deliveries });
  fs.writeSync(recording, chunk);
  recordingBytes += chunk.length;
  return server.turn(now, deliveries, appSends, tick, timing);
}

// The server's deliveries of the milliseconds opened so far and not yet run, in order.
const serverBound: Uint8Array[] = [];
/**
 * Runs `count` server turns from millisecond `from` (app tick `tick`) back to back, then the
 * clients' turns of the same milliseconds, and opens the buckets through `openThrough`.
 */
async function run(from: number, tick: number, count: number, appSends: boolean, openThrough: number): Promise<boolean> {
  const fromServer: Uint8Array[] = [];
  for (let k = 0; k < count; k++) fromServer.push(serverTurn(from + k, serverBound.shift()!, appSends, tick + k));
  const reply = (await clients.request({ type: "run", now: from, tick, count, appSends, fromServer, openThrough })) as RunReply;
  serverBound.push(...reply.serverBound);
  return reply.allConnected;
}

// ---- phase 1: connect everyone, measuring heap ----------------------------------------------
const wallStart = performance.now();
const clients = await openClients();
let now = 0;
await clients.request({ type: "start", options });
let allConnected = await run(now, 0, 0, false, now);
gc?.();
gc?.();
// Typed-array backing stores live outside the JS heap (arrayBuffers): count both.
const memBefore = proc.memoryUsage();
const heapBefore = memBefore.heapUsed + memBefore.arrayBuffers;
// One millisecond per exchange: the phase ends on the first millisecond all are connected.
for (let tick = 0; tick < 20_000 && (server.connections.length < CONNECTIONS || !allConnected); tick++) {
  allConnected = await run(now, tick, 1, false, now + 1);
  now += TICK_MS;
}
if (server.connections.length < CONNECTIONS || !allConnected) {
  console.error(`only ${server.connections.length} of ${CONNECTIONS} connected; stopping`);
  proc.exit(1);
}
gc?.();
gc?.();
const memAfter = proc.memoryUsage();
const heapAfter = memAfter.heapUsed + memAfter.arrayBuffers;
const engineBytes = server.endpoint.engine.bytes.byteLength;
const bytesPerConnection = Math.round((heapAfter - heapBefore + engineBytes) / CONNECTIONS);

// ---- phase 2: traffic, timing the server -----------------------------------------------------
const timerOverheadMicros = calibrateTimerOverhead(proc);
timing = true;
await clients.request({ type: "reset" });
const trafficStart = now;
const ticks = (SIM_SECONDS * 1000) / TICK_MS;
await run(now, 0, 0, true, now + BATCH_MS - 1);
for (let tick = 0; tick < ticks; tick += BATCH_MS) {
  const count = Math.min(BATCH_MS, ticks - tick);
  await run(now, tick, count, true, now + count + BATCH_MS - 1);
  now += count * TICK_MS;
}
const clientStats = (await clients.request({ type: "stats" })) as ClientStats;
clients.close();
fs.closeSync(recording);
const liveWallSeconds = (performance.now() - wallStart) / 1000;

// ---- the server alone: the recording replayed in a fresh process ----------------------------
const replay = await new Promise<ReplayReport>((resolve, reject) => {
  const child = childProcess.fork(url.fileURLToPath(new host.URL("./server-replay.js", moduleUrl)), [recordingPath, JSON.stringify(options), "3"], {
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  let text = "";
  child.stdout!.on("data", (d: unknown) => (text += String(d)));
  child.on("exit", (code) => {
    if (code !== 0) return reject(new Error(`bench:core: the replay process exited with code ${code}`));
    resolve(JSON.parse(text) as ReplayReport);
  });
});
for (const r of replay.results) {
  if (r.hash !== server.outputHash || r.messagesIn !== server.messagesIn) {
    console.error(`bench:core: the replayed server diverged from the live one (hash ${r.hash.toString(16)} vs ${server.outputHash.toString(16)}, messages ${r.messagesIn} vs ${server.messagesIn})`);
    proc.exit(1);
  }
}
const simSeconds = (now - trafficStart) / 1000;
if (keepRecording !== undefined) {
  // renameSync fails across file systems (tmpdir is often its own): copy, then remove.
  fs.copyFileSync(recordingPath, keepRecording);
  const sidecar: RecordingSidecar = { options, simSeconds, outputHash: server.outputHash, messagesIn: server.messagesIn, quick };
  fs.writeFileSync(keepRecording + ".json", JSON.stringify(sidecar) + "\n");
}
fs.rmSync(recordingPath, { force: true });
const perSimSecond = (micros: number, turns: number, overhead: number): number => cpuSecondsPerSimSecond(micros, turns, overhead, simSeconds);
const aloneEach = replay.results.map((r) => perSimSecond(r.cpuMicros, r.timedTurns, replay.timerOverheadMicros));
const alone = [...aloneEach].sort((a, b) => a - b)[aloneEach.length >> 1]!;
const live = perSimSecond(server.cpuMicros, server.timedTurns, timerOverheadMicros);
const expectedEach = CONNECTIONS * RATE_HZ * simSeconds;

const result = {
  connections: CONNECTIONS,
  cpuSecondsPerSimSecond: Number(alone.toFixed(5)),
  bytesPerConnection,
  lossRate: LOSS,
};
const detail = {
  ...result,
  cpuSecondsPerSimSecondMeans: "server alone: median of 3 replays of the live run's inputs in a fresh process",
  serverAloneRepsCpuSecondsPerSimSecond: aloneEach.map((x) => Number(x.toFixed(5))),
  liveCpuSecondsPerSimSecond: Number(live.toFixed(5)),
  liveRawCpuSecondsPerSimSecond: Number((server.cpuMicros / 1e6 / simSeconds).toFixed(5)),
  clients: inProcess ? "in-process" : "own process",
  batchMs: BATCH_MS,
  outputHash: server.outputHash.toString(16),
  engine: server.endpoint.engine.kind,
  ackDelayMs: server.endpoint.config.ackDelayMs,
  ackPiggybackMs: server.endpoint.config.ackPiggybackMs,
  timerOverheadMicrosPerCall: Number(timerOverheadMicros.toFixed(3)),
  timedTurns: server.timedTurns,
  simSeconds,
  quick,
  serverEngineBytesPerConnection: Math.round(engineBytes / CONNECTIONS),
  heapBytesPerConnection: Math.round((heapAfter - heapBefore) / CONNECTIONS),
  gcAvailable: gc !== undefined,
  serverMessagesIn: server.messagesIn,
  clientMessagesIn: clientStats.clientMessagesIn,
  expectedMessagesEachWay: expectedEach,
  datagrams: clientStats.sentDatagrams,
  measuredLoss: Number((clientStats.lostDatagrams / Math.max(1, clientStats.sentDatagrams)).toFixed(4)),
  recordingMB: Number((recordingBytes / 1e6).toFixed(1)),
  liveWallSeconds: Number(liveWallSeconds.toFixed(1)),
  wallSeconds: Number(((performance.now() - wallStart) / 1000).toFixed(1)),
};
console.log(JSON.stringify(detail, null, 2));

// dist/bench/core/core.js -> repository root is three levels up.
const root = url.fileURLToPath(new host.URL("../../../", moduleUrl));
fs.mkdirSync(root + "bench/results", { recursive: true });
fs.writeFileSync(root + `bench/results/${outName}.json`, JSON.stringify(result, null, 2) + "\n");
fs.writeFileSync(root + `bench/results/${outName}-detail.json`, JSON.stringify(detail, null, 2) + "\n");
