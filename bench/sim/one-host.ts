// One host opening 1,000 connections from fresh source ports (100 new ports a second) while 10
// honest hosts join, one every 2 s, on the simulator (bench/sim/one-host-sim.ts; virtual time,
// so the figures do not depend on the machine). Prints one JSON line per server configuration:
// the slots the attacker holds after 30 s, how many honest hosts connected, and the server's
// handshake counters.
//   node dist/bench/sim/one-host.js [attempts=1000]
import { g, scriptArgs } from "../lib/host.js";
import { attack } from "./one-host-sim.js";

const attempts = Number(scriptArgs().filter((a) => !a.startsWith("--"))[0] ?? 1000);
for (const [label, server] of [
  ["64 slots, default rate (10/s per host), no per-host cap", {}],
  ["256 slots, default rate, no per-host cap", { maxConnections: 256 }],
  ["64 slots, rate 1000/s per host, no per-host cap", { handshakeRatePerAddress: 1000 }],
  ["64 slots, rate 1000/s per host, maxConnectionsPerHost 8", { handshakeRatePerAddress: 1000, maxConnectionsPerHost: 8 }],
] as const) {
  const started = Date.now();
  const r = attack(7, attempts, server);
  g.console.log(
    JSON.stringify({
      run: label,
      attackerConnections: r.attackerConnected,
      honestConnected: `${r.honestConnected}/${r.honestTotal}`,
      handshakeRateLimited: r.counters.handshakeRateLimited,
      hostFull: r.counters.hostFull,
      deniesSent: r.counters.deniesSent,
      wallMs: Date.now() - started,
    }),
  );
}
