// The floor under ackwire's ping-pong: two sans-IO Endpoints on two sockets (node:dgram, or
// Bun.udpSocket under Bun) with the thinnest possible glue (no Driver, Connection, emitter,
// TurnReceiver or send slab).
// Compared with ping-probe.js, the difference is what src/api and runtimes/node cost per round
// trip; compared with the raw-UDP ping, what the session costs.
//   node|bun dist/bench/adapters/ping-floor.js [count]
import { Endpoint } from "../../src/session/endpoint.js";
import { DEFAULT_CHANNELS } from "../../src/session/types.js";
import { g, importDynamic, scriptArgs, type DgramModule, type DgramSocket } from "../lib/host.js";
import { percentileSorted, sortedCopy } from "../lib/stats.js";
import { checkPayload, fillPayload } from "../lib/payload.js";

const count = Number(scriptArgs().find((a) => !a.startsWith("--")) ?? 20000);
const HOST = "127.0.0.1";
const dgram = await importDynamic<DgramModule>("node:dgram");
interface BunUdp {
  readonly port: number;
  send(data: Uint8Array, port: number, address: string): boolean;
  close(): void;
}
type OnMessage = (m: Uint8Array, r: { address: string; port: number }) => void;
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
const bind = (): Promise<DgramSocket> =>
  bun !== undefined ? bindBun() : new Promise((resolve) => {
    const s = dgram.createSocket({ type: "udp4", lookup: (a: string, _f: unknown, cb: (e: null, a: string, f: number) => void) => cb(null, a, 4) } as never);
    s.bind(0, HOST, () => resolve(s));
  });
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
      sock.send(tx.bytes.slice(), Number(tx.to.slice(colon + 1)), HOST);
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
  if (seq >= 500) rtts.push((t - sentAt) * 1000);
  seq++;
  if (rtts.length >= count) return done();
  sendPing();
};
sServer.on("message", (m: Uint8Array, r: { address: string; port: number }) => {
  const t = now();
  server.handleDatagram(t, `${r.address}:${r.port}`, m);
  drain(server, sServer, t, onServerMessage);
});
sClient.on("message", (m: Uint8Array, r: { address: string; port: number }) => {
  const t = now();
  client.handleDatagram(t, `${r.address}:${r.port}`, m);
  drain(client, sClient, t, onClientMessage);
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
g.console.log(JSON.stringify({ floorP50Us: Math.round(percentileSorted(sorted, 50) * 10) / 10, p99Us: Math.round(percentileSorted(sorted, 99) * 10) / 10, samples: rtts.length }));
sServer.close();
sClient.close();
