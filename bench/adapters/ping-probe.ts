// Ping-pong only, over ackwire's public API on the runtime it runs on (for profiling the
// per-round-trip path): the e2e ping driver, reliable-ordered channel, 100 B.
//   node|bun|deno dist/bench/adapters/ping-probe.js [count] [channel]
import { runPing } from "../e2e/driver.js";
import { ackwireEnds, pairOn } from "../e2e/transports/ackwire.js";
import { g, scriptArgs } from "../lib/host.js";

const [countArg, channelArg] = scriptArgs().filter((a) => !a.startsWith("--"));
const count = Number(countArg ?? 20000);
const channel = Number(channelArg ?? 0);

const ends = await ackwireEnds();
const pair = pairOn(ends, channel, true, () => ends.close());
const result = await runPing(pair, { size: 100, count, warmup: 500, maxMs: 60_000, lossTimeoutMs: 2000 });
g.console.log(JSON.stringify({ p50Us: result.p50Us, p99Us: result.p99Us, samples: result.samples, lost: result.lost, server: ends.server.counters() }));
await pair.close();
