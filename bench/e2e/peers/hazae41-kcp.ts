// @hazae41/kcp: a pure TypeScript KCP-style protocol on WHATWG streams. Per its README and
// sources, a KcpDuplex has `inner` (datagrams: write received bytes in, read segments to
// send out) and `outer` (application messages). It resends each segment on its own timer
// and has no send window, so the driver's app-level window is the only flow control.
// The datagrams ride on this runtime's raw UDP pair.

import type { MessagePair } from "../driver.js";
import { g, importDynamic } from "../../lib/host.js";
import { benchDir } from "../../lib/paths.js";
import { rawUdpPair } from "../transports/raw-udp.js";
import type { PeerDriver } from "./peer.js";

interface CursorLike {
  writeOrThrow(bytes: Uint8Array): void;
}
interface Sized {
  sizeOrThrow(): number;
  writeOrThrow(cursor: CursorLike): void;
}
interface Duplex {
  inner: { readable: ReadableStreamLike<Sized>; writable: WritableStreamLike<{ bytes: Uint8Array }> };
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
interface CursorModule {
  Cursor: new (bytes: Uint8Array) => CursorLike;
}

/**
 * The package is ESM (its CommonJS build requires an ESM-only dependency), so it is
 * imported by file URL from bench/node_modules; its own imports resolve from there.
 * Cursor is the @hazae41/cursor version KCP itself imports (the one next to it).
 */
async function load(): Promise<KcpModule & CursorModule> {
  const root = "file://" + benchDir() + "node_modules/@hazae41/";
  const kcp = await importDynamic<KcpModule>(root + "kcp/dist/esm/index.mjs");
  const cursor = await importDynamic<CursorModule>(root + "cursor/dist/esm/index.mjs");
  return { KcpDuplex: kcp.KcpDuplex, Cursor: cursor.Cursor };
}

/** A message as the library wants it: sized, writable into its cursor. */
class Bytes implements Sized {
  constructor(readonly bytes: Uint8Array) {}
  sizeOrThrow(): number {
    return this.bytes.length;
  }
  writeOrThrow(cursor: CursorLike): void {
    cursor.writeOrThrow(this.bytes);
  }
}

export const hazae41Kcp: PeerDriver = {
  name: "@hazae41/kcp",
  impl: "pure JS",
  mode: "reliable ordered messages",
  // It has no send window and sends one datagram per message: a burst larger than the
  // receiver's socket buffer (Bun and Deno cannot raise it) is dropped by the kernel and
  // each lost segment waits for its 300 ms resend timer. The driver's window stands in for
  // the missing one, at the raw-UDP setting (64 in flight).
  maxInFlightMessages: 64,
  async pair(): Promise<MessagePair> {
    const { KcpDuplex, Cursor } = await load();
    const serialize = (seg: Sized): Uint8Array => {
      const out = new Uint8Array(seg.sizeOrThrow());
      seg.writeOrThrow(new Cursor(out));
      return out;
    };
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
      send(serialize(seg));
      queueFlush();
    };
    void pump(ka.inner.readable, (seg) => toWire(seg, carrier.sendAtoB)).catch(() => {});
    void pump(kb.inner.readable, (seg) => toWire(seg, carrier.sendBtoA)).catch(() => {});

    const innerA = ka.inner.writable.getWriter();
    const innerB = kb.inner.writable.getWriter();
    // Datagrams in: the carrier's view is only valid during the call, so copy it.
    carrier.onA = (d) => void innerA.write(new Bytes(d.slice())).catch(() => {});
    carrier.onB = (d) => void innerB.write(new Bytes(d.slice())).catch(() => {});

    const outA = ka.outer.writable.getWriter();
    const outB = kb.outer.writable.getWriter();
    const pair: MessagePair = {
      reliable: true,
      copiesOnSend: false, // it keeps the message for its resend timer
      onA: () => {},
      onB: () => {},
      sendAtoB: (m) => void outA.write(new Bytes(m)).then(queueFlush, () => {}),
      sendBtoA: (m) => void outB.write(new Bytes(m)).then(queueFlush, () => {}),
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
