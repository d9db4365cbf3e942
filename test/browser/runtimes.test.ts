// The same page against servers on Node, Bun and Deno (werift runs on all three): reliable and
// unreliable echoes checked, RTT measured, a close the server sees.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { HAVE_CHROMIUM, PAGE_HTML, RuntimeServer, dist, launch, openPage } from "./helpers.js";
import type * as PageServer from "../../demo/page-server.js";

/** Deno's werift about 1 run in 30 completes ICE and never DTLS: the page retries connect(), bounded. */
const ATTEMPTS = 3;

describe.skipIf(!HAVE_CHROMIUM)("browser client against each runtime's server", () => {
  let browser: Browser;
  let pages: typeof PageServer;
  beforeAll(async () => {
    pages = await dist<typeof PageServer>("demo/page-server.js");
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
  });

  for (const runtime of ["node", "bun", "deno"] as const) {
    it(`connects to a ${runtime} server with 5% loss at the server, exchanges, closes`, async () => {
      const site = await pages.servePage(PAGE_HTML);
      const server = new RuntimeServer(runtime, { origin: site.origin, dropTest: 0.05 });
      try {
        const { url, runtime: reported } = await server.waitFor("url");
        expect(reported).toBe(runtime);
        const page = await openPage(browser, site.origin);
        const result = await page.evaluate(
          async ({ url, attempts }) => {
            const { connect } = (globalThis as any).ackwire;
            let conn;
            let tries = 0;
            for (;;) {
              tries++;
              try {
                conn = await connect(url, { protocolId: 0x5eb7e, connectTimeoutMs: 8000 });
                break;
              } catch (error) {
                if (tries >= attempts) throw error;
              }
            }
            const reliable: number[] = [];
            let unreliable = 0;
            conn.on("message", (m: { channel: number; data: Uint8Array }) => {
              if (m.channel === 0) reliable.push(new DataView(m.data.buffer, m.data.byteOffset).getUint32(0));
              else unreliable++;
            });
            const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
            for (let n = 0; n < 200; n++) {
              const b = new Uint8Array(100);
              new DataView(b.buffer).setUint32(0, n);
              conn.send(b, { channel: 0 });
              conn.send(b.slice(), { channel: 1 });
              if (n % 10 === 9) await sleep(20);
            }
            for (let i = 0; i < 750 && reliable.length < 200; i++) await sleep(20);
            const rttMs = conn.stats().rttMs;
            await conn.close({ app: 99 });
            return { reliable, unreliable, rttMs, tries };
          },
          { url: url as string, attempts: ATTEMPTS },
        );
        expect(result.reliable).toEqual(Array.from({ length: 200 }, (_, i) => i));
        expect(result.unreliable).toBeGreaterThan(100);
        expect(result.rttMs).toBeGreaterThan(0);
        const end = await server.waitFor("disconnect");
        expect(end.disconnect).toEqual({ app: 99 });
        expect(end.dropTested as number).toBeGreaterThan(0);
        if (result.tries > 1) console.warn(`${runtime}: connected on attempt ${result.tries} of ${ATTEMPTS}`);
        await page.close();
      } finally {
        server.stop();
        await site.close();
      }
    });
  }
});
