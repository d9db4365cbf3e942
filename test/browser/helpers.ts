// Browser tests: Debian's chromium driven by playwright-core (no browser download), a page and
// the bundled client (dist/browser/) served from loopback, servers on 127.0.0.1 only.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { ROOT } from "../interop/helpers.js";

export { ROOT };
export const CHROMIUM = "/usr/bin/chromium";
export const HAVE_CHROMIUM = existsSync(CHROMIUM);
if (!HAVE_CHROMIUM) {
  // eslint-disable-next-line no-console
  console.warn(`browser tests SKIPPED: ${CHROMIUM} is not installed (apt-get install chromium; .ci/run does)`);
}

/** The test page: imports the bundle as a module and leaves it at `window.ackwire`. */
export const PAGE_HTML =
  '<!doctype html><meta charset="utf-8"><title>ackwire test page</title><body>ackwire' +
  '<script type="module">import * as ackwire from "/ackwire/ackwire.js"; window.ackwire = ackwire;</script></body>';

/**
 * Chromium names its host candidates with mDNS (*.local) by default, and announces those names
 * with multicast DNS on the real interface: this feature off, it offers plain addresses instead,
 * which the server drops from the offer anyway, and sends no multicast.
 */
export const CHROMIUM_ARGS = ["--disable-features=WebRtcHideLocalIpsWithMdns"];

export async function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

export async function dist<T>(path: string): Promise<T> {
  return (await import(join(ROOT, "dist", path))) as T;
}

/** Opens the page at `origin` and waits until the bundle is imported (`window.ackwire`). */
export async function openPage(browser: Browser, origin: string): Promise<Page> {
  const page = await browser.newPage();
  page.on("pageerror", (error) => console.error("page error:", error));
  await page.goto(origin + "/");
  await page.waitForFunction(() => (globalThis as unknown as { ackwire?: unknown }).ackwire !== undefined, undefined, { timeout: 20_000 });
  return page;
}
