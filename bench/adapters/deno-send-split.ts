// Deno only: where a 100 B ping-pong's round trip goes, for the raw Deno.listenDatagram ping
// and for ackwire's (reliable-ordered channel 0), rounds alternated in one process as in
// ping-ratio.js. DatagramConn.prototype.send is wrapped to add up the time spent inside the
// send calls (Deno's send op runs the kernel send, loopback delivery included, before it
// returns); the rest of the p50 is everything else (receive ops, event loop, JS on both ends).
// If the send calls cost the same per datagram for both, ackwire's gap to raw is not in how its
// adapter issues sends. The clock reads around each send add a little to both.
//   deno run -A --unstable-net dist/bench/adapters/deno-send-split.js [count] [rounds]
// Prints one JSON line: medians of the per-round p50s and of the send-call time per round trip.
import { runPing, type MessagePair } from "../e2e/driver.js";
import { ackwirePair, CHANNEL } from "../e2e/transports/ackwire.js";
import { rawUdpPair } from "../e2e/transports/raw-udp.js";
import { g, scriptArgs } from "../lib/host.js";
import { median } from "../lib/stats.js";

interface DenoConnLike {
  send(data: Uint8Array, addr: unknown): Promise<number>;
  close(): void;
}
const deno = (g as unknown as { Deno?: { listenDatagram?(o: { transport: "udp"; hostname: string; port: number }): DenoConnLike; exit(code: number): void } }).Deno;
if (deno?.listenDatagram === undefined) throw new Error("run under deno with --unstable-net");

const [countArg, roundsArg] = scriptArgs().filter((a) => !a.startsWith("--"));
const count = Number(countArg ?? 5000);
const rounds = Number(roundsArg ?? 5);

// Wrap the prototype's send once: every DatagramConn (raw pair and ackwire's sockets) counts.
const probe = deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
const proto = Object.getPrototypeOf(probe) as DenoConnLike;
probe.close();
const send = proto.send;
let sendMs = 0;
let sends = 0;
proto.send = function (this: DenoConnLike, data: Uint8Array, addr: unknown): Promise<number> {
  const t = g.performance.now();
  const sent = send.call(this, data, addr);
  sendMs += g.performance.now() - t;
  sends++;
  return sent;
};

interface Split {
  p50Us: number;
  sendUsPerRoundTrip: number;
  sendsPerRoundTrip: number;
}

async function split(make: () => Promise<MessagePair>, reliable: boolean): Promise<Split> {
  const pair = await make();
  try {
    sendMs = 0;
    sends = 0;
    const r = await runPing(pair, { size: 100, count, warmup: 300, maxMs: 30_000, lossTimeoutMs: reliable ? 2000 : 50 });
    const trips = r.samples + 300;
    return { p50Us: r.p50Us, sendUsPerRoundTrip: +((sendMs * 1000) / trips).toFixed(2), sendsPerRoundTrip: +(sends / trips).toFixed(2) };
  } finally {
    await pair.close();
  }
}

const summary = (xs: Split[]): Split & { restUs: number } => {
  const p50Us = median(xs.map((x) => x.p50Us));
  const sendUs = median(xs.map((x) => x.sendUsPerRoundTrip));
  return { p50Us, sendUsPerRoundTrip: sendUs, sendsPerRoundTrip: median(xs.map((x) => x.sendsPerRoundTrip)), restUs: +(p50Us - sendUs).toFixed(2) };
};
const raw: Split[] = [];
const ack: Split[] = [];
await split(rawUdpPair, false); // uncounted warm-up rounds
await split(() => ackwirePair(CHANNEL.reliableOrdered, true), true);
for (let i = 0; i < rounds; i++) {
  raw.push(await split(rawUdpPair, false));
  ack.push(await split(() => ackwirePair(CHANNEL.reliableOrdered, true), true));
}
g.console.log(JSON.stringify({ runtime: "deno", count, rounds, raw: summary(raw), ack: summary(ack) }));
deno.exit(0);
