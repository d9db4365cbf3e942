/**
 * bench:core — one server Endpoint, 1,000 simulated clients, sans-IO (no sockets).
 *
 * Each client connection sends 30 messages/s of 100 bytes (reliable-ordered) and the server
 * sends 30/s of 100 bytes back on each connection, over a seeded simulated path (10 ms one way,
 * 5% independent loss each way), for 60 simulated seconds (--quick: 4, under 30 s wall).
 *
 * The server runs in this process and the clients with the simulated network in a forked one
 * (client-process.ts), exchanging one packed batch of datagrams each way per simulated
 * millisecond, in lockstep: the clients' heap, garbage collections and cache footprint are not
 * the server's, as on a real server whose clients are other machines. `--in-process` runs the
 * clients here instead (the set-up of earlier sessions; same seed, same run, for comparison).
 *
 * Timed: only the server side — its handleDatagram / handleTimeout / pollEvent / pollTransmit
 * calls and its application's send() calls (engine included), with process.cpuUsage() around
 * them (this process only: the clients' process waits while the server works). Copying each
 * outgoing datagram out of the send arena (what a socket send does: one memcpy, into a reused
 * buffer here) is timed; packing the batches is not. The cost of the two cpuUsage() calls per
 * timed turn is measured in the same run and subtracted (the raw figure is in core-detail.json).
 * Memory: heapUsed + arrayBuffers delta of this process (after a GC when run with --expose-gc)
 * from before the handshakes to after all 1,000 are connected, divided by 1,000, plus the server
 * engine's linear memory / 1,000. (With --in-process the client objects are created before the
 * baseline, so the delta also holds their small handshake-completion growth.)
 *
 *   node --expose-gc dist/bench/core/core.js [--quick] [--in-process] [--engine ts|wasm]
 *        [--ack-delay ms] [--ack-piggyback ms] [--out name]
 * Writes bench/results/core.json (and core-detail.json with the supporting figures).
 */
import { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { ClientHost, clientIndexMap, type ClientRequest, type ClientStats, type TickReply } from "./clients.js";
import {
  BatchWriter,
  CONNECTIONS,
  LOSS,
  MESSAGE_BYTES,
  RATE_HZ,
  SEND_PERIOD_MS,
  TICK_MS,
  clientAddress,
  readBatch,
  serverConfig,
  type ScenarioOptions,
} from "./scenario.js";

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
const SIM_SECONDS = quick ? 4 : 60;
const url = (await import("node:" + "url")) as { fileURLToPath(u: object): string };

// ---- the client side: a forked process, or (--in-process) right here ----------------------
type Request = (m: ClientRequest) => Promise<unknown>;
async function openClients(): Promise<{ request: Request; close(): void }> {
  if (inProcess) {
    const clients = new ClientHost();
    return { request: async (m) => clients.handle(m), close: () => undefined };
  }
  const cp = (await import("node:" + "child_process")) as {
    fork(path: string, args: string[], o: object): ForkedChild;
  };
  const child = cp.fork(url.fileURLToPath(new host.URL("./client-process.js", moduleUrl)), [], {
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

// ---- the server ------------------------------------------------------------------------------
const server = new Endpoint(serverConfig(options));
const clientAddresses = Array.from({ length: CONNECTIONS }, (_, i) => clientAddress(i));
const clientIndex = clientIndexMap();
const serverConns: number[] = [];
let serverCpuMicros = 0;
let serverMessagesIn = 0;
let timedCalls = 0;
const message = new Uint8Array(MESSAGE_BYTES).fill(7);

function onServerEvent(ev: EndpointEvent): void {
  if (ev.type === "connect") serverConns.push(ev.connection);
  else if (ev.type === "message") serverMessagesIn++;
  else if (ev.type === "disconnect") {
    const i = serverConns.indexOf(ev.connection);
    if (i >= 0) serverConns.splice(i, 1);
  }
}

// One turn's inputs, unpacked before the timer starts, and its outputs, copied out as a socket
// send would (into `sink`) while timed and packed for the clients after.
const inFrom: string[] = [];
const inBytes: Uint8Array[] = [];
let sink = new Uint8Array(1 << 20);
const sinkTo: string[] = [];
const sinkLength: number[] = [];
const toClients = new BatchWriter();

function serverTurn(now: number, deliveries: Uint8Array, appSends: boolean, tick: number): Uint8Array {
  inFrom.length = 0;
  inBytes.length = 0;
  readBatch(deliveries, (client, bytes) => {
    inFrom.push(clientAddresses[client]);
    inBytes.push(bytes);
  });
  sinkTo.length = 0;
  sinkLength.length = 0;
  let sinkPos = 0;

  const start = proc.cpuUsage();
  for (let k = 0; k < inFrom.length; k++) server.handleDatagram(now, inFrom[k], inBytes[k]);
  const due = server.pollTimeout();
  if (due !== undefined && due <= now) server.handleTimeout(now);
  for (let ev = server.pollEvent(); ev !== undefined; ev = server.pollEvent()) onServerEvent(ev);
  if (appSends) {
    // Each connection sends 30/s: connection k on ticks where (tick + k) % 33 == 0.
    for (let k = tick % SEND_PERIOD_MS; k < serverConns.length; k += SEND_PERIOD_MS) {
      server.send(serverConns[k], message, { channel: 0 });
    }
  }
  for (let tx = server.pollTransmit(now); tx !== undefined; tx = server.pollTransmit(now)) {
    const length = tx.bytes.length;
    if (sinkPos + length > sink.length) {
      const grown = new Uint8Array(sink.length * 2);
      grown.set(sink);
      sink = grown;
    }
    sink.set(tx.bytes, sinkPos);
    sinkPos += length;
    sinkTo.push(tx.to);
    sinkLength.push(length);
  }
  const d = proc.cpuUsage(start);
  serverCpuMicros += d.user + d.system;
  timedCalls++;

  for (let k = 0, pos = 0; k < sinkTo.length; pos += sinkLength[k], k++) {
    const to = clientIndex.get(sinkTo[k]);
    if (to !== undefined) toClients.add(to, sink, pos, sinkLength[k]);
  }
  return toClients.take();
}

/** CPU cost of the two cpuUsage() calls around one turn, subtracted from the total. */
function calibrateTimerOverhead(): number {
  const calls = 20_000;
  let micros = 0;
  for (let i = 0; i < calls; i++) {
    const start = proc.cpuUsage();
    const d = proc.cpuUsage(start);
    micros += d.user + d.system;
  }
  return micros / calls;
}

// ---- phase 1: connect everyone, measuring heap ----------------------------------------------
const wallStart = performance.now();
const clients = await openClients();
let now = 0;
let reply = (await clients.request({ type: "start", options })) as TickReply;
gc?.();
gc?.();
// Typed-array backing stores live outside the JS heap (arrayBuffers): count both.
const memBefore = proc.memoryUsage();
const heapBefore = memBefore.heapUsed + memBefore.arrayBuffers;
for (let tick = 0; tick < 20_000 && (serverConns.length < CONNECTIONS || !reply.allConnected); tick++) {
  const out = serverTurn(now, reply.serverBound, false, tick);
  reply = (await clients.request({ type: "tick", now, tick, appSends: false, fromServer: out })) as TickReply;
  now += TICK_MS;
}
if (serverConns.length < CONNECTIONS || !reply.allConnected) {
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
await clients.request({ type: "reset" });
const trafficStart = now;
const ticks = (SIM_SECONDS * 1000) / TICK_MS;
for (let tick = 0; tick < ticks; tick++) {
  const out = serverTurn(now, reply.serverBound, true, tick);
  reply = (await clients.request({ type: "tick", now, tick, appSends: true, fromServer: out })) as TickReply;
  now += TICK_MS;
}
const clientStats = (await clients.request({ type: "stats" })) as ClientStats;
clients.close();
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
  clients: inProcess ? "in-process" : "own process",
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
  clientMessagesIn: clientStats.clientMessagesIn,
  expectedMessagesEachWay: expectedEach,
  datagrams: clientStats.sentDatagrams,
  measuredLoss: Number((clientStats.lostDatagrams / Math.max(1, clientStats.sentDatagrams)).toFixed(4)),
  wallSeconds: Number(((performance.now() - wallStart) / 1000).toFixed(1)),
};
console.log(JSON.stringify(detail, null, 2));

const fs = (await import("node:" + "fs")) as { writeFileSync(path: string, data: string): void; mkdirSync(path: string, o: object): void };
// dist/bench/core/core.js -> repository root is three levels up.
const root = url.fileURLToPath(new host.URL("../../../", moduleUrl));
fs.mkdirSync(root + "bench/results", { recursive: true });
fs.writeFileSync(root + `bench/results/${outName}.json`, JSON.stringify(result, null, 2) + "\n");
fs.writeFileSync(root + `bench/results/${outName}-detail.json`, JSON.stringify(detail, null, 2) + "\n");
