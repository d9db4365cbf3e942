// node-kcp: skywind3000's KCP (C) as a node-gyp addon. Message mode (not stream), turbo
// settings from the KCP README: nodelay(1, 10, 2, 1) = no-delay on, 10 ms internal
// interval, fast resend after 2 skips, congestion window off; windows raised to 1024.
// The datagrams ride on this runtime's raw UDP pair (node:dgram on Node).

import type { MessagePair } from "../driver.js";
import { g } from "../../lib/host.js";
import { benchRequire } from "../../lib/paths.js";
import { rawUdpPair } from "../transports/raw-udp.js";
import type { PeerDriver } from "./peer.js";

interface KcpObject {
  nodelay(nodelay: number, interval: number, resend: number, nc: number): number;
  wndsize(snd: number, rcv: number): number;
  output(fn: (data: Uint8Array, size: number) => void): void;
  input(data: Uint8Array): number;
  send(data: Uint8Array): number;
  recv(): Uint8Array | undefined;
  update(nowMs: number): void;
  flush(): void;
}
interface KcpModule {
  KCP: new (conv: number, context: object) => KcpObject;
}

const CONVERSATION = 0x61636b77; // any id, the same on both ends

export const nodeKcp: PeerDriver = {
  name: "node-kcp",
  impl: "native",
  mode: "reliable ordered messages (KCP turbo mode)",
  async pair(): Promise<MessagePair> {
    const require = await benchRequire();
    // package.json "main" is include_dirs.js (for addon builders); index.js is the binding.
    const kcp = require("node-kcp/index.js") as KcpModule;
    const carrier = await rawUdpPair();
    const ka = new kcp.KCP(CONVERSATION, {});
    const kb = new kcp.KCP(CONVERSATION, {});
    for (const k of [ka, kb]) {
      k.nodelay(1, 10, 2, 1);
      k.wndsize(1024, 1024);
    }
    // KCP's output hands a fresh copy of each datagram, so the carrier may keep it.
    ka.output((data, size) => carrier.sendAtoB(data.length === size ? data : data.subarray(0, size)));
    kb.output((data, size) => carrier.sendBtoA(data.length === size ? data : data.subarray(0, size)));
    ka.update(Date.now());
    kb.update(Date.now());

    const pair: MessagePair = {
      reliable: true,
      copiesOnSend: true, // ikcp_send copies
      onA: () => {},
      onB: () => {},
      sendAtoB: (m) => void ka.send(m),
      sendBtoA: (m) => void kb.send(m),
      flush: () => {
        ka.flush();
        kb.flush();
        carrier.flush();
      },
      close: async () => {
        g.clearInterval(ticker);
        await carrier.close();
      },
    };
    // Acks for many input datagrams are sent together on the next turn of the loop.
    let flushQueued = false;
    const later = g.setImmediate ?? ((fn: () => void) => g.setTimeout(fn, 0));
    const queueFlush = (): void => {
      if (flushQueued) return;
      flushQueued = true;
      later(() => {
        flushQueued = false;
        pair.flush();
      });
    };
    const drain = (k: KcpObject, deliver: (m: Uint8Array) => void): void => {
      for (let i = 0; i < 100000; i++) {
        const m = k.recv();
        if (m === undefined) return;
        deliver(m);
      }
    };
    carrier.onB = (d) => {
      kb.input(d);
      drain(kb, (m) => pair.onB(m));
      queueFlush();
    };
    carrier.onA = (d) => {
      ka.input(d);
      drain(ka, (m) => pair.onA(m));
      queueFlush();
    };
    // KCP's clock: retransmission and window probes happen inside update().
    const ticker = g.setInterval(() => {
      const now = Date.now();
      ka.update(now);
      kb.update(now);
      carrier.flush();
    }, 5);
    return pair;
  },
};
