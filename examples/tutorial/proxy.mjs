// A lossy link in code: the same proxy as `npx ackwire proxy`, started from a script.
// Run: node proxy.mjs [listen host:port] [server host:port]
import { formatProxyStats, startProxy } from "ackwire/node";

const proxy = await startProxy({
  listen: process.argv[2] ?? "127.0.0.1:9000",
  upstream: process.argv[3] ?? "127.0.0.1:7777",
  // Each direction on its own: 10 % loss, 40 ms one-way latency, up to 10 ms jitter.
  link: { lossRate: 0.1, latencyMs: 40, jitterMs: 10 },
  seed: 7,
});
console.log(`proxy on ${proxy.address.host}:${proxy.address.port}`);

process.once("SIGINT", async () => {
  console.log(formatProxyStats(proxy.stats()));
  await proxy.close();
});
