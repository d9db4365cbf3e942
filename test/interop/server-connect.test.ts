// A listening Server that also connects out from its own socket (server.connect()) and punches
// (server.punch()), in-process on Node over loopback with the real session Endpoint. The same
// API through real NATs is test/interop/nat-traversal.test.ts.
import { describe, expect, it } from "vitest";
import { waitFor } from "./helpers.js";
import { ClosedError, ConnectAbortedError, ConnectTimeoutError, InvalidOptionError, listen, type Connection, type Server } from "../../src/index.js";

const base = { protocolId: 0x5e7c };
const TOKEN = new Uint8Array([1, 1, 2, 3, 5, 8, 13, 21]);

async function withServers(fn: (a: Server, b: Server) => Promise<void>): Promise<void> {
  const a = await listen({ ...base, host: "127.0.0.1", port: 0 });
  const b = await listen({ ...base, host: "127.0.0.1", port: 0 });
  try {
    await fn(a, b);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

describe("Server.connect(): a connection from a listening socket", () => {
  it("connects from the server's own port, carries messages both ways, and its socket keeps serving", async () => {
    await withServers(async (a, b) => {
      const accepted = waitFor<Connection>("connection on a", (resolve) => a.on("connection", resolve));
      a.on("connection", (conn) => conn.on("message", (m) => conn.send(m.data, { channel: m.channel })));
      let bConnections = 0;
      b.on("connection", () => bConnections++);
      const conn = await b.connect(`127.0.0.1:${a.address.port}`, { userData: Uint8Array.of(7) });
      const seen = await accepted;
      // a sees the connection come from b's listening port: one socket for both roles.
      expect(seen.address).toBe(`127.0.0.1:${b.address.port}`);
      expect(seen.userData).toEqual(Uint8Array.of(7));
      expect(conn.address).toBe(`127.0.0.1:${a.address.port}`);
      expect(b.connections.get(conn.id)).toBe(conn);
      expect(bConnections).toBe(0); // no "connection" event for a connection b opened itself

      const echoes: number[] = [];
      const all = waitFor<void>("10 echoes", (resolve) =>
        conn.on("message", (m) => {
          echoes.push(m.data[0]!);
          if (echoes.length === 10) resolve();
        }),
      );
      for (let i = 0; i < 10; i++) conn.send(Uint8Array.of(i), { channel: 0 });
      await all;
      expect(echoes).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);

      // Meanwhile b still accepts clients of its own on the same port.
      const c = await listen({ ...base, host: "127.0.0.1", port: 0 });
      try {
        await c.connect(`127.0.0.1:${b.address.port}`);
        await waitFor<void>("b's incoming connection", (resolve) => (bConnections > 0 ? resolve() : b.once("connection", () => resolve())));
        expect(b.connections.size).toBe(2);
      } finally {
        await c.close();
      }

      // Closing the outgoing connection leaves b's socket open.
      const gone = waitFor<void>("a's disconnect", (resolve) => seen.once("disconnect", () => resolve()));
      await conn.close();
      await gone;
      expect(b.connections.has(conn.id)).toBe(false);
    });
  });

  it("typed errors: no answer, abort, wrong address family, a closing server", async () => {
    await withServers(async (a, b) => {
      await expect(b.connect("127.0.0.1:9", { connectTimeoutMs: 300 })).rejects.toBeInstanceOf(ConnectTimeoutError);
      const controller = new AbortController();
      const pending = b.connect("127.0.0.1:9", { signal: controller.signal });
      setTimeout(() => controller.abort(), 50);
      await expect(pending).rejects.toBeInstanceOf(ConnectAbortedError);
      await expect(b.connect("[::1]:7777")).rejects.toBeInstanceOf(InvalidOptionError);
      // Failed attempts left nothing behind: b can still connect.
      expect(b.connections.size).toBe(0);
      const conn = await b.connect(`127.0.0.1:${a.address.port}`);
      expect(conn.isOpen).toBe(true);

      const slow = b.connect("127.0.0.1:9", { connectTimeoutMs: 5000 });
      const closing = b.close();
      await expect(slow).rejects.toBeInstanceOf(ClosedError);
      await closing;
      await expect(b.connect(`127.0.0.1:${a.address.port}`)).rejects.toBeInstanceOf(ClosedError);
    });
  });
});

describe("Server.punch(): NAT_PUNCH between two sockets", () => {
  it("a punch is a 'punch' event only once the receiver punches with the same token", async () => {
    await withServers(async (a, b) => {
      const heard: { address: string; token: Uint8Array }[] = [];
      b.on("punch", (p) => heard.push(p));
      a.punch(`127.0.0.1:${b.address.port}`, TOKEN);
      await new Promise((r) => setTimeout(r, 100));
      expect(heard).toEqual([]); // b is not punching with that token

      b.punch(`127.0.0.1:${a.address.port}`, TOKEN);
      const got = waitFor<{ address: string; token: Uint8Array }>("b's punch event", (resolve) => b.once("punch", resolve));
      a.punch(`127.0.0.1:${b.address.port}`, TOKEN);
      expect(await got).toEqual({ address: `127.0.0.1:${a.address.port}`, token: TOKEN });
      expect(() => a.punch(`127.0.0.1:${b.address.port}`, new Uint8Array(4))).toThrow(expect.objectContaining({ code: "ERR_INVALID_PUNCH_TOKEN" }));
    });
  });
});
