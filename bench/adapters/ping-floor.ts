// The floor under ackwire's ping-pong: two sans-IO Endpoints on two sockets (node:dgram on
// Node, Bun.udpSocket on Bun, Deno.listenDatagram on Deno: a receive loop into regions of a
// 64 KiB slab, sends not awaited) with the thinnest possible glue (no Driver, Connection,
// emitter, TurnReceiver or send slab). Compared with ping-probe.js, the difference is what
// src/api and the runtime's adapter cost per round trip; compared with the raw-UDP ping, what
// the session costs. Clocks around the calls also split each round trip into time inside the
// Endpoints (handleDatagram, the drive loop, send; socket sends excluded), inside the socket
// send calls, and the rest (kernel, event loop, receive glue): whether a runtime's gap to its
// raw ping is in the session core or around it. The clock reads add ~0.1-0.3 us per round trip.
//   node|bun dist/bench/adapters/ping-floor.js [count]
//   deno run -A --unstable-net dist/bench/adapters/ping-floor.js [count]
import type { DenoDatagramConn, DenoUdpAddr } from "../../runtimes/deno/index.js";
import { Endpoint } from "../../src/session/endpoint.js";
import { DEFAULT_CHANNELS } from "../../src/session/types.js";
import { g, importDynamic, scriptArgs, type DgramModule, type DgramSocket } from "../lib/host.js";
import { percentileSorted, sortedCopy } from "../lib/stats.js";
import { checkPayload, fillPayload } from "../lib/payload.js";

const count = Number(scriptArgs().find((a) => !a.startsWith("--")) ?? 20000);
const HOST = "127.0.0.1";
type OnMessage = (m: Uint8Array, r: { address: string; port: number }) => void;
const denoNet = (g as unknown as { Deno?: { listenDatagram(o: DenoUdpAddr): DenoDatagramConn } }).Deno;
/** Deno.listenDatagram wrapped as the slice of node:dgram used here. */
const bindDeno = async (): Promise<DgramSocket> => {
  let onMessage: OnMessage = () => {};
  let open = true;
  const conn = denoNet!.listenDatagram({ transport: "udp", hostname: HOST, port: 0 });
  void (async () => {
    let slab = new Uint8Array(65536);
    let used = 0;
    while (open) {
      if (used + 1501 > slab.length) {
        slab = new Uint8Array(65536);
        used = 0;
      }
      try {
        const [d, from] = await conn.receive(slab.subarray(used, used + 1501));
        used += d.length;
        onMessage(d, { address: from.hostname, port: from.port });
      } catch {
        if (!open) return;
      }
    }
  })();
  return {
    on: (_ev: string, fn: OnMessage) => void (onMessage = fn),
    send: (m: Uint8Array, port: number, host: string) => void conn.send(m, { transport: "udp", hostname: host, port }).catch(() => {}),
    address: () => ({ port: conn.addr.port, address: HOST }),
    close: () => {
      open = false;
      conn.close();
    },
  } as unknown as DgramSocket;
};
const bindNode = async (): Promise<DgramSocket> => {
  const dgram = await importDynamic<DgramModule>("node:dgram");
  return new Promise((resolve) => {
    const s = dgram.createSocket({ type: "udp4", lookup: (a: string, _f: unknown, cb: (e: null, a: string, f: number) => void) => cb(null, a, 4) } as never);
    s.bind(0, HOST, () => resolve(s));
  });
};
interface BunUdp {
  readonly port: number;
  send(data: Uint8Array, port: number, address: string): boolean;
  close(): void;
}
const bun = (g as unknown as { Bun?: { udpSocket(o: unknown): Promise<BunUdp> } }).Bun;
/** Bun.udpSocket wrapped as the slice of node:dgram used here. */
const bindBun = async (): Promise<DgramSocket> => {
  let onMessage: OnMessage = () => {};
  const s = await bun!.udpSocket({ hostname: HOST, port: 0, socket: { data: (_s: unknown, d: Uint8Array, port: number, address: string) => onMessage(d, { address, port }) } });
  return {
    on: (_ev: string, fn: OnMessage) => void (onMessage = fn),
    send: (m: Uint8Array, port: number, host: string) => void s.send(m, port, host),
    address: () => ({ port: s.port, address: HOST }),
    close: () => s.close(),
  } as unknown as DgramSocket;
};
const bind = denoNet !== undefined ? bindDeno : bun !== undefined ? bindBun : bindNode;
/** Accumulated microseconds: inside the Endpoints, inside socket sends. */
let coreUs = 0;
let sendUs = 0;
/** coreUs and sendUs at the end of the previous round trip. */
let coreMark = 0;
let sendMark = 0;
const common = { protocolId: 0x45324542, channels: DEFAULT_CHANNELS };
const server = new Endpoint({ ...common, server: true });
const client = new Endpoint({ ...common });
const sServer = await bind();
const sClient = await bind();
const now = (): number => g.performance.now();
type Ep = Endpoint;
const drain = (ep: Ep, sock: DgramSocket, t: number, onMessage: (conn: number, data: Uint8Array) => void): void => {
  for (let round = 0; round < 4; round++) {
    if ((ep.pollTimeout() ?? Infinity) <= t) ep.handleTimeout(t);
    for (let e = ep.pollEvent(); e !== undefined; e = ep.pollEvent()) if (e.type === "message") onMessage(e.connection, e.data);
    let any = false;
    for (let tx = ep.pollTransmit(t); tx !== undefined; tx = ep.pollTransmit(t)) {
      const colon = tx.to.lastIndexOf(":");
      const s0 = now();
      sock.send(tx.bytes.slice(), Number(tx.to.slice(colon + 1)), HOST);
      sendUs += (now() - s0) * 1000;
      any = true;
    }
    if (!any) break;
  }
};
let serverConn = -1;
const buf = new Uint8Array(100);
let seq = 0;
let sentAt = 0;
const rtts: number[] = [];
const cores: number[] = [];
const sends: number[] = [];
let done!: () => void;
const finished = new Promise<void>((r) => (done = r));
const onServerMessage = (conn: number, data: Uint8Array): void => void server.send(conn, data.slice(), { channel: 0 });
let clientConn = -1;
const sendPing = (): void => {
  fillPayload(buf, seq);
  sentAt = now();
  client.send(clientConn, buf, { channel: 0 });
};
const onClientMessage = (_conn: number, data: Uint8Array): void => {
  const t = now();
  if (checkPayload(data) !== seq) return;
  if (seq >= 500) {
    // Per round trip: what accumulated since the previous one (the tail of this handler counts
    // in the next round trip; medians below).
    rtts.push((t - sentAt) * 1000);
    cores.push(coreUs - coreMark);
    sends.push(sendUs - sendMark);
  }
  coreMark = coreUs;
  sendMark = sendUs;
  seq++;
  if (rtts.length >= count) return done();
  sendPing();
};
sServer.on("message", (m: Uint8Array, r: { address: string; port: number }) => {
  const t = now();
  const s0 = sendUs;
  server.handleDatagram(t, `${r.address}:${r.port}`, m);
  drain(server, sServer, t, onServerMessage);
  coreUs += (now() - t) * 1000 - (sendUs - s0);
});
sClient.on("message", (m: Uint8Array, r: { address: string; port: number }) => {
  const t = now();
  const s0 = sendUs;
  client.handleDatagram(t, `${r.address}:${r.port}`, m);
  drain(client, sClient, t, onClientMessage);
  coreUs += (now() - t) * 1000 - (sendUs - s0);
});
const timer = g.setInterval(() => {
  drain(server, sServer, now(), onServerMessage);
  drain(client, sClient, now(), onClientMessage);
}, 5);
clientConn = client.connect(now(), `${HOST}:${sServer.address().port}`);
drain(client, sClient, now(), onClientMessage);
for (let i = 0; i < 500 && server.pollTimeout() === undefined; i++) await new Promise<void>((r) => g.setTimeout(() => r(), 2));
await new Promise<void>((r) => g.setTimeout(() => r(), 50));
void serverConn;
sendPing();
drain(client, sClient, now(), onClientMessage);
await finished;
g.clearInterval(timer);
const sorted = sortedCopy(rtts);
const r1 = (v: number): number => Math.round(v * 100) / 100;
const p50 = (v: number[]): number => percentileSorted(sortedCopy(v), 50);
g.console.log(JSON.stringify({
  runtime: denoNet !== undefined ? "deno" : bun !== undefined ? "bun" : "node",
  floorP50Us: r1(percentileSorted(sorted, 50)),
  p99Us: r1(percentileSorted(sorted, 99)),
  // Per round trip (medians): inside the Endpoints (both ends, application callbacks included),
  // inside the socket send calls; the rest of the p50 is kernel, event loop and receive glue.
  coreP50Us: r1(p50(cores)),
  socketSendP50Us: r1(p50(sends)),
  restUs: r1(percentileSorted(sorted, 50) - p50(cores) - p50(sends)),
  samples: rtts.length,
}));
sServer.close();
sClient.close();
g.Deno?.exit(0);
g.process?.exit(0);
