// What the relay (PROTOCOL §8, listenRelay()) costs on loopback, against the same two servers
// connected directly, alternated in one process (direct, relayed, direct, relayed...) so both
// arms see the same host: a 100 B reliable-ordered ping-pong (p50) and reliable-ordered 1000 B
// bulk (MB/s). One process holds the relay and both ends, so the relayed arm's figures include
// the relay's own CPU: they are an upper bound on what relaying costs a peer.
//   node|bun dist/bench/relay/relay.js [pingCount] [rounds] [bulkMs]
//   deno run -A --unstable-net dist/bench/relay/relay.js ...
// Prints one JSON line: per-round figures, medians, relayed/direct ratios, and the relay's
// counters (every datagram of the relayed arms went through it: forwarded = both directions).
// The relayed arms use a relay with its per-side rate limit raised out of the way (what the
// forwarding costs); one more bulk arm per round goes through a relay with the default limit
// (1,000,000 B/s per side), to show what a policed transfer gets.
import { onFreshPair, runPing, runThroughput, type MessagePair } from "../e2e/driver.js";
import { RELIABLE_FLOW } from "../e2e/flows.js";
import { BENCH_PROTOCOL_ID, CHANNEL, pairOn } from "../e2e/transports/ackwire.js";
import { g, runtimeName, scriptArgs } from "../lib/host.js";
import { armsSummary, median } from "../lib/stats.js";
import { DEFAULT_CHANNELS, listen, listenRelay, type Connection, type RelayServer } from "../../src/index.js";

const [countArg, roundsArg, bulkArg] = scriptArgs().filter((a) => !a.startsWith("--"));
const pingCount = Number(countArg ?? 5000);
const rounds = Number(roundsArg ?? 3);
const bulkMs = Number(bulkArg ?? 3000);
const HOST = "127.0.0.1";

/** Two listening servers; B connects to A straight, or through `relay` (a fresh allocation). */
async function serverPair(relay: RelayServer | undefined): Promise<MessagePair> {
  const common = { protocolId: BENCH_PROTOCOL_ID, channels: DEFAULT_CHANNELS };
  const a = await listen({ ...common, port: 0, host: HOST });
  const b = await listen({ ...common, port: 0, host: HOST });
  const accepted = new Promise<Connection>((resolve) => a.once("connection", resolve));
  let target = `${HOST}:${a.address.port}`;
  if (relay !== undefined) {
    const { tokens } = relay.allocate()!;
    a.addRelayRoute(relay.publicAddress, tokens[0]);
    target = b.addRelayRoute(relay.publicAddress, tokens[1]);
  }
  const client = await b.connect(target);
  const serverConn = await accepted;
  return pairOn({ client, serverConn }, CHANNEL.reliableOrdered, true, async () => {
    await Promise.all([a.close(), b.close()]);
  });
}

const relay = await listenRelay({ host: HOST, port: 0, bytesPerSecond: 1e10, burstBytes: 1e10 });
const policed = await listenRelay({ host: HOST, port: 0 });
const ping = { direct: [] as number[], relayed: [] as number[] };
const bulk = { direct: [] as number[], relayed: [] as number[], policed: [] as number[] };
const pingOptions = { size: 100, count: pingCount, warmup: 300, maxMs: 60_000, lossTimeoutMs: 1000 };
const bulkOptions = { size: 1000, ...RELIABLE_FLOW, durationMs: bulkMs, warmupMs: 500 };
// Round 0 of each arm is a warm-up and not counted.
for (let round = 0; round <= rounds; round++) {
  for (const arm of ["direct", "relayed"] as const) {
    const via = arm === "relayed" ? relay : undefined;
    const p = await onFreshPair(() => serverPair(via), (pair) => runPing(pair, pingOptions), 90_000, `${arm} ping`);
    const t = await onFreshPair(() => serverPair(via), (pair) => runThroughput(pair, bulkOptions), bulkMs + 30_000, `${arm} bulk`);
    if (!t.verified || p.corrupt > 0) throw new Error(`${arm}: payloads not verified`);
    if (round === 0) continue;
    ping[arm].push(p.p50Us);
    bulk[arm].push(t.mbPerSec);
  }
  const t = await onFreshPair(() => serverPair(policed), (pair) => runThroughput(pair, bulkOptions), bulkMs + 30_000, "policed bulk");
  if (!t.verified) throw new Error("policed: payloads not verified");
  if (round > 0) bulk.policed.push(t.mbPerSec);
}
const m = (xs: number[]): number => +median(xs).toFixed(2);
g.console.log(
  JSON.stringify({
    runtime: runtimeName(),
    pingCount,
    rounds,
    pingP50Us: armsSummary(ping, "direct", "relayed"),
    bulkMBps1000: armsSummary(bulk, "direct", "relayed"),
    policedMedian: m(bulk.policed),
    relay: relay.counters(),
    policedRelay: policed.counters(),
  }),
);
await relay.close();
await policed.close();
g.process?.exit(0);
g.Deno?.exit(0);
