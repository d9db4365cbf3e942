// The session core's share of a ping-pong round trip, without sockets: two sans-IO Endpoints
// wired directly (a transmit is handed to the other endpoint at once, which copies it), one
// 100 B reliable-ordered message each way per round trip, driven in ping-floor.js's order.
// Wall time per round trip on a virtual clock that advances 20 us per datagram, so no ack or
// resend timer fires: what ping-floor.js pays for the Endpoints, minus the sockets.
// Runs alternately over two builds in one process, so the ratio is less exposed to the
// machine's load than two separate runs:
//   node|bun|deno dist/bench/adapters/ping-core.js [rounds] [reps] [other-build-root]
// (other-build-root: a checkout whose dist/src/session/endpoint.js is the "before" build.)
import { Endpoint } from "../../src/session/endpoint.js";
import { DEFAULT_CHANNELS } from "../../src/session/types.js";
import { g, importDynamic, scriptArgs } from "../lib/host.js";

type EndpointClass = typeof Endpoint;
const args = scriptArgs().filter((a) => !a.startsWith("--"));
const rounds = Number(args[0] ?? 200000);
const reps = Number(args[1] ?? 5);
const otherRoot = args[2];

/** Microseconds of wall time per round trip for `n` round trips over a fresh pair. */
function measure(E: EndpointClass, n: number): number {
  const common = { protocolId: 0x45324542, channels: DEFAULT_CHANNELS };
  const server = new E({ ...common, server: true, seed: 2 });
  const client = new E({ ...common, seed: 1 });
  let now = 0;
  let serverUp = false;
  let clientUp = false;
  let echoed = 0;
  const payload = new Uint8Array(100).fill(5);
  const pump = (ep: Endpoint, peer: Endpoint, self: string): boolean => {
    if ((ep.pollTimeout() ?? Infinity) <= now) ep.handleTimeout(now);
    for (let e = ep.pollEvent(); e !== undefined; e = ep.pollEvent()) {
      if (e.type === "message") {
        if (ep === server) ep.send(e.connection, e.data, { channel: 0 });
        else echoed++;
      } else if (e.type === "connect") {
        if (ep === server) serverUp = true;
        else clientUp = true;
      }
    }
    let any = false;
    for (let tx = ep.pollTransmit(now); tx !== undefined; tx = ep.pollTransmit(now)) {
      now += 0.02;
      peer.handleDatagram(now, self, tx.bytes);
      any = true;
    }
    return any;
  };
  const settle = (): void => {
    for (let i = 0; i < 16; i++) {
      const a = pump(client, server, "c:1");
      const b = pump(server, client, "s:1");
      if (!a && !b) return;
    }
  };
  const conn = client.connect(now, "s:1");
  for (let i = 0; i < 5000 && !(serverUp && clientUp); i++) {
    now += 1;
    settle();
  }
  const round = (count: number): void => {
    for (let r = 0; r < count; r++) {
      const before = echoed;
      client.send(conn, payload, { channel: 0 }, now);
      for (let k = 0; k < 8 && echoed === before; k++) settle();
    }
  };
  round(20000); // warm-up
  const t0 = g.performance.now();
  round(n);
  return ((g.performance.now() - t0) * 1000) / n;
}

const builds: { name: string; E: EndpointClass }[] = [{ name: "this", E: Endpoint }];
if (otherRoot !== undefined) {
  const mod = await importDynamic<{ Endpoint: EndpointClass }>(`file://${otherRoot}/dist/src/session/endpoint.js`);
  builds.push({ name: "other", E: mod.Endpoint });
}
const results: Record<string, number[]> = {};
for (let rep = 0; rep < reps; rep++) {
  // ABBA: alternate which build goes first.
  const order = rep % 2 === 0 ? builds : [...builds].reverse();
  for (const b of order) (results[b.name] ??= []).push(measure(b.E, rounds));
}
const median = (v: number[]): number => {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const out: Record<string, unknown> = { rounds, reps };
for (const b of builds) out[`${b.name}UsPerRoundTrip`] = Math.round(median(results[b.name]!) * 1000) / 1000;
if (otherRoot !== undefined) out.ratio = Math.round((median(results.this!) / median(results.other!)) * 1000) / 1000;
g.console.log(JSON.stringify(out));
