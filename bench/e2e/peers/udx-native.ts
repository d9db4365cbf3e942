// udx-native: libudx (C, prebuilt N-API addon). Reliable ordered byte streams over UDP
// with congestion control; messages are length-prefixed on one stream each way.
// API per its README: new UDX(), createSocket(), bind(port, host), createStream(id),
// stream.connect(socket, remoteId, port, host), Duplex write/'data'.

import type { MessagePair } from "../driver.js";
import { benchRequire } from "../../lib/paths.js";
import { FrameReader, FrameWriter } from "../transports/framing.js";
import type { PeerDriver } from "./peer.js";

interface UdxSocket {
  bind(port: number, host: string): void;
  address(): { port: number };
  close(): Promise<void>;
}
interface UdxStream {
  connect(socket: UdxSocket, remoteId: number, port: number, host: string): void;
  write(b: Uint8Array): boolean;
  on(ev: "data", fn: (b: Uint8Array) => void): void;
  on(ev: "error", fn: (e: Error) => void): void;
  destroy(): void;
}
interface Udx {
  createSocket(): UdxSocket;
  createStream(id: number): UdxStream;
}

export const udxNative: PeerDriver = {
  name: "udx-native",
  impl: "native",
  mode: "reliable ordered stream (length-prefixed)",
  async pair(): Promise<MessagePair> {
    const require = await benchRequire();
    const UDX = require("udx-native") as new () => Udx;
    const u = new UDX();
    const sa = u.createSocket();
    const sb = u.createSocket();
    sa.bind(0, "127.0.0.1");
    sb.bind(0, "127.0.0.1");
    const a = u.createStream(1);
    const b = u.createStream(2);
    a.connect(sa, 2, sb.address().port, "127.0.0.1");
    b.connect(sb, 1, sa.address().port, "127.0.0.1");
    const toB = new FrameWriter();
    const toA = new FrameWriter();
    const pair: MessagePair = {
      reliable: true,
      copiesOnSend: true,
      onA: () => {},
      onB: () => {},
      sendAtoB: (m) => toB.push(m),
      sendBtoA: (m) => toA.push(m),
      flush: () => {
        const x = toB.take();
        if (x !== null) a.write(x);
        const y = toA.take();
        if (y !== null) b.write(y);
      },
      close: async () => {
        a.destroy();
        b.destroy();
        await sa.close();
        await sb.close();
      },
    };
    const readA = new FrameReader((m) => pair.onA(m));
    const readB = new FrameReader((m) => pair.onB(m));
    a.on("data", (d) => readA.push(d));
    b.on("data", (d) => readB.push(d));
    a.on("error", () => {});
    b.on("error", () => {});
    return pair;
  },
};
