// Bun only: CPU per datagram of a loopback send, connected socket against unconnected, through
// sendMany (lists of 32) and send(). The figure behind connecting a client's socket to its
// server (runtimes/bun) and the raw pair's sender (bench/e2e/transports/raw-udp.ts).
//   node_modules/.bin/bun dist/bench/adapters/bun-connected-send.js [rounds]
import { g, runtimeName, scriptArgs } from "../lib/host.js";

interface BunUdpSocket {
  readonly port: number;
  send(data: Uint8Array, port?: number, address?: string): boolean;
  sendMany(packets: readonly (Uint8Array | number | string)[]): number;
  close(): void;
}
interface BunGlobal {
  udpSocket(options: {
    hostname: string;
    port: number;
    binaryType: "uint8array";
    connect?: { hostname: string; port: number };
    socket: { data(): void };
  }): Promise<BunUdpSocket>;
}
interface BunProcess {
  cpuUsage(previous?: { user: number; system: number }): { user: number; system: number };
}

if (runtimeName() !== "bun") throw new Error("bun-connected-send: run it with bun");
const bun = (g as unknown as { Bun: BunGlobal }).Bun;
const cpu = (g as unknown as { process: BunProcess }).process;
const rounds = Number(scriptArgs()[0] ?? 3);
const HOST = "127.0.0.1";
const BATCH = 32;
const LISTS = 3000;

let received = 0;
const sink = await bun.udpSocket({ hostname: HOST, port: 0, binaryType: "uint8array", socket: { data: () => void received++ } });
const open = await bun.udpSocket({ hostname: HOST, port: 0, binaryType: "uint8array", socket: { data() {} } });
const connected = await bun.udpSocket({ hostname: HOST, port: 0, binaryType: "uint8array", connect: { hostname: HOST, port: sink.port }, socket: { data() {} } });
const payload = new Uint8Array(1000).fill(1);
const openList: (Uint8Array | number | string)[] = [];
const connectedList: Uint8Array[] = [];
for (let i = 0; i < BATCH; i++) {
  openList.push(payload, sink.port, HOST);
  connectedList.push(payload);
}

/** CPU microseconds per datagram the kernel took, over LISTS calls of `sendBatch`. */
async function measure(sendBatch: () => number): Promise<number> {
  const start = cpu.cpuUsage();
  let sent = 0;
  for (let i = 0; i < LISTS; i++) {
    sent += sendBatch();
    // Let the receiver drain its buffer now and then, so sends are not refused.
    if (i % 4 === 3) await new Promise<void>((resolve) => g.setTimeout(resolve, 0));
  }
  const used = cpu.cpuUsage(start);
  return +((used.user + used.system) / Math.max(1, sent)).toFixed(3);
}

const sendEach = (socket: BunUdpSocket, addressed: boolean): number => {
  let n = 0;
  for (let i = 0; i < BATCH; i++) n += (addressed ? socket.send(payload, sink.port, HOST) : socket.send(payload)) ? 1 : 0;
  return n;
};
const results: Record<string, number[]> = { unconnectedSendMany: [], connectedSendMany: [], unconnectedSend: [], connectedSend: [] };
for (let r = 0; r < rounds; r++) {
  results.unconnectedSendMany!.push(await measure(() => open.sendMany(openList)));
  results.connectedSendMany!.push(await measure(() => connected.sendMany(connectedList)));
  results.unconnectedSend!.push(await measure(() => sendEach(open, true)));
  results.connectedSend!.push(await measure(() => sendEach(connected, false)));
}
g.console.log(JSON.stringify({ runtime: "bun", bytes: payload.length, usPerDatagram: results, received }));
sink.close();
open.close();
connected.close();
