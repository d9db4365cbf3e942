// A page connects to a Node server over a WebRTC data channel and exchanges reliable-ordered,
// unreliable-sequenced and latest-state messages, each one checked; then RTT and a clean close.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { HAVE_CHROMIUM, PAGE_HTML, dist, launch, openPage } from "./helpers.js";
import type * as Ackwire from "../../src/index.js";
import type * as PageServer from "../../demo/page-server.js";

const PROTOCOL_ID = 0x5eb7c;

describe.skipIf(!HAVE_CHROMIUM)("browser client over WebRTC", () => {
  let browser: Browser;
  let ackwire: typeof Ackwire;
  let pages: typeof PageServer;
  beforeAll(async () => {
    ackwire = await dist<typeof Ackwire>("src/index.js");
    pages = await dist<typeof PageServer>("demo/page-server.js");
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("exchanges every kind of message, measures RTT and closes with a reason the server sees", async () => {
    const site = await pages.servePage(PAGE_HTML);
    const server = await ackwire.listen({ protocolId: PROTOCOL_ID, host: "127.0.0.1", port: 0, webrtc: { port: 0, allowOrigins: [site.origin] } });
    const disconnects: Ackwire.DisconnectInfo[] = [];
    server.on("connection", (c) => {
      // Echo every message on its channel (and key), so the page checks both directions.
      c.on("message", (m) => void c.send(m.data, { channel: m.channel, key: m.key }));
      c.on("disconnect", (info) => disconnects.push(info));
    });
    try {
      const page = await openPage(browser, site.origin);
      const result = await page.evaluate(
        async ({ url, protocolId }) => {
          const { connect } = (globalThis as any).ackwire;
          const conn = await connect(url, { protocolId });
          const got: Record<number, number[]> = { 0: [], 1: [], 5: [] };
          const latest = new Map<number, number>();
          conn.on("message", (m: { channel: number; data: Uint8Array; key?: number }) => {
            const v = new DataView(m.data.buffer, m.data.byteOffset, m.data.byteLength);
            // Every payload: a u32 value then `length - 4` bytes each (value & 0xff).
            for (let i = 4; i < m.data.length; i++) if (m.data[i] !== (v.getUint32(0) & 0xff)) throw new Error("corrupt payload");
            got[m.channel]!.push(v.getUint32(0));
            if (m.channel === 5) latest.set(m.key!, v.getUint32(0));
          });
          const payload = (value: number, length: number) => {
            const b = new Uint8Array(length);
            new DataView(b.buffer).setUint32(0, value);
            b.fill(value & 0xff, 4);
            return b;
          };
          const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
          // Paced: 20 of each per 10 ms tick, for 10 ticks (the data channel drops bursts).
          for (let tick = 0; tick < 10; tick++) {
            for (let i = 0; i < 20; i++) {
              const n = tick * 20 + i;
              conn.send(payload(n, 4 + (n % 300)), { channel: 0 });
              conn.send(payload(n, 100), { channel: 1 });
              conn.send(payload(n, 16), { channel: 5, key: n % 8 });
            }
            await sleep(10);
          }
          // A reliable message large enough to be cut into fragments (each within the channel's datagram).
          conn.send(payload(1000, 5000), { channel: 0 });
          for (let i = 0; i < 300 && (got[0]!.length < 201 || latest.size < 8 || [...latest.values()].some((v) => v < 192)); i++) await sleep(20);
          const stats = conn.stats();
          const info = await conn.close({ app: 77 });
          return { reliable: got[0], sequenced: got[1], latest: [...latest.entries()], rttMs: stats.rttMs, pathMtu: stats.pathMtu, closeReason: info.reason };
        },
        { url: server.webrtc!.url, protocolId: PROTOCOL_ID },
      );
      // Reliable-ordered: every message, in order.
      expect(result.reliable).toEqual([...Array.from({ length: 200 }, (_, i) => i), 1000]);
      // Unreliable-sequenced: never older after newer, and (loopback) most of them.
      for (let i = 1; i < result.sequenced.length; i++) expect(result.sequenced[i]).toBeGreaterThan(result.sequenced[i - 1]!);
      expect(result.sequenced.length).toBeGreaterThan(100);
      // Latest-state: each key ends at the last value sent for it (192..199 for keys 0..7).
      expect(new Map(result.latest)).toEqual(new Map(Array.from({ length: 8 }, (_, k) => [(192 + k) % 8, 192 + k])));
      expect(result.rttMs).toBeGreaterThan(0);
      expect(result.pathMtu).toBeLessThanOrEqual(1160);
      expect(result.closeReason).toEqual({ app: 77 });
      for (let i = 0; i < 100 && disconnects.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(disconnects).toEqual([{ reason: { app: 77 } }]);
      expect(server.webrtc!.counters().offersAnswered).toBe(1);
      await page.close();
    } finally {
      await server.close();
      await site.close();
    }
  });
});
