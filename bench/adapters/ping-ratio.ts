// ackwire's 100 B ping-pong p50 against the raw UDP ping p50 of the runtime's own socket API,
// measured in the same process with rounds alternated (raw, ackwire, raw, ackwire...) so both
// see the same machine load. Same driver and transports as bench/e2e (reliable-ordered channel
// 0 for ackwire). One uncounted round of each first (JIT warm-up).
//   node|bun dist/bench/adapters/ping-ratio.js [count] [rounds]
//   deno run -A --unstable-net dist/bench/adapters/ping-ratio.js [count] [rounds]
// Prints one JSON line: per-round p50s, their medians and the ratio of the medians, and the
// median process CPU per round trip (both ends run on this one thread, so on a loaded machine
// that is steadier than the p50s).
import { runPing, type MessagePair } from "../e2e/driver.js";
import { ackwirePair, CHANNEL } from "../e2e/transports/ackwire.js";
import { rawUdpPair } from "../e2e/transports/raw-udp.js";
import { g, runtimeName, scriptArgs } from "../lib/host.js";
import { median } from "../lib/stats.js";

const [countArg, roundsArg] = scriptArgs().filter((a) => !a.startsWith("--"));
const count = Number(countArg ?? 5000);
const rounds = Number(roundsArg ?? 3);

const cpuUsage = (g as unknown as { process?: { cpuUsage?: () => { user: number; system: number } } }).process?.cpuUsage;
const cpuUs = (): number => {
  const u = cpuUsage?.();
  return u === undefined ? 0 : u.user + u.system;
};

/** The ping's p50; pushes the process CPU per round trip (warm-up included) onto `cpu`. */
async function p50(make: () => Promise<MessagePair>, reliable: boolean, cpu: number[] = []): Promise<number> {
  const pair = await make();
  try {
    const before = cpuUs();
    const r = await runPing(pair, { size: 100, count, warmup: 300, maxMs: 30_000, lossTimeoutMs: reliable ? 2000 : 50 });
    cpu.push(+((cpuUs() - before) / (r.samples + 300)).toFixed(2));
    return r.p50Us;
  } finally {
    await pair.close();
  }
}

const raw: number[] = [];
const ack: number[] = [];
const rawCpu: number[] = [];
const ackCpu: number[] = [];
await p50(rawUdpPair, false);
await p50(() => ackwirePair(CHANNEL.reliableOrdered, true), true);
for (let i = 0; i < rounds; i++) {
  raw.push(await p50(rawUdpPair, false, rawCpu));
  ack.push(await p50(() => ackwirePair(CHANNEL.reliableOrdered, true), true, ackCpu));
}
const rawMedian = median(raw);
const ackMedian = median(ack);
g.console.log(JSON.stringify({ runtime: runtimeName(), count, raw, ack, rawP50Us: rawMedian, ackP50Us: ackMedian, ratio: +(ackMedian / rawMedian).toFixed(3), cpuUsPerRoundTrip: { raw: median(rawCpu), ack: median(ackCpu) } }));
g.process?.exit(0);
g.Deno?.exit(0);
