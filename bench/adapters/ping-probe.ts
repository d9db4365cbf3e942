// Ping-pong only, over ackwire's public API on the runtime it runs on (for profiling the
// per-round-trip path): the e2e ping driver, reliable-ordered channel, 100 B.
//   node|bun|deno dist/bench/adapters/ping-probe.js [count] [channel]
import { runPing, type MessagePair } from "../e2e/driver.js";
import { ackwireEnds } from "../e2e/transports/ackwire.js";
import { g, scriptArgs } from "../lib/host.js";

const [countArg, channelArg] = scriptArgs().filter((a) => !a.startsWith("--"));
const count = Number(countArg ?? 20000);
const channel = Number(channelArg ?? 0);

const ends = await ackwireEnds();
let closing = false;
const pair: MessagePair = {
  reliable: true,
  copiesOnSend: true,
  onA: () => {},
  onB: () => {},
  sendAtoB: (m) => void (closing || ends.client.send(m, { channel })),
  sendBtoA: (m) => void (closing || ends.serverConn.send(m, { channel })),
  flush: () => {},
  close: () => ((closing = true), ends.close()),
};
ends.client.on("message", (m) => pair.onA(m.data));
ends.serverConn.on("message", (m) => pair.onB(m.data));
const result = await runPing(pair, { size: 100, count, warmup: 500, maxMs: 60_000, lossTimeoutMs: 2000 });
g.console.log(JSON.stringify({ p50Us: result.p50Us, p99Us: result.p99Us, samples: result.samples, lost: result.lost, server: ends.server.counters() }));
await pair.close();
