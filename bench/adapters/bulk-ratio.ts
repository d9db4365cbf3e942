// ackwire's bulk throughput against the raw UDP ceiling measured in the same process, rounds
// alternated (raw, ackwire, raw, ackwire...) so both see the same machine load. Same drivers
// and flows as bench/e2e: raw window 64 / ack every 16, ackwire reliable-ordered channel 0
// with window 1024 / ack every 64. Size 1000 is the "reliable-ordered 1000 B" goal (MB/s),
// size 100 the "aggregated reliable-ordered 100 B" goal (messages/s against raw packets/s).
//   node|bun|deno dist/bench/adapters/bulk-ratio.js [size] [ms] [rounds]
// Prints one JSON line: per-round figures, medians, the ratio of medians, and ackwire's
// process CPU per delivered message where the runtime reports it.
import { runThroughput, type MessagePair, type ThroughputResult } from "../e2e/driver.js";
import { ackwirePair, CHANNEL } from "../e2e/transports/ackwire.js";
import { rawUdpPair } from "../e2e/transports/raw-udp.js";
import { g, runtimeName, scriptArgs } from "../lib/host.js";
import { median } from "../lib/stats.js";

const [sizeArg, msArg, roundsArg] = scriptArgs().filter((a) => !a.startsWith("--"));
const size = Number(sizeArg ?? 1000);
const durationMs = Number(msArg ?? 600);
const rounds = Number(roundsArg ?? 3);

const cpuUsage = (g as unknown as { process?: { cpuUsage?: () => { user: number; system: number } } }).process?.cpuUsage;

async function once(make: () => Promise<MessagePair>, window: number, ackEvery: number): Promise<{ result: ThroughputResult; cpuUs: number }> {
  const pair = await make();
  const before = cpuUsage?.();
  const result = await runThroughput(pair, { size, window, ackEvery, durationMs, warmupMs: 150 });
  const after = cpuUsage?.();
  await pair.close();
  const cpuUs = before !== undefined && after !== undefined ? after.user - before.user + after.system - before.system : 0;
  return { result, cpuUs };
}

const metric = (r: ThroughputResult): number => (size >= 1000 ? r.mbPerSec : r.messagesPerSec);

const raw: number[] = [];
const ack: number[] = [];
const cpuPerMsgUs: number[] = [];
const rawCpuPerMsgUs: number[] = [];
// CPU of the whole measured run (warm-up included) per message delivered after warm-up. Both
// ends and the kernel's loopback work run on this one thread, so on a loaded machine this is
// steadier than the rates, and raw CPU / ackwire CPU approximates the ratio on an idle one.
const cpuPerMsg = (run: { result: ThroughputResult; cpuUs: number }): number => +(run.cpuUs / (run.result.delivered * ((durationMs + 150) / durationMs))).toFixed(3);
// One uncounted round of each first: the JIT (Bun's especially) is still warming up after the
// 150 ms warm-up of the first run, which made every first ackwire round the slowest.
await once(rawUdpPair, 64, 16);
await once(() => ackwirePair(CHANNEL.reliableOrdered, true), 1024, 64);
for (let i = 0; i < rounds; i++) {
  const r = await once(rawUdpPair, 64, 16);
  raw.push(metric(r.result));
  if (r.cpuUs > 0) rawCpuPerMsgUs.push(cpuPerMsg(r));
  const a = await once(() => ackwirePair(CHANNEL.reliableOrdered, true), 1024, 64);
  if (!a.result.verified) g.console.error("ackwire round not verified", JSON.stringify(a.result));
  ack.push(metric(a.result));
  if (a.cpuUs > 0) cpuPerMsgUs.push(cpuPerMsg(a));
}
const unit = size >= 1000 ? "MB/s" : "msg/s";
g.console.log(
  JSON.stringify({
    runtime: runtimeName(),
    size,
    unit,
    raw: raw.map((x) => Math.round(x * 10) / 10),
    ackwire: ack.map((x) => Math.round(x * 10) / 10),
    rawMedian: Math.round(median(raw) * 10) / 10,
    ackwireMedian: Math.round(median(ack) * 10) / 10,
    ratio: +(median(ack) / median(raw)).toFixed(3),
    ...(cpuPerMsgUs.length > 0 ? { cpuPerMsgUs, rawCpuPerMsgUs, cpuRatio: +(median(rawCpuPerMsgUs) / median(cpuPerMsgUs)).toFixed(3) } : {}),
  }),
);
g.process?.exit(0);
g.Deno?.exit(0);
