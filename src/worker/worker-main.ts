/**
 * The network thread of `ackwire/worker` (as MTUDP puts it: network I/O must not wait for the game
 * loop). It runs the package root's normal listen()/connect() - the runtime's socket adapter,
 * the driver and the WASM engine - and relays:
 *   events (connection, message, unresponsive, responsive, bandwidth, receipt, disconnect,
 *   stats) to the application thread, one postMessage per wake-up (an array);
 *   commands (send, close, stats, shutdown; on a server also connect, punch and relay routes)
 *   from the application thread to the endpoint.
 * The application thread may be stuck in a 30 ms frame: this thread keeps receiving, acking,
 * resending and sending keepalives meanwhile; events wait in the parent's message queue.
 */
import { connect, listen } from "../index.js";
import type { Connection } from "../api/connection.js";
import { deferToNextTurn, host } from "../api/host.js";
import type { Server } from "../api/runtime.js";
import type { Command, WorkerEvent } from "./protocol.js";
import { currentRuntime, parentHandle } from "./spawn.js";
import { toWireError } from "./wire-errors.js";

const parent = await parentHandle();

let batch: WorkerEvent[] = [];
let transfer: ArrayBuffer[] = [];
let flushQueued = false;

/**
 * Queues one event. The batch leaves after the current wake-up: on a macrotask where the
 * runtime has setImmediate (the Node adapter hands the rest of a receive burst to the driver
 * on setImmediate, so this catches the whole burst), else in a microtask.
 */
function emit(event: WorkerEvent, owned?: ArrayBuffer): void {
  batch.push(event);
  if (owned !== undefined) transfer.push(owned);
  if (flushQueued) return;
  flushQueued = true;
  if (host.setImmediate !== undefined) host.setImmediate(flush);
  else host.queueMicrotask(flush);
}

function flush(): void {
  flushQueued = false;
  if (batch.length === 0) return;
  const events = batch;
  const buffers = transfer;
  batch = [];
  transfer = [];
  parent.post(events, buffers);
}

/**
 * A received message's bytes, ready to be transferred. The receive path (src/channels
 * receive-channel.ts) copies every delivered message into a fresh buffer of its own, so the
 * buffer can be moved without a copy. Two cases are copied anyway: an empty message (the
 * channels share one empty array) and a view that is only part of its buffer (a reassembled
 * message shorter than its allocation), so nothing else can ever be detached.
 */
function ownedBytes(data: Uint8Array): { data: Uint8Array; owned?: ArrayBuffer } {
  if (data.byteLength === 0) return { data: new Uint8Array(0) };
  const buffer = data.buffer;
  if (buffer instanceof ArrayBuffer && data.byteOffset === 0 && data.byteLength === buffer.byteLength) return { data, owned: buffer };
  const copy = data.slice();
  return { data: copy, owned: copy.buffer as ArrayBuffer };
}

const connections = new Map<number, Connection>();
let server: Server | undefined;
let client: Connection | undefined;
let abort: { abort(): void; signal: unknown } | undefined;
let statsIntervalMs = 0;
let statsTimer: unknown;
let shuttingDown = false;

function attach(conn: Connection): void {
  const c = conn.id;
  connections.set(c, conn);
  conn.on("message", (m) => {
    const { data, owned } = ownedBytes(m.data);
    emit({ t: "message", c, channel: m.channel, data, key: m.key }, owned);
  });
  conn.on("unresponsive", ({ silentMs }) => emit({ t: "unresponsive", c, silentMs }));
  conn.on("responsive", () => emit({ t: "responsive", c }));
  conn.on("bandwidth", ({ bitsPerSecond }) => emit({ t: "bandwidth", c, bitsPerSecond }));
  conn.on("pathMtu", ({ pathMtu, belowBase }) => emit({ t: "pathMtu", c, pathMtu, belowBase }));
  conn.on("migrate", ({ from, to }) => emit({ t: "migrate", c, from, to }));
  conn.on("disconnect", (info) => {
    connections.delete(c);
    emit({ t: "disconnect", c, info });
  });
}

/** Each channel's largest message, for the front end's send() to check at once (as the root's
 *  does) rather than have the worker refuse it later as an "error" event. */
function limitsOf(conn: Connection): number[] {
  const limits: number[] = [];
  for (let channel = 0; channel < 256; channel++) {
    const limit = conn.maxMessageBytes(channel);
    if (limit === undefined) break;
    limits.push(limit);
  }
  return limits;
}

function statsOf(conn: Connection): ReturnType<Connection["stats"]> | undefined {
  try {
    return conn.stats();
  } catch {
    return undefined; // ended: its disconnect event is on its way
  }
}

function pushStats(): void {
  statsTimer = undefined;
  for (const conn of connections.values()) {
    const stats = statsOf(conn);
    if (stats !== undefined) emit({ t: "stats", c: conn.id, req: 0, stats });
  }
  if (server !== undefined) emit({ t: "counters", counters: server.counters() });
  armStats();
}

function armStats(): void {
  if (statsIntervalMs > 0 && !shuttingDown && statsTimer === undefined) statsTimer = host.setTimeout(pushStats, statsIntervalMs);
}

function send(command: Extract<Command, { op: "send" }>): void {
  const conn = connections.get(command.c);
  if (conn === undefined || !conn.isOpen) {
    // Closed while the command crossed: like a send racing a disconnect on one thread.
    if (command.tag > 0) emit({ t: "receipt", c: command.c, tag: command.tag, delivered: false });
    return;
  }
  const options = { channel: command.channel, key: command.key, delayMs: command.delayMs, deadlineMs: command.deadlineMs };
  try {
    if (command.tag === 0) {
      conn.send(command.data, options);
      return;
    }
    const tag = command.tag;
    conn.send(command.data, { ...options, receipt: true }).then(
      (delivered) => emit({ t: "receipt", c: command.c, tag, delivered }),
      (error: unknown) => emit({ t: "send-error", c: command.c, tag, error: toWireError(error) }),
    );
  } catch (error) {
    emit({ t: "send-error", c: command.c, tag: command.tag, error: toWireError(error) });
  }
}

async function shutdown(): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  if (statsTimer !== undefined) host.clearTimeout(statsTimer);
  try {
    if (server !== undefined) await server.close();
    else if (client?.isOpen) await client.close("normal");
  } catch {
    // Nothing left to report: the application asked for the end.
  }
  // One more turn: a client's socket closes in a microtask after its last packet.
  deferToNextTurn(() => {
    emit({ t: "shut" });
    flush();
  });
}

async function start(command: Extract<Command, { op: "listen" | "connect" }>): Promise<void> {
  statsIntervalMs = command.statsIntervalMs;
  try {
    if (command.op === "listen") {
      server = await listen(command.options);
      server.on("connection", (conn) => {
        attach(conn);
        const identity = conn.identity;
        emit({ t: "connection", c: conn.id, address: conn.address, userData: conn.userData, stats: statsOf(conn)!, limits: limitsOf(conn), ...(identity !== undefined ? { identity } : {}) });
      });
      server.on("punch", ({ address, token }) => emit({ t: "punch", address, token }));
      server._onRelayEvicted((virtual) => {
        emit({ t: "relay-evicted", virtual, seq: routeSeq.get(virtual) ?? 0 });
        routeSeq.delete(virtual);
      });
      emit({ t: "listening", address: server.address });
    } else {
      const Controller = (globalThis as unknown as { AbortController: new () => { abort(): void; signal: unknown } }).AbortController;
      abort = new Controller();
      const options = { ...command.options, signal: abort.signal as never };
      client = await connect(command.target, options);
      abort = undefined;
      attach(client);
      emit({ t: "connected", c: client.id, address: client.address, userData: client.userData, stats: statsOf(client)!, limits: limitsOf(client) });
    }
    armStats();
  } catch (error) {
    abort = undefined;
    emit({ t: "failed", error: toWireError(error) });
  }
}

/** server.connect() attempts in flight, by the front end's request number. */
const opening = new Map<number, { abort(): void; signal: unknown }>();

async function serverConnect(command: Extract<Command, { op: "server-connect" }>): Promise<void> {
  const Controller = (globalThis as unknown as { AbortController: new () => { abort(): void; signal: unknown } }).AbortController;
  const controller = new Controller();
  opening.set(command.req, controller);
  try {
    if (server === undefined) throw new Error("server-connect on a worker that does not listen");
    const conn = await server.connect(command.target, { ...command.options, signal: controller.signal as never });
    attach(conn);
    emit({ t: "opened", req: command.req, id: conn.id, address: conn.address, userData: conn.userData, stats: statsOf(conn)!, limits: limitsOf(conn) });
  } catch (error) {
    emit({ t: "open-failed", req: command.req, error: toWireError(error) });
  } finally {
    opening.delete(command.req);
  }
}

/**
 * A punch or relay command on the server; false if it threw. The front end checked the
 * arguments as the server does, so what can still throw is the server closing meanwhile (moot),
 * or a route the two sides' lists briefly disagree on (the front end is told: relay-refused).
 */
function onServer(action: (s: Server) => void): boolean {
  if (server === undefined) return false;
  try {
    action(server);
    return true;
  } catch {
    return false;
  }
}

/** Relay route -> the seq of the relay-route command that added it last (for "relay-evicted"). */
const routeSeq = new Map<string, number>();

function relayRoute(command: Extract<Command, { op: "relay-route" }>): void {
  if (onServer((s) => void s._addRelayRoute(command.relay, command.token, command.id))) routeSeq.set(command.virtual, command.seq);
  else emit({ t: "relay-refused", virtual: command.virtual, seq: command.seq });
}

function handle(command: Command): void {
  switch (command.op) {
    case "server-connect":
      void serverConnect(command);
      return;
    case "server-connect-abort":
      opening.get(command.req)?.abort();
      return;
    case "punch":
      return void onServer((s) => s.punch(command.address, command.token, command.acceptToken));
    case "relay-route":
      return relayRoute(command);
    case "relay-bind":
      return void onServer((s) => void s.bindRelayRoute(command.virtual));
    case "relay-unroute":
      routeSeq.delete(command.virtual);
      return void onServer((s) => s.removeRelayRoute(command.virtual));
    case "send":
      return send(command);
    case "close": {
      const conn = connections.get(command.c);
      if (conn === undefined) return; // already ended; its disconnect event was sent
      try {
        void conn.close(command.reason, command.userData, { linger: command.linger });
      } catch (error) {
        emit({ t: "send-error", c: command.c, tag: 0, error: toWireError(error) });
      }
      return;
    }
    case "stats": {
      const conn = connections.get(command.c);
      emit({ t: "stats", c: command.c, req: command.req, stats: conn === undefined ? undefined : statsOf(conn) });
      return;
    }
    case "listen":
    case "connect":
      void start(command);
      return;
    case "abort":
      abort?.abort();
      return;
    case "shutdown":
      void shutdown();
      return;
  }
}

parent.onMessage((data) => {
  for (const command of data as Command[]) handle(command);
});
emit({ t: "ready", runtime: currentRuntime() });
