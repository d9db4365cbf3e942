// A page connects to a Node server over a WebRTC data channel and exchanges reliable-ordered,
// unreliable-sequenced and latest-state messages, each one checked; then RTT and a clean close.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { HAVE_CHROMIUM, PAGE_HTML, SECURE_PAGE_HTML, dist, launch, openPage } from "./helpers.js";
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
          // Every message the page's data channel sends, counted under the connection.
          const wire = { count: 0, bytes: 0, full: 0 };
          // The page's socket reads bufferedAmount once per datagram and drops the datagram
          // when the channel holds more than 16 KiB unsent (api/channel-socket.ts): counted.
          const buffered = Object.getOwnPropertyDescriptor(RTCDataChannel.prototype, "bufferedAmount")!;
          Object.defineProperty(RTCDataChannel.prototype, "bufferedAmount", {
            configurable: true,
            get(this: RTCDataChannel) {
              const amount = buffered.get!.call(this) as number;
              if (amount > 16 * 1024) wire.full++;
              return amount;
            },
          });
          const channelSend = RTCDataChannel.prototype.send;
          RTCDataChannel.prototype.send = function (this: RTCDataChannel, data: any) {
            wire.count++;
            wire.bytes += data.byteLength;
            return channelSend.call(this, data);
          } as typeof channelSend;
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
          const sent = { ...wire };
          const info = await conn.close({ app: 77 });
          return { reliable: got[0], sequenced: got[1], latest: [...latest.entries()], rttMs: stats.rttMs, pathMtu: stats.pathMtu, bytesSent: stats.bytesSent, sent, closeReason: info.reason };
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
      // bytesSent counts what DTLS and SCTP add to each datagram (65 bytes) with it: within 1%,
      // and a datagram at most for each one the channel socket dropped, its buffer full
      // (counted in bytesSent but never sent).
      expect(result.sent.count).toBeGreaterThan(20);
      expect(Math.abs(result.bytesSent - (result.sent.bytes + 65 * result.sent.count))).toBeLessThanOrEqual(result.bytesSent * 0.01 + result.sent.full * (1200 + 65));
      expect(result.closeReason).toEqual({ app: 77 });
      for (let i = 0; i < 100 && disconnects.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(disconnects.map((d) => d.reason)).toEqual([{ app: 77 }]);
      // The final figures come with it: the server heard the page's messages.
      expect(disconnects[0]!.stats?.bytesReceived).toBeGreaterThan(0);
      expect(server.webrtc!.counters().offersAnswered).toBe(1);
      await page.close();
    } finally {
      await server.close();
      await site.close();
    }
  });

  it("keeps every reliable message in order with 10% loss each way at the server", async () => {
    const site = await pages.servePage(PAGE_HTML);
    // Outgoing loss: the driver's drop test; incoming: an Endpoint that ignores 10% of what arrives.
    let seed = 7;
    const random = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    let droppedIn = 0;
    class LossyEndpoint extends ackwire.Endpoint {
      override handleDatagram(now: number, from: string, bytes: Uint8Array): void {
        if (random() < 0.1) {
          droppedIn++;
          return;
        }
        super.handleDatagram(now, from, bytes);
      }
    }
    const server = await ackwire.listen({
      protocolId: PROTOCOL_ID, host: "127.0.0.1", port: 0, dropTest: 0.1, seed: 3,
      createEndpoint: (config) => new LossyEndpoint(config),
      webrtc: { port: 0, allowOrigins: [site.origin] },
    });
    server.on("connection", (c) => c.on("message", (m) => void c.send(m.data, { channel: m.channel, key: m.key })));
    try {
      const page = await openPage(browser, site.origin);
      const result = await page.evaluate(
        async ({ url, protocolId }) => {
          const { connect } = (globalThis as any).ackwire;
          const conn = await connect(url, { protocolId, connectTimeoutMs: 20_000 });
          const reliable: number[] = [];
          const sequenced: number[] = [];
          conn.on("message", (m: { channel: number; data: Uint8Array }) => {
            const v = new DataView(m.data.buffer, m.data.byteOffset, m.data.byteLength).getUint32(0);
            (m.channel === 0 ? reliable : sequenced).push(v);
          });
          const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
          for (let n = 0; n < 300; n++) {
            const b = new Uint8Array(100);
            new DataView(b.buffer).setUint32(0, n);
            conn.send(b, { channel: 0 });
            conn.send(b.slice(), { channel: 1 });
            if (n % 10 === 9) await sleep(30);
          }
          for (let i = 0; i < 750 && reliable.length < 300; i++) await sleep(20);
          const stats = conn.stats();
          const info = await conn.close();
          return { reliable, sequenced, rttMs: stats.rttMs, closeReason: info.reason };
        },
        { url: server.webrtc!.url, protocolId: PROTOCOL_ID },
      );
      expect(result.reliable).toEqual(Array.from({ length: 300 }, (_, i) => i));
      for (let i = 1; i < result.sequenced.length; i++) expect(result.sequenced[i]).toBeGreaterThan(result.sequenced[i - 1]!);
      // About 81% of the unreliable echoes make both lossy trips; far fewer would mean a stall.
      expect(result.sequenced.length).toBeGreaterThan(150);
      expect(result.sequenced.length).toBeLessThan(300);
      expect(droppedIn).toBeGreaterThan(0);
      expect(server.counters().dropTested).toBeGreaterThan(0);
      expect(result.rttMs).toBeGreaterThan(0);
      expect(result.closeReason).toBe("normal");
      await page.close();
    } finally {
      await server.close();
      await site.close();
    }
  });

  it("counts and drops garbage sent over a data channel, refuses a reliable channel, and stays up", async () => {
    const site = await pages.servePage(PAGE_HTML);
    const server = await ackwire.listen({ protocolId: PROTOCOL_ID, host: "127.0.0.1", port: 0, webrtc: { port: 0, allowOrigins: [site.origin] } });
    server.on("connection", (c) => c.on("message", (m) => void c.send(m.data, { channel: m.channel })));
    try {
      const page = await openPage(browser, site.origin);
      const sent = await page.evaluate(
        async ({ url, protocolId }) => {
          const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
          // A peer connection of its own, not ackwire's client: whatever bytes it likes.
          async function rawPeer(init: RTCDataChannelInit) {
            const pc = new RTCPeerConnection();
            const dc = pc.createDataChannel("ackwire", init);
            dc.binaryType = "arraybuffer";
            await pc.setLocalDescription(await pc.createOffer());
            while (pc.iceGatheringState !== "complete") await sleep(10);
            const r = await fetch(url, { method: "POST", headers: { "content-type": "application/sdp" }, body: pc.localDescription!.sdp });
            await pc.setRemoteDescription({ type: "answer", sdp: await r.text() });
            return { pc, dc };
          }
          const garbage = await rawPeer({ ordered: false, maxRetransmits: 0 });
          for (let i = 0; i < 100 && garbage.dc.readyState !== "open"; i++) await sleep(20);
          let seed = 1;
          const counts = { binary: 0, text: 0, oversize: 0 };
          for (let i = 0; i < 200; i++) {
            seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
            const b = new Uint8Array(1 + (seed % 1400));
            for (let j = 0; j < b.length; j++) b[j] = (seed >>> (j % 24)) & 0xff;
            garbage.dc.send(b);
            counts.binary++;
            if (i % 20 === 0) {
              garbage.dc.send("not a datagram");
              counts.text++;
              garbage.dc.send(new Uint8Array(4000));
              counts.oversize++;
            }
            if (i % 5 === 4) await sleep(10);
          }
          // A reliable, ordered channel: not ackwire's carrier; the server closes it.
          const reliable = await rawPeer({ ordered: true });
          let reliableClosed = false;
          reliable.dc.addEventListener("close", () => (reliableClosed = true));
          for (let i = 0; i < 250 && !reliableClosed; i++) await sleep(20);
          await sleep(200);
          garbage.pc.close();
          reliable.pc.close();
          // The server still serves a real client.
          const { connect } = (globalThis as any).ackwire;
          const conn = await connect(url, { protocolId });
          let echoed = 0;
          conn.on("message", () => echoed++);
          conn.send(new Uint8Array([1, 2, 3]), { channel: 0 });
          for (let i = 0; i < 250 && echoed === 0; i++) await sleep(20);
          await conn.close();
          return { ...counts, reliableClosed, echoed };
        },
        { url: server.webrtc!.url, protocolId: PROTOCOL_ID },
      );
      expect(sent.echoed).toBe(1);
      expect(sent.reliableClosed).toBe(true);
      const webrtc = server.webrtc!.counters();
      expect(webrtc.badChannels).toBe(1);
      // Text and over-long messages are the carrier's drops; the binary ones reach the endpoint,
      // which drops them. The channel has no retransmits, so a few may be lost on the way.
      expect(webrtc.badMessages).toBeLessThanOrEqual(sent.text + sent.oversize);
      expect(webrtc.badMessages).toBeGreaterThanOrEqual(0.8 * (sent.text + sent.oversize));
      const drops = server.counters().session!.drops;
      const dropped = Object.values(drops).reduce((a, b) => a + b, 0);
      expect(dropped).toBeGreaterThanOrEqual(sent.binary * 0.8);
      expect(server.connections.size).toBeLessThanOrEqual(1);
      await page.close();
    } finally {
      await server.close();
      await site.close();
    }
  });

  it("connects to a secure server with a connect token (ackwire/browser/secure); plain ackwire/browser says what to import", async () => {
    const site = await pages.servePage(SECURE_PAGE_HTML);
    const serverKey = ackwire.generateServerKey();
    const server = await ackwire.listen({ protocolId: PROTOCOL_ID, host: "127.0.0.1", port: 0, secure: { serverKey }, webrtc: { port: 0, allowOrigins: [site.origin] } });
    server.on("connection", (c) => c.on("message", (m) => void c.send(m.data, { channel: m.channel })));
    try {
      const token = ackwire.createConnectToken({ serverKey, protocolId: PROTOCOL_ID, clientId: 42n, serverAddresses: [`127.0.0.1:${server.address.port}`] });
      const page = await openPage(browser, site.origin);
      const result = await page.evaluate(
        async ({ url, protocolId, token }) => {
          const { connect } = (globalThis as any).ackwire;
          const conn = await connect(url, { protocolId, connectToken: new Uint8Array(token) });
          let echoed: number[] = [];
          conn.on("message", (m: { data: Uint8Array }) => (echoed = [...m.data]));
          conn.send(new Uint8Array([9, 8, 7]), { channel: 0 });
          for (let i = 0; i < 250 && echoed.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
          await conn.close();
          return echoed;
        },
        { url: server.webrtc!.url, protocolId: PROTOCOL_ID, token: [...token] },
      );
      expect(result).toEqual([9, 8, 7]);
      // The datagrams went through the secure layer: an association opened, sealed datagrams accepted.
      expect(server.counters().secure!.opened).toBe(1);
      expect(server.counters().secure!.accepted).toBeGreaterThan(2);
      await page.close();
      const plain = await pages.servePage(PAGE_HTML);
      try {
        const page2 = await openPage(browser, plain.origin);
        const message = await page2.evaluate(async ({ url, token }) => {
          try {
            await (globalThis as any).ackwire.connect(url, { protocolId: 1, connectToken: new Uint8Array(token) });
            return "connected";
          } catch (error) {
            return String((error as Error).message);
          }
        }, { url: server.webrtc!.url, token: [...token] });
        expect(message).toMatch(/ackwire\/browser\/secure/);
        await page2.close();
      } finally {
        await plain.close();
      }
    } finally {
      await server.close();
      await site.close();
    }
  });
});
