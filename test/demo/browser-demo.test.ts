// `npm start -- --browser`: the demo serves a page that joins as a browser client; chromium
// opens it, the page shows live stats (a measured RTT, snapshots arriving), and a screenshot is
// saved under test-output/ (gitignored). The demo still passes its own verdict.
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HAVE_CHROMIUM, launch } from "../browser/helpers.js";
import { demoMain, root } from "./run-demo.js";

describe.skipIf(!HAVE_CHROMIUM)("demo --browser", () => {
  it("serves a page that joins the demo and shows live stats", async () => {
    const child = spawn(process.execPath, [demoMain, "--browser", "--duration", "12", "--clients", "2", "--rebind-at", "0"], { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    const killer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    const browser = await launch();
    try {
      let url: string | undefined;
      for (let i = 0; i < 500 && url === undefined; i++) {
        url = /browser client: open (http:\/\/127\.0\.0\.1:\d+\/)/.exec(stdout)?.[1];
        if (url === undefined) await new Promise((r) => setTimeout(r, 20));
      }
      expect(url, `no page URL in the demo's output: ${stdout} ${stderr}`).toBeDefined();
      const page = await browser.newPage({ viewport: { width: 720, height: 720 } });
      await page.goto(url!);
      // Live: a measured RTT, and snapshots from the 30 Hz game loop with both players in them.
      await page.waitForFunction(() => /^\d+\.\d ms$/.test(document.getElementById("rtt")!.textContent!) && Number(document.getElementById("snapshots")!.textContent) > 30, undefined, { timeout: 20_000 });
      const first = Number(await page.textContent("#snapshots"));
      await page.waitForFunction((n) => Number(document.getElementById("snapshots")!.textContent) > n + 15, first, { timeout: 10_000 });
      expect(await page.textContent("#state")).toMatch(/^open/);
      expect(parseFloat((await page.textContent("#rtt"))!)).toBeGreaterThan(0);
      expect(await page.textContent("#players")).toBe("2");
      const dir = join(root, "test-output");
      mkdirSync(dir, { recursive: true });
      await page.screenshot({ path: join(dir, "demo-browser.png") });
      const code = await exited;
      expect(stdout).toMatch(/RESULT: PASS/);
      expect(code).toBe(0);
      // The demo's end closed the page's connection, as a server shutdown.
      await page.waitForFunction(() => /^closed/.test(document.getElementById("state")!.textContent!), undefined, { timeout: 10_000 });
    } finally {
      clearTimeout(killer);
      child.kill("SIGKILL");
      await browser.close();
    }
  });
});
