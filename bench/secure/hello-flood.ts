// A HELLO flood from spoofed sources against a secure server, on the simulator (virtual time,
// so the figures do not depend on the machine): bench/secure/hello-flood-sim.ts. Runs the
// same honest clients without a flood (the baseline) and under floods of growing size, and
// prints one JSON line per run: the honest clients' connect times (virtual ms), the server's
// bytes in and out (all, and to / from the spoofed addresses), and its secure-layer counters.
//   node dist/bench/secure/hello-flood.js [hosts=1000] [ratePerHost=20] [honest=4]
import { g, scriptArgs } from "../lib/host.js";
import { runHelloFlood } from "./hello-flood-sim.js";

const [hostsArg, rateArg, honestArg] = scriptArgs().filter((a) => !a.startsWith("--"));
const hosts = Number(hostsArg ?? 1000);
const ratePerHost = Number(rateArg ?? 20);
const honest = Number(honestArg ?? 4);

for (const [label, h, rate] of [
  ["baseline (no flood)", 1, 0],
  ["200 hosts at the budget (11/s each)", 200, 11],
  [`${hosts} hosts at ${ratePerHost}/s each`, hosts, ratePerHost],
] as const) {
  const started = Date.now();
  const r = runHelloFlood({ hosts: h, ratePerHost: rate, honest });
  const c = r.security;
  g.console.log(
    JSON.stringify({
      run: label,
      hellosSent: r.hellosSent,
      connectMs: r.connectMs,
      maxConnectMs: Math.max(...r.connectMs),
      bytesIn: r.bytesIn,
      bytesOut: r.bytesOut,
      outPerIn: Number((r.bytesOut / r.bytesIn).toFixed(4)),
      spoofedBytesIn: r.spoofedBytesIn,
      spoofedBytesOut: r.spoofedBytesOut,
      maxAssociations: r.maxAssociations,
      opened: c.opened,
      badToken: c.badToken,
      rateLimited: c.rateLimited,
      retried: c.retried,
      wallMs: Date.now() - started,
    }),
  );
}
