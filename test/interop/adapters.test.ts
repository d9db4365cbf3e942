// The runtime adapters and the driver on real sockets, every server runtime x client runtime,
// with a toy sans-IO endpoint (fixtures/toy-endpoint.mjs: no reliability) so these tests isolate
// the adapters from the session engine. Loopback only; small counts so loss is not expected.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, Peer, RUNTIMES, runtimeOf } from "./helpers.js";

const servers = new Map<string, { peer: Peer; port: number }>();

beforeAll(async () => {
  assertBuilt();
  await Promise.all(
    RUNTIMES.map(async (runtime) => {
      const peer = new Peer(runtime, "peer.mjs", ["server", JSON.stringify({ toy: true, keyed: [5] })]);
      expect(await runtimeOf(peer)).toBe(runtime);
      const port = Number((await peer.waitFor("listening")).listening);
      servers.set(runtime, { peer, port });
    }),
  );
});

afterAll(() => {
  for (const { peer } of servers.values()) peer.stop();
});

describe("adapters with a toy endpoint: 9 runtime pairs over loopback", () => {
  for (const serverRuntime of RUNTIMES) {
    for (const clientRuntime of RUNTIMES) {
      it(`${clientRuntime} client -> ${serverRuntime} server: echo verified`, async () => {
        const { port } = servers.get(serverRuntime)!;
        const plan = [
          { channel: 0, count: 40, size: 200 },
          { channel: 5, count: 12, size: 40, key: 9 },
        ];
        const client = new Peer(clientRuntime, "peer.mjs", ["client", JSON.stringify({ toy: true, target: `127.0.0.1:${port}`, plan, waitMs: 10_000 })]);
        expect(await runtimeOf(client)).toBe(clientRuntime);
        const result = (await client.waitFor("ok")) as { ok: boolean; received: Record<string, number>; bad: number; duplicates: number; error?: unknown };
        expect(result.error).toBeUndefined();
        expect(result.ok).toBe(true);
        expect(result.bad).toBe(0);
        expect(result.duplicates).toBe(0);
        expect(result.received).toEqual({ 0: 40, 5: 12 });
        await client.exited();
      });
    }
  }
});

describe("typed errors from the adapters", () => {
  for (const runtime of RUNTIMES) {
    it(`${runtime}: connect to a silent port rejects with ConnectTimeoutError`, async () => {
      const client = new Peer(runtime, "peer.mjs", ["client", JSON.stringify({ toy: true, target: "127.0.0.1:9", plan: [], connectTimeoutMs: 600 })]);
      expect(await runtimeOf(client)).toBe(runtime);
      const result = (await client.waitFor("ok")) as { ok: boolean; error: { code: string; name: string } };
      expect(result.ok).toBe(false);
      expect(result.error.code).toBe("ERR_CONNECT_TIMEOUT");
      await client.exited();
    });
  }
});
