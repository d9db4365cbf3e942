// The server of the receive-budget attack benchmark (receive-budget.ts): a real `listen()` on
// 127.0.0.1 that echoes small channel-0 messages (the honest client's pings) and reports, as
// JSON lines on stdout, what all its connections hold received (the endpoint's receive-budget
// counter), its RSS, how many connections the budget ended, the datagrams it read and the CPU
// time it used. Ends when stdin closes or after --max-ms.
import { listen, Endpoint } from "../../src/index.js";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const budgetBytes = Number(args.get("budget-bytes") ?? 256 * 1024 * 1024);
const maxConnections = Number(args.get("max-connections") ?? 1100);
const sampleMs = Number(args.get("sample-ms") ?? 100);
const maxMs = Number(args.get("max-ms") ?? 120_000);
const protocolId = Number(args.get("protocol-id"));

let endpoint: Endpoint | undefined;
const server = await listen({
  protocolId,
  host: "127.0.0.1",
  port: 0,
  maxConnections,
  maxPendingHandshakes: 2048,
  handshakeRatePerAddress: 1_000_000,
  maxTotalReceiveBufferBytes: budgetBytes,
  receiveBufferBytes: 8 * 1024 * 1024,
  createEndpoint: (config) => (endpoint = new Endpoint(config)),
});
const ep = endpoint as Endpoint;
server.on("connection", (connection) => {
  connection.on("message", (m) => {
    // Only the honest client's pings (100 B) are echoed; attackers' data is just held.
    if (m.channel === 0 && m.data.length <= 200) connection.send(m.data, { channel: 0 });
  });
});
const out = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);
// rss() alone: memoryUsage() also walks the heap spaces, milliseconds with a large heap.
out({ listening: server.address.port, rss: process.memoryUsage.rss() });
const started = Date.now();
let peakHeld = 0;
let peakRss = 0;
const sample = setInterval(() => {
  const rss = process.memoryUsage.rss();
  peakRss = Math.max(peakRss, rss);
  const cpu = process.cpuUsage();
  out({
    t: Date.now() - started,
    at: Date.now(),
    held: ep.receiveBudget.total,
    peakHeld,
    rss,
    connections: ep.connectionCount,
    budgetCloses: ep.counters.receiveBudgetCloses,
    datagrams: ep.counters.datagramsReceived,
    cpuUs: cpu.user + cpu.system,
  });
  if (Date.now() - started > maxMs) stop();
}, sampleMs);
// The counter is read after every receive batch, not only at samples: its true peak.
const poll = setInterval(() => {
  peakHeld = Math.max(peakHeld, ep.receiveBudget.total);
}, 1);
let stopping = false;
function stop(): void {
  if (stopping) return;
  stopping = true;
  clearInterval(sample);
  clearInterval(poll);
  out({ done: true, peakHeld, peakRss, budgetCloses: ep.counters.receiveBudgetCloses });
  void server.close().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 3000).unref();
}
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();
