// Address migration seen through ackwire/worker: a server whose transport runs on a worker
// thread, a client behind the UDP proxy whose upstream port changes mid-session (a NAT
// rebinding). The worker's connection object on this thread must emit "migrate" and carry the
// new address, and the echo must go on.
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { startProxy } from "../../runtimes/node/proxy.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const workerApi = (await import(pathToFileURL(join(ROOT, "dist", "src", "worker", "index.js")).href)) as typeof import("../../src/worker/index.js");
const rootApi = (await import(pathToFileURL(join(ROOT, "dist", "src", "index.js")).href)) as typeof import("../../src/index.js");
const PROTOCOL_ID = 0x4d494752;

describe("ackwire/worker: address migration", () => {
  it("the server's worker connection emits migrate with the new address and keeps echoing", async () => {
    const server = await workerApi.listen({ port: 0, host: "127.0.0.1", protocolId: PROTOCOL_ID });
    const moves: { from: string; to: string; address: string }[] = [];
    server.on("connection", (conn) => {
      conn.on("message", (m) => conn.send(m.data, { channel: m.channel }));
      conn.on("migrate", ({ from, to }) => moves.push({ from, to, address: conn.address }));
    });
    const proxy = await startProxy({
      listen: { host: "127.0.0.1", port: 0, family: 4 },
      upstream: { host: "127.0.0.1", port: server.address.port, family: 4 },
      link: {},
      seed: 5,
    });
    try {
      const client = await rootApi.connect(`127.0.0.1:${proxy.address.port}`, { protocolId: PROTOCOL_ID });
      let echoed = 0;
      client.on("message", () => void echoed++);
      const exchange = async (count: number, limitMs: number): Promise<void> => {
        const target = echoed + count;
        for (let i = 0; i < count; i++) client.send(Uint8Array.of(i), { channel: 0 });
        for (const end = Date.now() + limitMs; echoed < target && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
      };
      await exchange(20, 5000);
      expect(echoed).toBe(20);
      proxy.rebind();
      await exchange(20, 10_000);
      expect(echoed).toBe(40);
      expect(moves.length).toBe(1);
      expect(moves[0]!.to).not.toBe(moves[0]!.from);
      expect(moves[0]!.address).toBe(moves[0]!.to);
      await client.close();
    } finally {
      await proxy.close();
      await server.close();
    }
  }, 30_000);
});
