/**
 * Both directions of one connection saturated at once, on the simulator (seeded, virtual
 * clock): a reliable-ordered upload from the client and one from the server, 1000 B messages
 * offered at 1.2x the link, over a bottleneck each way (default 20 Mbit/s, 1.3 ms one way, a
 * 250 KB tail-drop queue). Each direction's acks ride the other direction's data, so they wait
 * in its queue. Prints the goodput each way over the second half of the run, per seed: the
 * limit docs/CONGESTION.md describes ("Both directions saturated at once"), reproduced
 * without network namespaces.
 *   node dist/bench/sim/two-way.js [--rate 20e6] [--owd 1.3] [--seconds 10] [--seeds 1,2,3]
 */
import { Endpoint } from "../../src/session/endpoint.js";
import { Pair } from "../../src/sim/network.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { g, scriptArgs } from "../lib/host.js";

const args = scriptArgs();
const flag = (name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const rate = Number(flag("--rate", "20e6"));
const oneWayMs = Number(flag("--owd", "1.3"));
const seconds = Math.min(120, Math.max(2, Number(flag("--seconds", "10"))));
const seeds = flag("--seeds", "1,2,3").split(",").map(Number);
const PROTOCOL_ID = 0x2a2a7777;

for (const seed of seeds) {
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: seed * 2 + 1 });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: seed * 2 + 2 });
  const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, {
    seed,
    link: { bandwidthBps: rate, latencyMs: oneWayMs, queueBytes: 250_000 },
  });
  const c = client.connect(pair.now, pair.serverAddress);
  let s = -1;
  for (let i = 0; i < 1000 && s < 0; i++) {
    pair.drive({ maxTimeMs: 10, maxSteps: 100_000 });
    for (const e of pair.serverEvents()) if (e.type === "connect") s = e.connection;
    pair.clientEvents();
  }
  if (s < 0) throw new Error(`seed ${seed}: no handshake`);
  const message = new Uint8Array(1000);
  const perMs = (rate / 8 / 1000 / 1000) * 1.2;
  const start = pair.now;
  let debt = 0;
  let up = 0;
  let down = 0;
  for (let t = 0; t < seconds * 1000; t++) {
    for (debt += perMs; debt >= 1; debt--) {
      client.send(c, message, { channel: 0 });
      server.send(s, message, { channel: 0 });
    }
    pair.network.flush();
    pair.drive({ until: start + t + 1, maxSteps: 1_000_000 });
    const counted = t >= (seconds * 1000) / 2;
    for (const e of pair.serverEvents()) if (e.type === "message" && counted) up++;
    for (const e of pair.clientEvents()) if (e.type === "message" && counted) down++;
  }
  const mbps = (n: number): number => +((n * 8000) / (seconds / 2) / 1e6).toFixed(2);
  g.console.log(
    JSON.stringify({ seed, linkMbps: rate / 1e6, oneWayMs, upMbps: mbps(up), downMbps: mbps(down), ceilingMbps: +((rate / 1e6) * (1000 / 1019)).toFixed(2) }),
  );
}
