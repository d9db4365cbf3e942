// The relay on real sockets, in-process on Node over loopback: listenRelay() (PROTOCOL §8) and
// two listening Servers that reach each other only through it (addRelayRoute()), and the
// lobby's fallback to it (natConnect) between two sockets that drop each other's datagrams, as
// two symmetric NATs would. Through real NATs it is test/interop/nat-traversal.test.ts.
import { describe, expect, it } from "vitest";
import { firewalled, waitFor } from "./helpers.js";
import { attachRpc, answerIntroductions, LobbyRegistry, lobbyHandlers, natConnect, natHandlers, NatIntroducer } from "../../src/game/index.js";
import { nodeAdapter } from "../../runtimes/node/index.js";
import {
  ClosedError,
  ConnectTimeoutError,
  createRuntime,
  InvalidOptionError,
  listen,
  listenRelay,
  RelayConfigError,
  type Connection,
  type RelayServer,
  type Server,
} from "../../src/index.js";

const base = { protocolId: 0x7e1a };

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
      // a binds one side of a second allocation (BIND, CHALLENGE, CONFIRM), then forgets its
      // route: the relay still knows a's address for that side, so b's handshake through the
      // other side reaches a's socket, from the relay's address, with a token a no longer routes.
      const gone = a.addRelayRoute(relay.publicAddress, other.tokens[0]);
      for (let i = 0; i < 200 && relay.counters().confirmed < 2; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(relay.counters().confirmed).toBe(2);
      a.removeRelayRoute(gone);
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

  it("listenRelay() validates its options: peers must be told a specific IP address", async () => {
    await expect(listenRelay({ host: "localhost" })).rejects.toThrow(InvalidOptionError);
    // A typo would leave the default in force without a word.
    await expect(listenRelay({ host: "127.0.0.1", maxAlocations: 4 } as never)).rejects.toThrow(/unknown option "maxAlocations" \(did you mean "maxAllocations"\?\)/);
    await expect(listenRelay({ host: "127.0.0.1", port: 70000 })).rejects.toThrow(InvalidOptionError);
    // Bound to every interface: which address peers reach it at must be given.
    await expect(listenRelay({ port: 0 })).rejects.toThrow(/publicAddress/);
    await expect(listenRelay({ host: "::", port: 0 })).rejects.toThrow(/publicAddress/);
    for (const publicAddress of ["not-an-address", "relay.example:9001", "0.0.0.0:9001", "[::]:9001"]) {
      await expect(listenRelay({ host: "127.0.0.1", publicAddress }), publicAddress).rejects.toThrow(InvalidOptionError);
    }
    await expect(listenRelay({ host: "127.0.0.1", maxAllocations: 0 })).rejects.toThrow(RelayConfigError);
    // Bound to an address introductions cannot carry (IPv4-mapped): publicAddress is needed.
    await expect(listenRelay({ host: "::ffff:127.0.0.1", port: 0 })).rejects.toThrow(InvalidOptionError);
    const relay = await listenRelay({ port: 0, publicAddress: "[2001:DB8:0::1]:9001" });
    expect(relay.publicAddress).toBe("[2001:db8::1]:9001");
    await relay.close();
  });

  it("a send to a virtual address whose route is gone is dropped and counted, never sent to the address itself", async () => {
    await withRelay(async (relay, a, b) => {
      const { tokens } = relay.allocate()!;
      a.addRelayRoute(relay.publicAddress, tokens[0]);
      const toA = b.addRelayRoute(relay.publicAddress, tokens[1]);
      const conn = await b.connect(toA);
      b.removeRelayRoute(toA);
      expect(b.bindRelayRoute(toA)).toBe(false);
      const sentBefore = b.counters().datagramsOut;
      conn.send(new Uint8Array(10), { channel: 0 });
      await new Promise((r) => setTimeout(r, 50));
      const c = b.counters();
      expect(c.relay.unrouted).toBeGreaterThan(0);
      // Counted by the driver as handed to the socket, but the socket sent nothing anywhere.
      expect(c.datagramsOut).toBeGreaterThan(sentBefore);
      expect(c.sendFailures).toBe(0);
    });
  });

  it("the relay's timer ends allocations that are never used", async () => {
    const relay = await listenRelay({ host: "127.0.0.1", port: 0, idleTimeoutMs: 1000, bindTimeoutMs: 1000 });
    try {
      relay.allocate();
      relay.allocate();
      expect(relay.forwarder.size).toBe(2);
      await new Promise((r) => setTimeout(r, 1600));
      expect(relay.counters().expired).toBe(2);
      expect(relay.forwarder.size).toBe(0);
    } finally {
      await relay.close();
    }
  });
});

describe("natConnect() falls back to the lobby's relay", () => {
  it("between two peers that drop each other's datagrams: no punch, the direct handshake times out, and it connects through the relay", async () => {
    const blocked = new Set<string>();
    const walled = createRuntime(firewalled(nodeAdapter, blocked));
    const common = { protocolId: 0x7e1b };
    const now = () => performance.now();
    const relay = await listenRelay({ host: "127.0.0.1", port: 0 });
    const lobby = await listen({ ...common, host: "127.0.0.1", port: 0 });
    const registry = new LobbyRegistry();
    const introducer = new NatIntroducer(registry, { relay });
    lobby.on("connection", (conn) => {
      const port = Number(conn.address.slice(conn.address.lastIndexOf(":") + 1));
      const rpc = attachRpc(conn, { handlers: { ...lobbyHandlers(registry, conn.id, "127.0.0.1", now, port), ...natHandlers(introducer, conn.id, now) } });
      introducer.attach(conn.id, conn.address, (method, params) => rpc.notify(method, params));
    });
    const host = await walled.listen({ ...common, host: "127.0.0.1", port: 0 });
    const joiner = await walled.listen({ ...common, host: "127.0.0.1", port: 0 });
    blocked.add(`127.0.0.1:${host.address.port}`).add(`127.0.0.1:${joiner.address.port}`);
    try {
      const answering = answerIntroductions(host);
      const hostRpc = attachRpc(await host.connect(`127.0.0.1:${lobby.address.port}`), { handlers: answering.handlers });
      const { id } = (await hostRpc.call("lobby.register", { name: "walled", gamePort: 0, players: 0, maxPlayers: 4 })) as { id: number };
      const hostSide = new Promise<Connection>((resolve) => host.on("connection", resolve));
      host.on("connection", (conn) => conn.on("message", (m) => conn.send(m.data, { channel: 0 })));
      let punches = 0;
      joiner.on("punch", () => punches++);
      const joinerRpc = attachRpc(await joiner.connect(`127.0.0.1:${lobby.address.port}`));
      const started = performance.now();
      const conn = await natConnect(joiner, joinerRpc, id, { punchWaitMs: 300, directTimeoutMs: 400, connect: { connectTimeoutMs: 3000 } });
      const tookMs = performance.now() - started;
      expect(punches).toBe(0);
      expect(tookMs).toBeGreaterThan(650);
      expect(conn.address).toMatch(/^\[100::[0-9a-f:]+\]:/);
      const seen = await hostSide;
      expect(seen.address).toMatch(/^\[100::[0-9a-f:]+\]:/);
      expect(answering.counters).toMatchObject({ introductions: 1, relayRoutes: 1 });
      expect(introducer.counters.relayed).toBe(1);
      const echoed = new Promise<Uint8Array>((resolve) => conn.once("message", (m) => resolve(m.data)));
      conn.send(Uint8Array.of(1, 2, 3, 4), { channel: 0 });
      expect([...(await echoed)]).toEqual([1, 2, 3, 4]);
      expect(relay.counters().forwarded).toBeGreaterThan(2);
      // Both routes go with the connection: the joiner's when it closes, the host's at its "disconnect".
      const hostGone = new Promise<void>((resolve) => host.once("disconnect", () => resolve()));
      await conn.close();
      await hostGone;
      expect(joiner.bindRelayRoute(conn.address)).toBe(false);
      expect(host.bindRelayRoute(seen.address)).toBe(false);
      answering.close();
    } finally {
      await Promise.all([host.close(), joiner.close(), lobby.close()]);
      await relay.close();
    }
  }, 20_000);

  it("a host closing during its punch run (which binds the relay each round) stops quietly", async () => {
    const relay = await listenRelay({ host: "127.0.0.1", port: 0 });
    const host = await listen({ protocolId: 0x7e1c, host: "127.0.0.1", port: 0 });
    const answering = answerIntroductions(host);
    const { tokens } = relay.allocate()!;
    const token = new Uint8Array(8).fill(3);
    const ctx = { method: "nat.introduce", signal: new AbortController().signal };
    answering.handlers["nat.introduce"]!({ address: "127.0.0.1:9", local: [], token, peerToken: token, relay: { address: relay.publicAddress, token: tokens[0] } }, ctx);
    expect(answering.counters.relayRoutes).toBe(1);
    await host.close();
    // Rounds go on every 100 ms for 2 s; an exception in one would fail this test as uncaught.
    await new Promise((r) => setTimeout(r, 350));
    answering.close();
    await relay.close();
    expect(relay.counters().binds).toBeGreaterThanOrEqual(1);
  });
});

describe("the relay over IPv6", () => {
  it("two servers on ::1 connect through a relay on ::1, however the relay's address is spelled", async () => {
    const relay = await listenRelay({ host: "::1", port: 0 });
    const a = await listen({ ...base, host: "::1", port: 0 });
    const b = await listen({ ...base, host: "::1", port: 0 });
    try {
      expect(relay.publicAddress).toBe(`[::1]:${relay.address.port}`);
      const { tokens } = relay.allocate()!;
      a.addRelayRoute(relay.publicAddress, tokens[0]);
      // Written out in full and in capitals: still the address datagrams come from.
      const toA = b.addRelayRoute(`[0:0:0:0:0:0:0:0001]:${relay.address.port}`, tokens[1]);
      a.on("connection", (conn) => conn.on("message", (m) => conn.send(m.data, { channel: 0 })));
      const conn = await b.connect(toA, { connectTimeoutMs: 3000 });
      const echoed = new Promise<Uint8Array>((resolve) => conn.once("message", (m) => resolve(m.data)));
      conn.send(Uint8Array.of(9, 8, 7), { channel: 0 });
      expect([...(await echoed)]).toEqual([9, 8, 7]);
      expect(b.counters().relay.unwrapped).toBeGreaterThan(0);
      await conn.close();
    } finally {
      await Promise.all([a.close(), b.close()]);
      await relay.close();
    }
  }, 10_000);
});
