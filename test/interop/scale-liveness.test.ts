// One server socket holding 200 concurrent client connections from three processes (Node, Bun,
// Deno), every echo verified; a peer that goes silent (SIGSTOP) is reported unresponsive, then
// timed out; a server killed with SIGKILL is noticed by its clients within the configured
// timeout. Real processes from dist/, real engine; each process's runtime is asserted first.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { assertBuilt, RUNTIMES, startPeer, type Peer, type RuntimeName } from "./helpers.js";

const started: Peer[] = [];
const tmp = mkdtempSync(join(tmpdir(), "ackwire-interop-"));
afterAll(() => {
  for (const peer of started) peer.stop();
  rmSync(tmp, { recursive: true, force: true });
});

async function peer(runtime: RuntimeName, role: string, options: Record<string, unknown>): Promise<Peer> {
  const p = await startPeer(runtime, role, options, 60_000);
  started.push(p);
  return p;
}

const events = (p: Peer, name: string): Record<string, unknown>[] => p.lines.filter((l) => l.event === name);

describe("200 concurrent connections on one server socket", () => {
  it("a Bun server holds 200 clients (70 Node, 65 Bun, 65 Deno) at once; every echo verified", async () => {
    assertBuilt();
    const server = await peer("bun", "server", { events: true, maxConnections: 256 });
    const port = Number((await server.waitFor("listening")).listening);
    const holdFile = join(tmp, "release-200");
    const split: [RuntimeName, number][] = [["node", 70], ["bun", 65], ["deno", 65]];
    const clients = await Promise.all(
      split.map(([runtime, clients]) => peer(runtime, "many", { target: `127.0.0.1:${port}`, clients, messages: 5, holdFile, waitMs: 30_000 })),
    );
    // Wait until the server reports all 200 open at the same time, then let the clients go.
    const deadline = Date.now() + 40_000;
    let peak = 0;
    while (Date.now() < deadline && peak < 200) {
      peak = Math.max(0, ...events(server, "connection").map((l) => Number(l.open)));
      if (clients.some((c) => c.lines.some((l) => "ok" in l))) break; // one finished early: fail below
      await new Promise((r) => setTimeout(r, 50));
    }
    writeFileSync(holdFile, "go");
    expect(peak, "connections the server held at once").toBe(200);
    for (const [i, client] of clients.entries()) {
      const result = (await client.waitFor("ok", 40_000)) as { ok: boolean; verified: number; failures: unknown[]; openAtOnce: number };
      expect(result.failures, `${split[i]![0]} clients`).toEqual([]);
      expect(result.verified).toBe(split[i]![1]);
      expect(result.openAtOnce).toBe(split[i]![1]);
      expect(result.ok).toBe(true);
    }
    // Every client said goodbye: 200 disconnects, all "normal", no corrupted echo requests.
    const until = Date.now() + 10_000;
    while (events(server, "disconnect").length < 200 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    const disconnects = events(server, "disconnect");
    expect(disconnects.length).toBe(200);
    const reasons: Record<string, number> = {};
    for (const l of disconnects) reasons[String(l.reason)] = (reasons[String(l.reason)] ?? 0) + 1;
    expect(reasons).toEqual({ normal: 200 });
    expect(Math.max(...disconnects.map((l) => Number(l.bad)))).toBe(0);
  }, 90_000);
});

// Short timeouts so each case takes a few seconds; the same on both ends.
const LIVENESS = { timeoutMs: 2000, unresponsiveMs: 700 };
const next = (r: RuntimeName): RuntimeName => RUNTIMES[(RUNTIMES.indexOf(r) + 1) % RUNTIMES.length]!;

describe.concurrent("liveness", () => {
  for (const runtime of RUNTIMES) {
    it(`a ${runtime} server reports a silent (SIGSTOPped) ${next(runtime)} client unresponsive, then timed out`, async () => {
      const server = await peer(runtime, "server", { events: true, ...LIVENESS });
      const port = Number((await server.waitFor("listening")).listening);
      const client = await peer(next(runtime), "watch", { target: `127.0.0.1:${port}`, ...LIVENESS });
      await client.waitFor("ready", 20_000);
      client.stop("SIGSTOP");
      const stoppedAt = Date.now();
      try {
        const unresponsive = await server.waitFor("silentMs", LIVENESS.timeoutMs + 3000);
        const disconnect = await server.waitFor("reason", LIVENESS.timeoutMs + 3000);
        const noticedAfterMs = Date.now() - stoppedAt;
        expect(Number(unresponsive.silentMs)).toBeGreaterThanOrEqual(LIVENESS.unresponsiveMs);
        expect(disconnect.reason).toBe("timeout");
        expect(Number(disconnect.atMs)).toBeGreaterThan(Number(unresponsive.atMs));
        // Functional bound: the configured timeout, plus slack for process scheduling on a
        // shared machine (not a speed measurement).
        expect(noticedAfterMs).toBeLessThan(LIVENESS.timeoutMs + 2000);
      } finally {
        client.child.kill("SIGKILL");
      }
    }, 40_000);

    it(`${runtime} clients notice a SIGKILLed ${next(runtime)} server within the configured timeout`, async () => {
      const server = await peer(next(runtime), "server", { ...LIVENESS });
      const port = Number((await server.waitFor("listening")).listening);
      const client = await peer(runtime, "watch", { target: `127.0.0.1:${port}`, ...LIVENESS });
      await client.waitFor("ready", 20_000);
      server.stop("SIGKILL");
      const killedAt = Date.now();
      const unresponsive = await client.waitFor("silentMs", LIVENESS.timeoutMs + 3000);
      const disconnect = (await client.waitFor("reason", LIVENESS.timeoutMs + 3000)) as { reason: string; atMs: number };
      const noticedAfterMs = Date.now() - killedAt;
      expect(disconnect.reason).toBe("timeout");
      expect(disconnect.atMs).toBeGreaterThan(Number(unresponsive.atMs));
      expect(noticedAfterMs).toBeLessThan(LIVENESS.timeoutMs + 2000);
      await client.exited();
    }, 40_000);
  }
});
