// Connection.send({ delayMs }) and close() count from the moment of the call, not from the
// driver's last wake-up (the endpoint's clock between wake-ups is stale: after an idle spell a
// delayed message used to leave early, and a close timed out early). Real loopback sockets,
// the real driver and Endpoint; only lower bounds on time are asserted (shared 2-core box).
import { describe, expect, it } from "vitest";
import { nodeAdapter } from "../../runtimes/node/index.js";
import { connect, createRuntime, listen } from "../../src/index.js";
import { firewalled } from "../interop/helpers.js";

const protocolId = 0xc10c;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe("clock of API calls between wake-ups", () => {
  it("a delayed message sent after an idle spell arrives no earlier than delayMs after send()", async () => {
    const server = await listen({ protocolId, host: "127.0.0.1", port: 0 });
    let arrived: ((at: number) => void) | undefined;
    server.on("connection", (c) => c.on("message", () => arrived?.(performance.now())));
    try {
      const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId });
      const delayMs = 80;
      // Idle spells of different lengths, so the driver's last wake-up (the client's clock
      // sync runs every 100 ms at first) lands at different distances before send().
      const results: string[] = [];
      let early = 0;
      for (const idle of [130, 170, 215, 260, 345]) {
        await sleep(idle);
        const at = new Promise<number>((resolve) => (arrived = resolve));
        const sentAt = performance.now();
        conn.send(new Uint8Array(4), { channel: 0, delayMs });
        const took = (await Promise.race([at, sleep(5000).then(() => Number.NaN)])) - sentAt;
        results.push(`idle ${idle} ms: arrived after ${took.toFixed(1)} ms`);
        expect(Number.isNaN(took), results.join("; ")).toBe(false);
        if (took < delayMs - 1) early++;
      }
      expect(early, results.join("; ")).toBe(0);
      await conn.close();
    } finally {
      await server.close();
    }
  }, 20_000);

  it("close() to a peer gone silent resolves no earlier than closeTimeoutMs after the call", async () => {
    const server = await listen({ protocolId, host: "127.0.0.1", port: 0 });
    const blocked = new Set<string>();
    const walled = createRuntime(firewalled(nodeAdapter, blocked));
    const closeTimeoutMs = 300;
    const results: string[] = [];
    try {
      for (const idle of [130, 185, 240]) {
        const conn = await walled.connect(`127.0.0.1:${server.address.port}`, { protocolId, closeTimeoutMs });
        await sleep(idle);
        blocked.add(`127.0.0.1:${server.address.port}`); // the client hears nothing more: no DISCONNECT_ACK
        const started = performance.now();
        const info = await Promise.race([conn.close(), sleep(10_000).then(() => undefined)]);
        const took = performance.now() - started;
        blocked.clear();
        results.push(`idle ${idle} ms: close took ${took.toFixed(1)} ms`);
        expect(info?.reason, results.join("; ")).toBe("normal");
        expect(took, results.join("; ")).toBeGreaterThanOrEqual(closeTimeoutMs - 1);
      }
    } finally {
      await server.close();
    }
  }, 30_000);
});
