// Secure connections (PROTOCOL §9) with the transport on worker threads: ackwire/worker's
// listen({ secure }) and connect({ connectToken }) over loopback. The server's connections carry
// the token's identity across the thread boundary, a plain client gets no answer, and a secure
// WorkerServer refuses what it cannot do (connect, punch, relay routes) at the call. Loads the
// compiled dist/ (the worker needs real JS files).
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const load = async <T>(path: string): Promise<T> => (await import(pathToFileURL(join(ROOT, "dist", ...path.split("/"))).href)) as T;
const workerApi = await load<typeof import("../../src/worker/index.js")>("src/worker/index.js");
const rootApi = await load<typeof import("../../src/index.js")>("src/index.js");
const protocolId = 0x5ec3;

describe("ackwire/worker, secure", () => {
  it("a worker client with a token connects to a worker server, which sees its identity; a plain client gets nothing", async () => {
    const serverKey = rootApi.generateServerKey();
    const server = await workerApi.listen({ protocolId, host: "127.0.0.1", port: 0, secure: { serverKey } });
    try {
      expect(server.secure).toBe(true);
      const accepted = new Promise<import("../../src/worker/connection.js").WorkerConnection>((resolve) => server.once("connection", resolve));
      server.on("connection", (conn) => conn.on("message", (m) => conn.send(m.data, { channel: m.channel })));
      const target = `127.0.0.1:${server.address.port}`;
      const connectToken = rootApi.createConnectToken({ serverKey, protocolId, clientId: 31337n, serverAddresses: [target], userData: Uint8Array.of(4, 2) });
      const client = await workerApi.connect(target, { protocolId, connectToken });
      const conn = await accepted;
      expect(conn.identity).toEqual({ clientId: 31337n, userData: Uint8Array.of(4, 2), tokenExpiresAt: expect.any(Number) });
      // As the root Server's: who the token says the client at an address is, none for others.
      expect(server.identityOf(conn.address)).toEqual(conn.identity);
      expect(server.identityOf("127.0.0.1:9")).toBeUndefined();
      const echoed = new Promise<number[]>((resolve) => client.once("message", (m) => resolve([...m.data])));
      client.send(Uint8Array.of(1, 2, 3, 4, 5), { channel: 0 });
      expect(await echoed).toEqual([1, 2, 3, 4, 5]);
      const gone = new Promise<void>((resolve) => conn.once("disconnect", () => resolve()));
      await client.close();
      await gone;
      expect(server.identityOf(conn.address)).toBeUndefined();

      await expect(workerApi.connect(target, { protocolId, connectTimeoutMs: 800 })).rejects.toMatchObject({ code: "ERR_CONNECT_TIMEOUT" });
      // A token that cannot be used is refused in the worker, and crosses back as its own class.
      const expired = rootApi.createConnectToken({ serverKey, protocolId, clientId: 1, serverAddresses: [target], expiresInSeconds: 1, nowSeconds: Math.floor(Date.now() / 1000) - 3600 });
      const refused = await workerApi.connect(target, { protocolId, connectToken: expired }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(rootApi.ConnectTokenError);
      expect(refused).toMatchObject({ code: "ERR_CONNECT_TOKEN", problem: "expired" });
      await expect(server.connect("127.0.0.1:9")).rejects.toMatchObject({ code: "ERR_INVALID_OPTION" });
      expect(() => server.punch("127.0.0.1:9", new Uint8Array(8))).toThrow(/secure server/);
      expect(() => server.addRelayRoute("127.0.0.1:9", new Uint8Array(8))).toThrow(/secure server/);
    } finally {
      await server.close();
    }
  });
});
