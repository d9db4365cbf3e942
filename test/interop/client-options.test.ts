// connect() on Node, Bun and Deno (fixtures/client-options.mjs): a port nothing listens on
// fails fast with ConnectRefusedError where the runtime reports the ICMP port unreachable
// (Node and Bun: their client sockets are connected); Deno's are not, so it waits for the
// timeout. `localHost`/`localPort` bind the client, so Deno runs under a scoped
// --allow-net=host:port grant that does not cover 0.0.0.0.
import { execFile } from "node:child_process";
import { createSocket } from "node:dgram";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { assertBuilt, commandFor, FIXTURES, ROOT, RUNTIMES } from "./helpers.js";

/** A UDP port free on 127.0.0.1 just now (bound, read, released). */
async function freePort(): Promise<number> {
  const s = createSocket("udp4");
  await new Promise<void>((resolve) => s.bind(0, "127.0.0.1", resolve));
  const { port } = s.address();
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

function run(cmd: string, argv: string[]): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, argv, { cwd: FIXTURES, timeout: 30_000 }, (_error, stdout, stderr) => resolve({ stdout, stderr }));
  });
}

describe("connect(): a dead port, and a bound local address", () => {
  for (const runtime of RUNTIMES) {
    it(`${runtime}: ${runtime === "deno" ? "timeout (no ICMP report)" : "ConnectRefusedError"}; localHost/localPort bind the client`, async () => {
      assertBuilt();
      const [serverPort, localPort, deadPort, deadLocalPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
      const script = join(FIXTURES, "client-options.mjs");
      const args = JSON.stringify({ serverPort, localPort, deadPort, deadLocalPort, deadTimeoutMs: runtime === "deno" ? 800 : 20_000 });
      const [cmd, argv] =
        runtime === "deno"
          ? [join(ROOT, "node_modules", ".bin", "deno"), ["run", "--unstable-net", `--allow-net=127.0.0.1:${serverPort},127.0.0.1:${localPort},127.0.0.1:${deadPort},127.0.0.1:${deadLocalPort}`, "--allow-read", "--allow-env", script, args]]
          : (() => {
              const [c, pre] = commandFor(runtime, script);
              return [c, [...pre, args]] as const;
            })();
      const { stdout, stderr } = await run(cmd, [...argv]);
      const line = stdout.split("\n").find((l) => l.startsWith("{") && l.includes('"dead"'));
      expect(line, stdout + stderr.slice(-2000)).toBeDefined();
      const r = JSON.parse(line!) as { runtime: string; dead: { code: string; ms: number }; bound: { serverSaw?: string; echo?: number; error?: string }; unbound: { code: string } };
      const context = line! + stderr.slice(-1500);
      expect(r.runtime).toBe(runtime);
      expect(r.dead.code, context).toBe(runtime === "deno" ? "ERR_CONNECT_TIMEOUT" : "ERR_CONNECT_REFUSED");
      // Refused well before its 20 s timeout (the test would fail on its own timeout otherwise).
      if (runtime !== "deno") expect(r.dead.ms, context).toBeLessThan(15_000);
      expect(r.bound, context).toEqual({ serverSaw: `127.0.0.1:${localPort}`, echo: 42 });
      // Deno's grant covers only the bound addresses: the default 0.0.0.0 bind is refused.
      expect(r.unbound.code, context).toBe(runtime === "deno" ? "ERR_SOCKET" : "connected");
    }, 40_000);
  }
});
