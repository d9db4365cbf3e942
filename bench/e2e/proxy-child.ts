// The impairment link for the loss scenarios, in its own Node process so that its timers and
// sockets never share an event loop (or a runtime) with the endpoints being measured:
//   node dist/bench/e2e/proxy-child.js <upstreamPort> <lossPercent> <oneWayLatencyMs> <seed> <maxSeconds>
// Listens on 127.0.0.1:0 and prints `PROXY_READY <port>`. When stdin closes (the parent ends
// it, or dies) or after maxSeconds, prints `PROXY_STATS {json}` and exits.

import { startProxy } from "../../runtimes/node/proxy.js";
import { g } from "../lib/host.js";

interface Stdin {
  on(ev: "data" | "end" | "close", fn: () => void): void;
  resume(): void;
}

async function main(): Promise<void> {
  const proc = g.process as unknown as { argv: string[]; stdin: Stdin; exit(code: number): never; stdout: { write(s: string, cb?: () => void): boolean } };
  const [portText, lossText, latencyText, seedText, maxText] = proc.argv.slice(2);
  const upstreamPort = Number(portText);
  const lossRate = Number(lossText) / 100;
  const latencyMs = Number(latencyText);
  if (!(upstreamPort > 0) || !(lossRate >= 0 && lossRate <= 1) || !(latencyMs >= 0)) {
    g.console.error("usage: proxy-child.js <upstreamPort> <lossPercent> <oneWayLatencyMs> <seed> <maxSeconds>");
    proc.exit(2);
  }
  const proxy = await startProxy({
    listen: { host: "127.0.0.1", port: 0, family: 4 },
    upstream: { host: "127.0.0.1", port: upstreamPort, family: 4 },
    // The same link config serves both directions; each direction and flow forks its own
    // seeded stream (docs/SIMULATOR.md), so latency is one-way: RTT = 2 x latencyMs.
    link: { lossRate, latencyMs },
    seed: Number(seedText) || 1,
  });
  proc.stdout.write(`PROXY_READY ${proxy.address.port}\n`);
  let done = false;
  const stop = async (): Promise<void> => {
    if (done) return;
    done = true;
    const stats = proxy.stats();
    await proxy.close();
    proc.stdout.write(`PROXY_STATS ${JSON.stringify({ toUpstream: stats.toUpstream, toClient: stats.toClient, flowsOpened: stats.flowsOpened })}\n`, () => proc.exit(0));
  };
  proc.stdin.on("end", () => void stop());
  proc.stdin.on("close", () => void stop());
  proc.stdin.resume();
  g.setTimeout(() => void stop(), (Number(maxText) || 120) * 1000);
}

void main();
