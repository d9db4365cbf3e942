// Why a runtime's reliable-ordered 1000 B throughput is low: runs the e2e throughput driver
// (window 1024, ack every 64) over ackwire's public API on the runtime it runs on, then prints
// both connections' stats (resends, dropped packets, lossRate, window) and the driver counters.
//   node|bun|deno dist/bench/adapters/bulk-probe.js [size] [ms]
import { runThroughput } from "../e2e/driver.js";
import { ackwireEnds, pairOn } from "../e2e/transports/ackwire.js";
import { g, scriptArgs } from "../lib/host.js";

const [sizeArg, msArg] = scriptArgs().filter((a) => !a.startsWith("--"));
const size = Number(sizeArg ?? 1000);
const durationMs = Number(msArg ?? 600);

const ends = await ackwireEnds();
const pair = pairOn(ends, 0, true, () => ends.close());
const result = await runThroughput(pair, { size, window: 1024, ackEvery: 64, durationMs, warmupMs: 150 });
const pick = (s: ReturnType<typeof ends.client.stats>) => ({
  rttMs: +s.rttMs.toFixed(3),
  lossRate: +s.lossRate.toFixed(4),
  bwBps: Math.round(s.bandwidthEstimateBps),
  packets: s.packets,
  resends: s.resends,
  duplicates: s.duplicates,
  stale: s.stale,
});
g.console.log(JSON.stringify({ mbps: result.mbPerSec, delivered: result.delivered, sent: result.sent }));
g.console.log("client(sender)", JSON.stringify(pick(ends.client.stats())));
g.console.log("server(receiver)", JSON.stringify(pick(ends.serverConn.stats())));
g.console.log("server driver", JSON.stringify(ends.server.counters()));
await pair.close();
