/**
 * bench:core — one server Endpoint, 1,000 simulated clients, sans-IO (no sockets).
 *
 * Each client connection sends 30 messages/s of 100 bytes (reliable-ordered) and the server
 * sends 30/s of 100 bytes back on each connection, over a seeded simulated path (10 ms one way,
 * 5% independent loss each way), for 60 simulated seconds (--quick: 4, under 30 s wall).
 *
 * Timed: only the server side — its handleDatagram / handleTimeout / pollEvent / pollTransmit
 * calls and its application's send() calls (engine included), with process.cpuUsage() around
 * them. The clients and the simulated network are not timed; copying each outgoing datagram
 * out of the send arena (what a socket send does) is. The cost of the two cpuUsage() calls
 * per timed turn is measured in the same run and subtracted (the raw figure is in
 * core-detail.json).
 * Memory: heapUsed + arrayBuffers delta (after a GC when run with --expose-gc) from before the
 * handshakes to after all 1,000 are connected, divided by 1,000, plus the server engine's
 * linear memory / 1,000.
 * Client connection objects are created (connect()) before the baseline is taken, so the delta
 * is the server's per-connection state (plus the clients' small handshake-completion growth).
 *
 *   node --expose-gc dist/bench/core/core.js [--quick] [--engine ts|wasm] [--ack-delay ms] [--ack-piggyback ms] [--out name]
 * Writes bench/results/core.json (and core-detail.json with the supporting figures).
 */
import { Endpoint } from "../../src/session/endpoint.js";
import type { ChannelConfig, EndpointEvent } from "../../src/session/types.js";

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
const host = globalThis as unknown as HostGlobals;
const proc = host.process;
const performance = host.performance;
const console = host.console;
const moduleUrl = (import.meta as unknown as { url: string }).url;
const gc = host.gc;
const args = proc.argv.slice(2);
const quick = args.includes("--quick");
const engineKind = (args[args.indexOf("--engine") + 1] === "ts" ? "ts" : "wasm") as "ts" | "wasm";
const ackDelayMs = args.includes("--ack-delay") ? Number(args[args.indexOf("--ack-delay") + 1]) : undefined;
const ackPiggybackMs = args.includes("--ack-piggyback") ? Number(args[args.indexOf("--ack-piggyback") + 1]) : undefined;
const outName = args.includes("--out") ? args[args.indexOf("--out") + 1] : "core";

const CONNECTIONS = 1000;
const SIM_SECONDS = quick ? 4 : 60;
const RATE_HZ = 30;
const MESSAGE_BYTES = 100;
const LOSS = 0.05;
const LATENCY_MS = 10;
const TICK_MS = 1;
const PROTOCOL_ID = 0xc0de1000;
const SERVER = "10.0.0.1:7777";
const CHANNELS: ChannelConfig[] = [{ mode: "reliable-ordered" }, { mode: "unreliable" }];

// ---- a tiny seeded network: fixed latency, independent loss, buckets per ms ---------------
let rng = 0x2545f491;
function random(): number {
  rng ^= rng << 13;
  rng ^= rng >>> 17;
  rng ^= rng << 5;
  return (rng >>> 0) / 4294967296;
}
interface Flight {
  to: number; // -1 = server, else client index
  from: string;
  bytes: Uint8Array;
}
const RING_MS = 64;
const buckets: Flight[][] = Array.from({ length: RING_MS }, () => []);
let sentDatagrams = 0;
let lostDatagrams = 0;
function transmit(now: number, to: number, from: string, bytes: Uint8Array): void {
  sentDatagrams++;
  if (random() < LOSS) {
    lostDatagrams++;
    return;
  }
  buckets[(now + LATENCY_MS) % RING_MS].push({ to, from, bytes: bytes.slice() });
}

// ---- endpoints -----------------------------------------------------------------------------
const server = new Endpoint({
  protocolId: PROTOCOL_ID,
  server: true,
  maxConnections: CONNECTIONS,
  maxPendingHandshakes: 1,
  handshakeRatePerAddress: 10,
  channels: CHANNELS,
  seed: 1,
  engine: engineKind,
  ackDelayMs,
  ackPiggybackMs,
});
const clientAddresses: string[] = [];
const clientIndex = new Map<string, number>();
const clients: Endpoint[] = [];
for (let i = 0; i < CONNECTIONS; i++) {
  const address = `10.${1 + (i >> 16)}.${(i >> 8) & 0xff}.${i & 0xff}:40000`;
  clientAddresses.push(address);
  clientIndex.set(address, i);
  clients.push(
    new Endpoint({
      protocolId: PROTOCOL_ID,
      maxConnections: 0,
      maxPendingHandshakes: 1,
      channels: CHANNELS,
      seed: 1000 + i,
      engine: engineKind,
      ackDelayMs,
      ackPiggybackMs,
      engineLimits: { batchDatagrams: 8, maxRecords: 2048, sendDatagrams: 4 },
    }),
  );
}

// Server application state: its connections, and when each next sends.
const serverConns: number[] = [];
const clientConn: number[] = new Array<number>(CONNECTIONS).fill(-1);
let serverCpuMicros = 0;
let serverMessagesIn = 0;
let clientMessagesIn = 0;
const message = new Uint8Array(MESSAGE_BYTES).fill(7);

let timedCalls = 0;
function timedServer<T>(work: () => T): T {
  const start = proc.cpuUsage();
  const result = work();
  const d = proc.cpuUsage(start);
  serverCpuMicros += d.user + d.system;
  timedCalls++;
  return result;
}

/** CPU cost of one empty timedServer() (two cpuUsage calls), subtracted from the total. */
function calibrateTimerOverhead(): number {
  const calls = 20_000;
  const before = serverCpuMicros;
  for (let i = 0; i < calls; i++) timedServer(() => 0);
  const perCall = (serverCpuMicros - before) / calls;
  serverCpuMicros = before;
  timedCalls -= calls;
  return perCall;
}

function serverTurn(now: number, deliveries: Flight[], appSends: boolean, tick: number): void {
  timedServer(() => {
    for (const f of deliveries) server.handleDatagram(now, f.from, f.bytes);
    const due = server.pollTimeout();
    if (due !== undefined && due <= now) server.handleTimeout(now);
    for (let ev = server.pollEvent(); ev !== undefined; ev = server.pollEvent()) onServerEvent(ev);
    if (appSends) {
      // Each connection sends 30/s: connection k on ticks where (tick + k) % (1000/30) == 0.
      const period = Math.round(1000 / RATE_HZ);
      for (let k = tick % period; k < serverConns.length; k += period) server.send(serverConns[k], message, { channel: 0 });
    }
    // A socket would copy the bytes out here; the simulated network's work happens untimed.
    for (let tx = server.pollTransmit(now); tx !== undefined; tx = server.pollTransmit(now)) {
      serverOut.push(tx.to, tx.bytes.slice());
    }
  });
  for (let k = 0; k < serverOut.length; k += 2) {
    const to = clientIndex.get(serverOut[k] as string);
    if (to !== undefined) transmit(now, to, SERVER, serverOut[k + 1] as Uint8Array);
  }
  serverOut.length = 0;
}
const serverOut: (string | Uint8Array)[] = [];

function onServerEvent(ev: EndpointEvent): void {
  if (ev.type === "connect") serverConns.push(ev.connection);
  else if (ev.type === "message") serverMessagesIn++;
  else if (ev.type === "disconnect") {
    const i = serverConns.indexOf(ev.connection);
    if (i >= 0) serverConns.splice(i, 1);
  }
}

function clientTurn(now: number, i: number, deliveries: Flight[] | undefined, appSends: boolean, tick: number): void {
  const c = clients[i];
  if (deliveries !== undefined) for (const f of deliveries) c.handleDatagram(now, f.from, f.bytes);
  const due = c.pollTimeout();
  if (due !== undefined && due <= now) c.handleTimeout(now);
  else if (deliveries === undefined && !appSends) return;
  for (let ev = c.pollEvent(); ev !== undefined; ev = c.pollEvent()) {
    if (ev.type === "connect") clientConn[i] = ev.connection;
    else if (ev.type === "message") clientMessagesIn++;
    else if (ev.type === "disconnect") clientConn[i] = -1;
  }
  const period = Math.round(1000 / RATE_HZ);
  if (appSends && clientConn[i] >= 0 && (tick + i) % period === 0) c.send(clientConn[i], message, { channel: 0 });
  for (let tx = c.pollTransmit(now); tx !== undefined; tx = c.pollTransmit(now)) transmit(now, -1, clientAddresses[i], tx.bytes);
}

function step(now: number, tick: number, appSends: boolean): void {
  const bucket = buckets[now % RING_MS];
  buckets[now % RING_MS] = [];
  const toServer: Flight[] = [];
  const toClients = new Map<number, Flight[]>();
  for (const f of bucket) {
    if (f.to < 0) toServer.push(f);
    else {
      const list = toClients.get(f.to);
      if (list === undefined) toClients.set(f.to, [f]);
      else list.push(f);
    }
  }
  serverTurn(now, toServer, appSends, tick);
  for (let i = 0; i < CONNECTIONS; i++) clientTurn(now, i, toClients.get(i), appSends, tick);
}

// ---- phase 1: connect everyone, measuring heap ----------------------------------------------
const wallStart = performance.now();
let now = 0;
for (let i = 0; i < CONNECTIONS; i++) clients[i].connect(now, SERVER);
gc?.();
gc?.();
// Typed-array backing stores live outside the JS heap (arrayBuffers): count both.
const memBefore = proc.memoryUsage();
const heapBefore = memBefore.heapUsed + memBefore.arrayBuffers;
for (let tick = 0; tick < 20_000 && (serverConns.length < CONNECTIONS || clientConn.some((c) => c < 0)); tick++) {
  step(now, tick, false);
  now += TICK_MS;
}
if (serverConns.length < CONNECTIONS) {
  console.error(`only ${serverConns.length} of ${CONNECTIONS} connected; stopping`);
  proc.exit(1);
}
gc?.();
gc?.();
const memAfter = proc.memoryUsage();
const heapAfter = memAfter.heapUsed + memAfter.arrayBuffers;
const engineBytes = server.engine.bytes.byteLength;
const bytesPerConnection = Math.round((heapAfter - heapBefore + engineBytes) / CONNECTIONS);

// ---- phase 2: traffic, timing the server -----------------------------------------------------
const timerOverheadMicros = calibrateTimerOverhead();
serverCpuMicros = 0;
timedCalls = 0;
sentDatagrams = 0;
lostDatagrams = 0;
const trafficStart = now;
const ticks = (SIM_SECONDS * 1000) / TICK_MS;
for (let tick = 0; tick < ticks; tick++) {
  step(now, tick, true);
  now += TICK_MS;
}
const simSeconds = (now - trafficStart) / 1000;
const rawCpuSecondsPerSimSecond = serverCpuMicros / 1e6 / simSeconds;
const cpuSecondsPerSimSecond = Math.max(0, serverCpuMicros - timedCalls * timerOverheadMicros) / 1e6 / simSeconds;
const expectedEach = CONNECTIONS * RATE_HZ * simSeconds;

const result = {
  connections: CONNECTIONS,
  cpuSecondsPerSimSecond: Number(cpuSecondsPerSimSecond.toFixed(5)),
  bytesPerConnection,
  lossRate: LOSS,
};
const detail = {
  ...result,
  engine: server.engine.kind,
  ackDelayMs: server.config.ackDelayMs,
  ackPiggybackMs: server.config.ackPiggybackMs,
  rawCpuSecondsPerSimSecond: Number(rawCpuSecondsPerSimSecond.toFixed(5)),
  timerOverheadMicrosPerCall: Number(timerOverheadMicros.toFixed(3)),
  timedCalls,
  simSeconds,
  quick,
  serverEngineBytesPerConnection: Math.round(engineBytes / CONNECTIONS),
  heapBytesPerConnection: Math.round((heapAfter - heapBefore) / CONNECTIONS),
  gcAvailable: gc !== undefined,
  serverMessagesIn,
  clientMessagesIn,
  expectedMessagesEachWay: expectedEach,
  datagrams: sentDatagrams,
  measuredLoss: Number((lostDatagrams / Math.max(1, sentDatagrams)).toFixed(4)),
  wallSeconds: Number(((performance.now() - wallStart) / 1000).toFixed(1)),
};
console.log(JSON.stringify(detail, null, 2));

const fs = (await import("node:" + "fs")) as { writeFileSync(path: string, data: string): void; mkdirSync(path: string, o: object): void };
const url = (await import("node:" + "url")) as { fileURLToPath(u: object): string };
// dist/bench/core/core.js -> repository root is three levels up.
const root = url.fileURLToPath(new host.URL("../../../", moduleUrl));
fs.mkdirSync(root + "bench/results", { recursive: true });
fs.writeFileSync(root + `bench/results/${outName}.json`, JSON.stringify(result, null, 2) + "\n");
fs.writeFileSync(root + `bench/results/${outName}-detail.json`, JSON.stringify(detail, null, 2) + "\n");
