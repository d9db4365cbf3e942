// ping-floor.js for Deno: the same two bare Endpoints with the thinnest glue, on
// Deno.listenDatagram (a receive loop into regions of a 64 KiB slab, sends not awaited), so
// that ping-probe.js under Deno minus this is what src/api and runtimes/deno cost per round trip.
//   deno run -A --unstable-net dist/bench/adapters/ping-floor-deno.js [count]
import { Endpoint } from "../../src/session/endpoint.js";
import { DEFAULT_CHANNELS } from "../../src/session/types.js";
import { g, scriptArgs, type DgramSocket } from "../lib/host.js";
import { percentileSorted, sortedCopy } from "../lib/stats.js";
import { checkPayload, fillPayload } from "../lib/payload.js";

const count = Number(scriptArgs().find((a) => !a.startsWith("--")) ?? 20000);
const HOST = "127.0.0.1";
type OnMessage = (m: Uint8Array, r: { address: string; port: number }) => void;
interface DenoAddr {
  transport: "udp";
  hostname: string;
  port: number;
}
interface DenoConn {
  readonly addr: DenoAddr;
  receive(buffer?: Uint8Array): Promise<[Uint8Array, DenoAddr]>;
  send(data: Uint8Array, addr: DenoAddr): Promise<number>;
  close(): void;
}
const denoNet = (g as unknown as { Deno: { listenDatagram(o: { transport: "udp"; hostname: string; port: number }): DenoConn } }).Deno;
/** Deno.listenDatagram wrapped as the slice of node:dgram used here. */
const bindDeno = async (): Promise<DgramSocket> => {
  let onMessage: OnMessage = () => {};
  let open = true;
  const conn = denoNet.listenDatagram({ transport: "udp", hostname: HOST, port: 0 });
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
const bind = bindDeno;
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
g.Deno?.exit(0);
