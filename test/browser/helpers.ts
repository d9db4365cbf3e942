// Browser tests: Debian's chromium driven by playwright-core (no browser download), a page and
// the bundled client (dist/browser/) served from loopback, servers on 127.0.0.1 only.
import { spawn } from "node:child_process";
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

/** The same page with ackwire/browser/secure (the client with the secure layer). */
export const SECURE_PAGE_HTML = PAGE_HTML.replace("/ackwire/ackwire.js", "/ackwire/secure/ackwire.js");

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

/** A server fixture on `runtime` (JSON lines on stdout), killed by `stop()` or after 90 s. */
export class RuntimeServer {
  readonly lines: Record<string, unknown>[] = [];
  readonly stderr: string[] = [];
  readonly child: import("node:child_process").ChildProcess;
  #exited = false;

  constructor(runtime: "node" | "bun" | "deno", args: unknown) {
    const script = join(ROOT, "test", "browser", "fixtures", "webrtc-server.mjs");
    const bin = (name: string): string => join(ROOT, "node_modules", ".bin", name);
    // Deno: werift lists the host's interfaces (--allow-sys) and binds UDP (--unstable-net is not needed: node:dgram).
    const [cmd, argv] =
      runtime === "node" ? [process.execPath, [script]] : runtime === "bun" ? [bin("bun"), [script]] : [bin("deno"), ["run", "--allow-net", "--allow-read", "--allow-env", "--allow-sys", script]];
    this.child = spawn(cmd, [...argv, JSON.stringify(args)], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let buffer = "";
    this.child.stdout!.on("data", (chunk: Buffer) => {
      buffer += chunk.toString("utf8");
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line.startsWith("{")) this.lines.push(JSON.parse(line) as Record<string, unknown>);
      }
    });
    this.child.stderr!.on("data", (chunk: Buffer) => this.stderr.push(chunk.toString("utf8")));
    this.child.on("exit", () => (this.#exited = true));
    setTimeout(() => this.stop(), 90_000).unref();
  }

  async waitFor(key: string, ms = 30_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + ms;
    for (;;) {
      const line = this.lines.find((l) => key in l);
      if (line !== undefined) return line;
      if (this.#exited || Date.now() > deadline) throw new Error(`no "${key}" from the server (exited: ${this.#exited}); stderr: ${this.stderr.join("").slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  stop(): void {
    if (!this.#exited) this.child.kill("SIGKILL");
  }
}
