// TCP baseline for the reliable-ordered case: node:net over loopback with Nagle off,
// length-prefixed messages. node:net also exists on Bun and Deno, so it runs on all three.

import type { MessagePair } from "../driver.js";
import { importDynamic, type NetModule, type NetSocket } from "../../lib/host.js";
import { FrameReader, FrameWriter } from "./framing.js";

export async function tcpPair(): Promise<MessagePair> {
  const net = await importDynamic<NetModule>("node:net");
  let accepted!: (s: NetSocket) => void;
  const serverSide = new Promise<NetSocket>((r) => (accepted = r));
  const server = net.createServer((s) => accepted(s));
  await new Promise<void>((resolve, reject) => {
    server.on("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const a = net.connect(server.address().port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    a.once("connect", resolve);
    a.on("error", reject);
  });
  const b = await serverSide;
  a.setNoDelay(true);
  b.setNoDelay(true);

  const toB = new FrameWriter();
  const toA = new FrameWriter();
  const pair: MessagePair = {
    reliable: true,
    copiesOnSend: true, // FrameWriter copies into its batch buffer
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
      server.close();
    },
  };
  const readA = new FrameReader((m) => pair.onA(m));
  const readB = new FrameReader((m) => pair.onB(m));
  a.on("data", (d) => readA.push(d));
  b.on("data", (d) => readB.push(d));
  a.on("error", () => {});
  b.on("error", () => {});
  return pair;
}
