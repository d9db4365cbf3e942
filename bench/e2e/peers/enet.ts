// enet (npm): the ENet C library compiled to JavaScript (asm.js-era Emscripten) with its
// own node:dgram socket. Reliable packets on channel 0 (ENet orders reliable packets per
// channel). Per its tutorial: createServer / createClient, client.connect(address,
// channels, data, cb), peer.send(channel, Packet), host 'message' events; the host is
// serviced on a timer, here host.start(1) = every 1 ms, and host.flush() after sends.

import type { MessagePair } from "../driver.js";
import { nodeBuffer } from "../../lib/host.js";
import { benchRequire } from "../../lib/paths.js";
import type { PeerDriver } from "./peer.js";

interface EnetPacket {
  data(): Uint8Array;
}
interface EnetPeer {
  send(channel: number, packet: unknown): boolean;
}
interface EnetHost {
  on(ev: "connect", fn: (peer: EnetPeer) => void): void;
  on(ev: "message", fn: (peer: EnetPeer, packet: EnetPacket, channel: number) => void): void;
  address(): { address: string; port: number };
  connect(addr: { address: string; port: number }, channels: number, data: number, cb: (err: Error | undefined, peer: EnetPeer) => void): EnetPeer;
  start(ms: number): void;
  flush(): void;
  destroy(): void;
}
interface EnetModule {
  createServer(opt: object, cb: (err: Error | undefined, host: EnetHost) => void): void;
  createClient(opt: object, cb: (err: Error | undefined, host: EnetHost) => void): void;
  Packet: new (buf: Uint8Array, flags: number) => unknown;
  PACKET_FLAG: { RELIABLE: number };
}

export const enet: PeerDriver = {
  name: "enet",
  impl: "wasm-or-asm.js",
  mode: "reliable ordered packets, channel 0",
  async pair(): Promise<MessagePair> {
    const require = await benchRequire();
    const Buffer = await nodeBuffer();
    const lib = require("enet") as EnetModule;
    const server = await new Promise<EnetHost>((resolve, reject) =>
      lib.createServer({ address: { address: "127.0.0.1", port: 0 }, peers: 2, channels: 1, down: 0, up: 0 }, (err, h) =>
        err ? reject(err) : resolve(h),
      ),
    );
    server.start(1); // a server host is not serviced until started
    const client = await new Promise<EnetHost>((resolve, reject) =>
      lib.createClient({ peers: 1, channels: 1, down: 0, up: 0 }, (err, h) => (err ? reject(err) : resolve(h))),
    );
    const serverPeer = new Promise<EnetPeer>((r) => server.on("connect", (p) => r(p)));
    const clientPeer = await new Promise<EnetPeer>((resolve, reject) =>
      client.connect({ address: "127.0.0.1", port: server.address().port }, 1, 0, (err, p) => (err ? reject(err) : resolve(p))),
    );
    client.start(1);
    const toServer = clientPeer;
    const toClient = await serverPeer;
    const packet = (m: Uint8Array): unknown =>
      new lib.Packet(Buffer.from(m.buffer, m.byteOffset, m.length), lib.PACKET_FLAG.RELIABLE);
    const pair: MessagePair = {
      reliable: true,
      copiesOnSend: true, // the Packet constructor copies into the Emscripten heap
      onA: () => {},
      onB: () => {},
      sendAtoB: (m) => {
        if (toServer.send(0, packet(m))) throw new Error("enet: packet not queued");
      },
      sendBtoA: (m) => {
        if (toClient.send(0, packet(m))) throw new Error("enet: packet not queued");
      },
      flush: () => {
        client.flush();
        server.flush();
      },
      close: async () => {
        client.destroy();
        server.destroy();
      },
    };
    client.on("message", (_p, pk) => pair.onA(pk.data()));
    server.on("message", (_p, pk) => pair.onB(pk.data()));
    return pair;
  },
};
