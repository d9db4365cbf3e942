// Attacking clients of the receive-budget benchmark (receive-budget.ts): --connections sans-IO
// endpoints in this one process, each on its own UDP socket on 127.0.0.1, each trying to make
// the server hold its maximum of received data. Each sends --messages 60 KiB messages, one per
// --period-ms, on a reliable-ordered channel (6) with congestion control off, and never lets the
// first one arrive: every datagram carrying a fragment of it (withhold.ts) is dropped, resends
// too. So the server holds everything after it for ordering, up to
// what its bounds allow. Reports, as JSON lines, how many connected, how each connection ended
// and the CPU time the process used. Ends when stdin closes or after --max-ms.
import { createSocket, type Socket } from "node:dgram";
import { Endpoint } from "../../src/session/endpoint.js";
import { carriesFirst, FIRST_BYTE, OTHER_BYTE } from "./withhold.js";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const count = Number(args.get("connections") ?? 250);
const target = String(args.get("target"));
const protocolId = Number(args.get("protocol-id"));
const periodMs = Number(args.get("period-ms") ?? 100);
/** Messages each sends in all: 24 x 60 KiB is past what a connection may hold behind a gap
 *  (1024 fragments); more would only be refused as too far ahead. */
const messages = Number(args.get("messages") ?? 24);
const maxMs = Number(args.get("max-ms") ?? 60_000);
const seed = Number(args.get("seed") ?? 1);
const [host, portText] = target.split(":") as [string, string];
const port = Number(portText);

interface Attacker {
  ep: Endpoint;
  socket: Socket;
  conn: number;
  up: boolean;
  sent: number;
  ended: string | undefined;
}

const out = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);
const first = new Uint8Array(60 * 1024).fill(FIRST_BYTE);
const big = new Uint8Array(60 * 1024).fill(OTHER_BYTE);

const attackers: Attacker[] = [];
const reasons: Record<string, number> = {};
let connected = 0;

function flush(a: Attacker, now: number): void {
  for (let n = 0; n < 10_000; n++) {
    const tx = a.ep.pollTransmit(now);
    if (tx === undefined) break;
    if (carriesFirst(tx.bytes)) continue;
    a.socket.send(tx.bytes.slice(), port, host);
  }
  for (let n = 0; n < 10_000; n++) {
    const ev = a.ep.pollEvent();
    if (ev === undefined) break;
    if (ev.type === "connect") {
      a.up = true;
      connected++;
    } else if (ev.type === "disconnect" && a.ended === undefined) {
      a.up = false;
      a.ended = typeof ev.reason === "string" ? ev.reason : "app";
      reasons[a.ended] = (reasons[a.ended] ?? 0) + 1;
    }
  }
}

for (let i = 0; i < count; i++) {
  const ep = new Endpoint({
    protocolId,
    seed: seed * 100_000 + i,
    engine: "ts",
    congestion: "none",
    timeoutMs: 30_000,
    engineLimits: { batchDatagrams: 64, maxRecords: 8192, sendDatagrams: 512 },
  });
  const socket = createSocket("udp4");
  const a: Attacker = { ep, socket, conn: -1, up: false, sent: 0, ended: undefined };
  socket.on("message", (bytes, rinfo) => {
    const now = performance.now();
    ep.handleDatagram(now, `${rinfo.address}:${rinfo.port}`, bytes);
    flush(a, now);
  });
  socket.on("error", () => {});
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  attackers.push(a);
}
// Connected only once all are made (the connect timeout runs from connect()), each at once.
for (const a of attackers) {
  a.conn = a.ep.connect(performance.now(), target);
  flush(a, performance.now());
}
out({ started: count });

const started = performance.now();
let nextSend = started;
const timer = setInterval(() => {
  const now = performance.now();
  const sendNow = now >= nextSend;
  if (sendNow) nextSend = now + periodMs;
  for (const a of attackers) {
    if (a.ended !== undefined) continue;
    // Each tries to hold its maximum: more whenever less than 1 MiB waits to be sent.
    if (sendNow && a.up && a.sent < messages) a.ep.send(a.conn, a.sent++ === 0 ? first : big, { channel: 6 }, now);
    if ((a.ep.pollTimeout() ?? Infinity) <= now) a.ep.handleTimeout(now);
    flush(a, now);
  }
  if (now - started > maxMs) stop();
}, 5);
const report = setInterval(() => {
  let bytesSent = 0;
  let queued = 0;
  for (const a of attackers) {
    if (a.ended !== undefined) continue;
    const st = a.ep.stats(a.conn);
    bytesSent += st.bytesSent;
    queued += st.queuedBytes;
  }
  out({ connected, reasons, bytesSent, queued });
}, 500);

let stopping = false;
function stop(): void {
  if (stopping) return;
  stopping = true;
  clearInterval(timer);
  clearInterval(report);
  const cpu = process.cpuUsage();
  out({ done: true, connected, reasons, cpuUs: cpu.user + cpu.system, lifeMs: performance.now() });
  for (const a of attackers) a.socket.close();
  setTimeout(() => process.exit(0), 200).unref();
}
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();
