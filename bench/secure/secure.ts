// What secure connections (PROTOCOL §9) cost on loopback, against plain connections, alternated
// in one process (plain, secure, plain, secure...) so both arms see the same host: a 100 B
// reliable-ordered ping-pong (p50) and reliable-ordered 1000 B bulk (MB/s). Both ends run in
// this process, so every datagram is sealed once and opened once on this one thread.
//   node|bun dist/bench/secure/secure.js [pingCount] [rounds] [bulkMs]
//   deno run -A --unstable-net dist/bench/secure/secure.js ...
// Prints one JSON line: per-round figures, medians, secure/plain ratios, and the secure
// server's counters (nothing dropped on a clean loopback).
import { onFreshPair, runPing, runThroughput, type MessagePair } from "../e2e/driver.js";
import { RELIABLE_FLOW } from "../e2e/flows.js";
import { BENCH_PROTOCOL_ID, CHANNEL, pairOn } from "../e2e/transports/ackwire.js";
import { g, runtimeName, scriptArgs } from "../lib/host.js";
import { armsSummary } from "../lib/stats.js";
import { connect, createConnectToken, DEFAULT_CHANNELS, generateServerKey, listen, type Connection, type Server, type ServerSecurityCounters } from "../../src/index.js";

const [countArg, roundsArg, bulkArg] = scriptArgs().filter((a) => !a.startsWith("--"));
const pingCount = Number(countArg ?? 5000);
const rounds = Number(roundsArg ?? 3);
const bulkMs = Number(bulkArg ?? 3000);
const HOST = "127.0.0.1";
const serverKey = generateServerKey();
let lastSecure: ServerSecurityCounters | undefined;

/** A server and one client, plain or secure (a fresh token per connection). */
async function pair(secure: boolean): Promise<MessagePair> {
  const common = { protocolId: BENCH_PROTOCOL_ID, channels: DEFAULT_CHANNELS };
  const server: Server = await listen({ ...common, port: 0, host: HOST, ...(secure ? { secure: { serverKey } } : {}) });
  const accepted = new Promise<Connection>((resolve) => server.once("connection", resolve));
  const target = `${HOST}:${server.address.port}`;
  const connectToken = secure ? createConnectToken({ serverKey, protocolId: BENCH_PROTOCOL_ID, clientId: 1, serverAddresses: [target] }) : undefined;
  const client = await connect(target, { ...common, ...(connectToken !== undefined ? { connectToken } : {}) });
  const serverConn = await accepted;
  return pairOn({ client, serverConn }, CHANNEL.reliableOrdered, true, async () => {
    if (secure) lastSecure = server.counters().secure;
    await client.close().catch(() => undefined);
    await server.close();
  });
}

const ping = { plain: [] as number[], secure: [] as number[] };
const bulk = { plain: [] as number[], secure: [] as number[] };
const pingOptions = { size: 100, count: pingCount, warmup: 300, maxMs: 60_000, lossTimeoutMs: 1000 };
const bulkOptions = { size: 1000, ...RELIABLE_FLOW, durationMs: bulkMs, warmupMs: 500 };
// Round 0 of each arm is a warm-up and not counted.
for (let round = 0; round <= rounds; round++) {
  for (const arm of ["plain", "secure"] as const) {
    const p = await onFreshPair(() => pair(arm === "secure"), (x) => runPing(x, pingOptions), 90_000, `${arm} ping`);
    const t = await onFreshPair(() => pair(arm === "secure"), (x) => runThroughput(x, bulkOptions), bulkMs + 30_000, `${arm} bulk`);
    if (!t.verified || p.corrupt > 0) throw new Error(`${arm}: payloads not verified`);
    if (round === 0) continue;
    ping[arm].push(p.p50Us);
    bulk[arm].push(t.mbPerSec);
  }
}
g.console.log(
  JSON.stringify({
    runtime: runtimeName(),
    pingCount,
    rounds,
    pingP50Us: armsSummary(ping, "plain", "secure"),
    bulkMBps1000: armsSummary(bulk, "plain", "secure"),
    lastSecureServer: lastSecure,
  }),
);
g.process?.exit(0);
g.Deno?.exit(0);
