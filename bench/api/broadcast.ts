// Fan-out cost: server.broadcast() against a loop of connection.send(), the same payload to
// every connection of a server (bench/RESULTS.md "api" -> "broadcast").
//
//   node dist/bench/api/broadcast.js [--conns=100,1000] [--sizes=100,3000] [--rounds=30]
//
// A server and N clients on an in-memory network (bench/lib/memory-adapter.ts, real session
// endpoints and engines on every end). Each round times, in process CPU (user + system), one
// fan-out on the server: the call itself (`enqueue`) and, separately, the call plus the
// driver's service pass that writes the datagrams (`total`). The network is held during the
// timed part, then delivered, and the clients' acks are processed before the next round. The
// arms alternate round by round; the figure is each arm's median, and `ratio` = send loop /
// broadcast (above 1: broadcast is cheaper). 3000 B is fragmented (3 fragments at the default
// mtu): there a send() copies into a fresh buffer per connection, a broadcast once.
// server.stats() is timed at each N too.
import { MemoryNetwork } from "../lib/memory-adapter.js";
import { g, scriptArgs, sleep } from "../lib/host.js";
import { armsSummary, round } from "../lib/stats.js";
import { createRuntime, type Connection, type Server } from "../../src/index.js";

const console = g.console;
const args = scriptArgs();
const opt = (name: string, fallback: string): string => {
  const a = args.find((x) => x.startsWith(`--${name}=`));
  return a === undefined ? fallback : a.slice(name.length + 3);
};
const connCounts = opt("conns", "100,1000").split(",").map(Number);
const sizes = opt("sizes", "100,3000").split(",").map(Number);
const rounds = Number(opt("rounds", "30"));
const proc = (g as unknown as { process: { cpuUsage(): { user: number; system: number } } }).process;
const cpuUs = (): number => {
  const u = proc.cpuUsage();
  return u.user + u.system;
};
const protocolId = 0x42524442;

async function quiet(net: MemoryNetwork): Promise<void> {
  // Bounded: a few turns until nothing is in transit (acks, the server's answers to them).
  for (let i = 0; i < 200; i++) {
    await sleep(1);
    if (net.queued === 0) {
      await sleep(1);
      if (net.queued === 0) return;
    }
  }
}

async function setUp(n: number): Promise<{ net: MemoryNetwork; server: Server; close(): Promise<void> }> {
  const net = new MemoryNetwork();
  const runtime = createRuntime(net.adapter);
  const server = await runtime.listen({ protocolId, host: "127.0.0.1", port: 9000, maxConnections: n + 8 });
  const clients: Connection[] = [];
  const limits = { batchDatagrams: 64, maxRecords: 1024, sendDatagrams: 64 };
  for (let i = 0; i < n; i += 50) {
    const batch = [];
    for (let j = i; j < Math.min(n, i + 50); j++) batch.push(runtime.connect("127.0.0.1:9000", { protocolId, engineLimits: limits, closeTimeoutMs: 200 }));
    clients.push(...(await Promise.all(batch)));
  }
  await quiet(net);
  if (server.connections.size !== n) throw new Error(`${server.connections.size} of ${n} clients connected`);
  return {
    net,
    server,
    async close() {
      await Promise.all(clients.map((c) => c.close("normal", undefined, { linger: false })));
      await server.close();
    },
  };
}

const results: Record<string, unknown> = {};
for (const n of connCounts) {
  const { net, server, close } = await setUp(n);
  for (const size of sizes) {
    const payload = new Uint8Array(size).fill(size & 0xff);
    const arms = {
      loop: () => {
        for (const c of server.connections.values()) c.send(payload);
      },
      broadcast: () => void server.broadcast(payload),
    };
    const enqueue: Record<string, number[]> = { loop: [], broadcast: [] };
    const total: Record<string, number[]> = { loop: [], broadcast: [] };
    for (let r = 0; r < rounds + 3; r++) {
      for (const name of r % 2 === 0 ? (["loop", "broadcast"] as const) : (["broadcast", "loop"] as const)) {
        net.hold = true;
        const t0 = cpuUs();
        arms[name]();
        const t1 = cpuUs();
        await Promise.resolve(); // the driver's service (queued as a microtask by the sends)
        const t2 = cpuUs();
        net.hold = false;
        net.deliver();
        await quiet(net);
        if (r >= 3) {
          // the first rounds warm the code up
          enqueue[name]!.push(t1 - t0);
          total[name]!.push(t2 - t0);
        }
      }
    }
    for (let i = 0; i < 50; i++) server.stats(); // warm-up
    const stats0 = cpuUs();
    for (let i = 0; i < 200; i++) server.stats();
    const statsUs = (cpuUs() - stats0) / 200;
    const e = armsSummary(enqueue, "broadcast", "loop");
    const t = armsSummary(total, "broadcast", "loop");
    const key = `n${n}-${size}B`;
    results[key] = {
      enqueueUs: { loop: e.loopMedian, broadcast: e.broadcastMedian, ratio: e.ratio },
      totalUs: { loop: t.loopMedian, broadcast: t.broadcastMedian, ratio: t.ratio },
      statsUs: round(statsUs, 1),
    };
    console.log(`${key}: enqueue loop ${e.loopMedian} us / broadcast ${e.broadcastMedian} us = ${e.ratio}; with the write pass ${t.loopMedian} / ${t.broadcastMedian} us = ${t.ratio}; server.stats() ${round(statsUs, 1)} us`);
  }
  const s = server.stats();
  console.log(`  n=${n}: ${s.connections} connections, ${s.messagesSent} messages sent, ${s.datagramsOut} datagrams out, ${s.resends} resends, queued ${s.queuedBytes} B`);
  await close();
}
console.log(`BROADCAST_RESULT ${JSON.stringify(results)}`);
