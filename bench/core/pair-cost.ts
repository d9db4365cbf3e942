// CPU of the whole sans-IO stack per message: two Endpoints wired directly (no sockets, no
// driver, no API layer), a reliable-ordered flow from A to B, at most `--window` messages
// unacknowledged (256 by default: many messages per datagram for small sizes; 1 gives one
// message per datagram, the ping-pong and bench:core shape). Both ends, the engine (WASM, CRC
// included) and the datagram copies between them run on this one thread, so the figure is
// what a loopback run would cost above the kernel's part.
//   node|bun|deno dist/bench/core/pair-cost.js [size] [messages] [--window=N]
// Prints one JSON line: CPU microseconds per delivered message (where the runtime reports
// process CPU), wall microseconds per message, datagrams both ways.
import { Endpoint } from "../../src/session/endpoint.js";
import type { Address } from "../../src/session/sans-io.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { g, runtimeName, scriptArgs } from "../lib/host.js";

const [sizeArg, totalArg] = scriptArgs().filter((a) => !a.startsWith("--"));
const size = Number(sizeArg ?? 1000);
const total = Number(totalArg ?? 200_000);
const windowArg = scriptArgs().find((a) => a.startsWith("--window="));
const window = windowArg === undefined ? 256 : Number(windowArg.slice("--window=".length));
/** Virtual time per round: fast enough that no timer but the ack delay fires. */
const STEP_MS = 0.05;
const MAX_ROUNDS = 10_000_000;
if (!(size >= 1 && size <= 1 << 20 && total >= 1 && window >= 1)) throw new Error("pair-cost: size 1..1 MiB, messages >= 1, --window=N >= 1");

const channels = [{ mode: "reliable-ordered" as const }, { mode: "unreliable" as const }];
const a = new Endpoint({ protocolId: 1, maxConnections: 0, channels, seed: 1 });
const b = new Endpoint({ protocolId: 1, server: true, maxConnections: 4, channels, seed: 2 });
const A_NAME: Address = "10.0.0.1:1";
const B_NAME: Address = "10.0.0.2:2";
let now = 0;

/** Every datagram `from` has ready, handed to `to` as from `fromName`; returns how many. */
function pump(from: Endpoint, to: Endpoint, fromName: Address): number {
  let n = 0;
  for (let tx = from.pollTransmit(now); tx !== undefined; tx = from.pollTransmit(now)) {
    to.handleDatagram(now, fromName, tx.bytes);
    n++;
  }
  return n;
}

function service(e: Endpoint, onEvent: (ev: EndpointEvent) => void): void {
  const due = e.pollTimeout();
  if (due !== undefined && due <= now) e.handleTimeout(now);
  for (let ev = e.pollEvent(); ev !== undefined; ev = e.pollEvent()) onEvent(ev);
}

let aConnected = false;
let bConnection = -1;
let delivered = 0;
const onA = (ev: EndpointEvent): void => {
  if (ev.type === "connect") aConnected = true;
};
const onB = (ev: EndpointEvent): void => {
  if (ev.type === "connect") bConnection = ev.connection;
  else if (ev.type === "message") delivered++;
};

const connection = a.connect(now, B_NAME);
for (let i = 0; i < 2000 && !(aConnected && bConnection >= 0); i++) {
  now += 1;
  service(a, onA);
  pump(a, b, A_NAME);
  service(b, onB);
  pump(b, a, B_NAME);
}
if (!aConnected || bConnection < 0) throw new Error("pair-cost: the handshake did not finish");

const cpuUsage = (g as unknown as { process?: { cpuUsage?: () => { user: number; system: number } } }).process?.cpuUsage;
const message = new Uint8Array(size).fill(3);
let sent = 0;
let datagrams = 0;
const cpu0 = cpuUsage?.();
const wall0 = g.performance.now();
for (let round = 0; round < MAX_ROUNDS && delivered < total; round++) {
  now += STEP_MS;
  for (let k = 0; k < 32 && sent - delivered < window; k++, sent++) a.send(connection, message, { channel: 0 });
  service(a, onA);
  datagrams += pump(a, b, A_NAME);
  service(b, onB);
  datagrams += pump(b, a, B_NAME);
}
const wallUs = (g.performance.now() - wall0) * 1000;
const cpu1 = cpuUsage?.();
const cpuUs = cpu0 !== undefined && cpu1 !== undefined ? cpu1.user - cpu0.user + cpu1.system - cpu0.system : undefined;
g.console.log(
  JSON.stringify({
    runtime: runtimeName(),
    size,
    window,
    delivered,
    datagrams,
    cpuUsPerMessage: cpuUs === undefined ? null : +(cpuUs / delivered).toFixed(3),
    wallUsPerMessage: +(wallUs / delivered).toFixed(3),
  }),
);
