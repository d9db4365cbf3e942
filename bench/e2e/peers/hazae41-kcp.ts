// @hazae41/kcp: a pure TypeScript KCP-style protocol on WHATWG streams. Per its README and
// sources, a KcpDuplex has `inner` (datagrams: write received bytes in, read segments to
// send out) and `outer` (application messages). It resends each segment on its own timer
// and has no send window, so the driver's app-level window is the only flow control.
// The datagrams ride on this runtime's raw UDP pair.

import type { MessagePair } from "../driver.js";
import { g } from "../../lib/host.js";
import { benchRequire } from "../../lib/paths.js";
import { rawUdpPair } from "../transports/raw-udp.js";
import type { PeerDriver } from "./peer.js";

interface Sized {
  sizeOrThrow(): number;
  writeOrThrow(cursor: unknown): void;
}
interface OpaqueClass {
  new (bytes: Uint8Array): Sized & { bytes: Uint8Array };
}
interface Duplex {
  inner: { readable: ReadableStreamLike<Sized>; writable: WritableStreamLike<Sized> };
  outer: { readable: ReadableStreamLike<{ bytes: Uint8Array }>; writable: WritableStreamLike<Sized> };
  close(): void;
}
interface ReadableStreamLike<T> {
  getReader(): { read(): Promise<{ done: boolean; value?: T }>; cancel(): Promise<void> };
}
interface WritableStreamLike<T> {
  getWriter(): { write(v: T): Promise<void>; close(): Promise<void> };
}
interface KcpModule {
  KcpDuplex: new (p: { conversation?: number }) => Duplex;
}
interface BinaryModule {
  Opaque: OpaqueClass;
  Writable: { writeToBytesOrThrow(w: Sized): Uint8Array };
}

export const hazae41Kcp: PeerDriver = {
  name: "@hazae41/kcp",
  impl: "pure JS",
  mode: "reliable ordered messages",
  async pair(): Promise<MessagePair> {
    const require = await benchRequire();
    const { KcpDuplex } = require("@hazae41/kcp") as KcpModule;
    const { Opaque, Writable } = require("@hazae41/binary") as BinaryModule;
    const carrier = await rawUdpPair();
    const ka = new KcpDuplex({ conversation: 12345 });
    const kb = new KcpDuplex({ conversation: 12345 });
    let closed = false;

    const pump = async <T>(r: ReadableStreamLike<T>, each: (v: T) => void): Promise<void> => {
      const reader = r.getReader();
      while (!closed) {
        const { done, value } = await reader.read();
        if (done || value === undefined) return;
        each(value);
      }
    };
    // A carrier that batches (Bun's sendMany) is flushed once per microtask burst.
    let flushQueued = false;
    const queueFlush = (): void => {
      if (flushQueued) return;
      flushQueued = true;
      g.queueMicrotask(() => {
        flushQueued = false;
        carrier.flush();
      });
    };
    // Segments out of each duplex -> bytes -> carrier.
    const toWire = (seg: Sized, send: (b: Uint8Array) => void): void => {
      send(Writable.writeToBytesOrThrow(seg));
      queueFlush();
    };
    void pump(ka.inner.readable, (seg) => toWire(seg, carrier.sendAtoB)).catch(() => {});
    void pump(kb.inner.readable, (seg) => toWire(seg, carrier.sendBtoA)).catch(() => {});

    const innerA = ka.inner.writable.getWriter();
    const innerB = kb.inner.writable.getWriter();
    // Datagrams in: the carrier's view is only valid during the call, so copy it.
    carrier.onA = (d) => void innerA.write(new Opaque(d.slice())).catch(() => {});
    carrier.onB = (d) => void innerB.write(new Opaque(d.slice())).catch(() => {});

    const outA = ka.outer.writable.getWriter();
    const outB = kb.outer.writable.getWriter();
    const pair: MessagePair = {
      reliable: true,
      copiesOnSend: false, // it keeps the message for its resend timer
      onA: () => {},
      onB: () => {},
      sendAtoB: (m) => void outA.write(new Opaque(m)).then(queueFlush, () => {}),
      sendBtoA: (m) => void outB.write(new Opaque(m)).then(queueFlush, () => {}),
      flush: queueFlush,
      close: async () => {
        closed = true;
        ka.close();
        kb.close();
        await carrier.close();
      },
    };
    void pump(ka.outer.readable, (m) => pair.onA(m.bytes)).catch(() => {});
    void pump(kb.outer.readable, (m) => pair.onB(m.bytes)).catch(() => {});
    return pair;
  },
};
