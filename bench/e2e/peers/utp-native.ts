// utp-native: libutp (C++, BitTorrent's uTP / BEP 29) as a prebuilt addon. A net-like
// reliable ordered stream; messages are length-prefixed. Per its README the client must
// send first, which the drivers do (A is the client).

import type { MessagePair } from "../driver.js";
import { benchRequire } from "../../lib/paths.js";
import { FrameReader, FrameWriter } from "../transports/framing.js";
import type { PeerDriver } from "./peer.js";

interface UtpConn {
  write(b: Uint8Array): boolean;
  on(ev: "data", fn: (b: Uint8Array) => void): void;
  on(ev: "error", fn: (e: Error) => void): void;
  destroy(): void;
}
interface UtpServer {
  listen(port: number, host: string, cb: () => void): void;
  address(): { port: number };
  close(): void;
}
interface Utp {
  createServer(onConn: (c: UtpConn) => void): UtpServer;
  connect(port: number, host: string): UtpConn;
}

export const utpNative: PeerDriver = {
  name: "utp-native",
  impl: "native",
  mode: "reliable ordered stream (length-prefixed)",
  // Observed here: with 256 KB or more written ahead of the app-level acks, delivery
  // stops for good (1000 B x 256 in flight: 0 msg/s); 64 KB keeps it flowing.
  maxInFlightBytes: 64 * 1024,
  async pair(): Promise<MessagePair> {
    const require = await benchRequire();
    const utp = require("utp-native") as Utp;
    let accepted!: (c: UtpConn) => void;
    const serverSide = new Promise<UtpConn>((r) => (accepted = r));
    const server = utp.createServer((c) => accepted(c));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const a = utp.connect(server.address().port, "127.0.0.1");
    const toB = new FrameWriter();
    const toA = new FrameWriter();
    let b: UtpConn | null = null;
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
        const y = b !== null ? toA.take() : null;
        if (y !== null && b !== null) b.write(y);
      },
      close: async () => {
        a.destroy();
        b?.destroy();
        server.close();
      },
    };
    const readA = new FrameReader((m) => pair.onA(m));
    const readB = new FrameReader((m) => pair.onB(m));
    a.on("data", (d) => readA.push(d));
    a.on("error", () => {});
    // The server learns of the connection only when the client's first bytes arrive,
    // so B is wired up lazily; the drivers never make B speak first.
    void serverSide.then((conn) => {
      b = conn;
      conn.on("data", (d) => readB.push(d));
      conn.on("error", () => {});
    });
    return pair;
  },
};
