// The relay on real sockets, in-process on Node over loopback: listenRelay() (PROTOCOL §8) and
// two listening Servers that reach each other only through it (addRelayRoute()). Through real
// NATs, with the lobby handing out the allocation, it is test/interop/nat-traversal.test.ts.
import { describe, expect, it } from "vitest";
import { ClosedError, ConnectTimeoutError, InvalidOptionError, listen, listenRelay, RelayConfigError, type Connection, type RelayServer, type Server } from "../../src/index.js";

const base = { protocolId: 0x7e1a };

function waitFor<T>(what: string, register: (resolve: (value: T) => void) => void, ms = 5000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
    register((value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}

async function withRelay(fn: (relay: RelayServer, a: Server, b: Server) => Promise<void>): Promise<void> {
  const relay = await listenRelay({ host: "127.0.0.1", port: 0 });
  const a = await listen({ ...base, host: "127.0.0.1", port: 0 });
  const b = await listen({ ...base, host: "127.0.0.1", port: 0 });
  try {
    await fn(relay, a, b);
  } finally {
    await Promise.all([a.close(), b.close()]);
    await relay.close();
  }
}

describe("listenRelay() and Server.addRelayRoute()", () => {
  it("two servers connect through the relay only, and 200 messages echo intact", async () => {
    await withRelay(async (relay, a, b) => {
      expect(relay.publicAddress).toBe(`127.0.0.1:${relay.address.port}`);
      const { tokens } = relay.allocate()!;
      const aSeesB = a.addRelayRoute(relay.publicAddress, tokens[0]);
      const bSeesA = b.addRelayRoute(relay.publicAddress, tokens[1]);
      expect(aSeesB).toMatch(new RegExp(`^\\[100::[0-9a-f:]+\\]:${relay.address.port}$`));
      expect(bSeesA).not.toBe(aSeesB);
      a.on("connection", (conn) => conn.on("message", (m) => conn.send(m.data, { channel: m.channel })));
      const accepted = waitFor<Connection>("connection on a", (resolve) => a.on("connection", resolve));
      const conn = await b.connect(bSeesA);
      // Each side sees the other at its virtual address: nothing came straight from the other's port.
      expect(conn.address).toBe(bSeesA);
      expect((await accepted).address).toBe(aSeesB);

      const COUNT = 200;
      const echoed = new Set<number>();
      const done = waitFor<void>("echoes", (resolve) =>
        conn.on("message", (m) => {
          const n = m.data[0]! | (m.data[1]! << 8);
          if (m.data.length === 300 && m.data.every((v, i) => i < 2 || v === ((n + i) & 0xff))) echoed.add(n);
          if (echoed.size === COUNT) resolve();
        }),
      );
      for (let n = 0; n < COUNT; n++) {
        const data = Uint8Array.from({ length: 300 }, (_, i) => (n + i) & 0xff);
        data[0] = n & 0xff;
        data[1] = n >> 8;
        conn.send(data, { channel: 0 });
      }
      await done;
      const c = relay.counters();
      expect(c.forwarded).toBeGreaterThanOrEqual(2 * COUNT / 4); // messages aggregate, but both ways went through
      expect(c.unknownToken + c.malformed + c.unbound + c.rateLimited).toBe(0);
      expect(b.counters().relay.wrapped).toBeGreaterThan(0);
      expect(a.counters().relay.unwrapped).toBeGreaterThan(0);
      await conn.close();
    });
  }, 20_000);

  it("drops datagrams from the relay's address with a token of no route, and counts them", async () => {
    await withRelay(async (relay, a, b) => {
      const { tokens } = relay.allocate()!;
      const other = relay.allocate()!;
      a.addRelayRoute(relay.publicAddress, tokens[0]);
      // a binds one side of a second allocation, then forgets its route: the relay still knows
      // a's address for that side, so b's handshake through the other side reaches a's socket,
      // from the relay's address, with a token a no longer routes.
      a.removeRelayRoute(a.addRelayRoute(relay.publicAddress, other.tokens[0]));
      const toA = b.addRelayRoute(relay.publicAddress, other.tokens[1]);
      await expect(b.connect(toA, { connectTimeoutMs: 400 })).rejects.toBeInstanceOf(ConnectTimeoutError);
      expect(relay.counters().forwarded).toBeGreaterThan(0);
      expect(a.counters().relay.dropped).toBeGreaterThan(0);
      expect(a.connections.size).toBe(0);
    });
  }, 10_000);

  it("rejects bad routes with typed errors, and none once the server is closing", async () => {
    await withRelay(async (relay, a) => {
      expect(() => a.addRelayRoute(relay.publicAddress, new Uint8Array(3))).toThrow(RelayConfigError);
      expect(() => a.addRelayRoute("[::1]:9000", new Uint8Array(8))).toThrow(InvalidOptionError);
      expect(() => a.addRelayRoute("nowhere", new Uint8Array(8))).toThrow();
      const closing = a.close();
      expect(() => a.addRelayRoute(relay.publicAddress, new Uint8Array(8))).toThrow(ClosedError);
      await closing;
    });
  });

  it("listenRelay() validates its options", async () => {
    await expect(listenRelay({ host: "localhost" })).rejects.toThrow(InvalidOptionError);
    await expect(listenRelay({ port: 70000 })).rejects.toThrow(InvalidOptionError);
    await expect(listenRelay({ host: "127.0.0.1", publicAddress: "not-an-address" })).rejects.toThrow(InvalidOptionError);
    await expect(listenRelay({ host: "127.0.0.1", maxAllocations: 0 })).rejects.toThrow(RelayConfigError);
  });
});
