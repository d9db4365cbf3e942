// Secure connections (PROTOCOL §9) on real sockets over loopback: listen({ secure }) and
// connect({ connectToken }) in-process on Node (what a client with a good, expired, foreign or
// reused token gets; a plain client; the accept hook and connection.identity; IPv6), then every
// server runtime x client runtime as real processes from dist/, each client with a token of its
// own minted here, exchanging the interop plan (reliable, unreliable, LatestState, 1 MiB).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, RUNTIMES, startPeer, waitFor, type Peer, type PlanResult, type RuntimeName } from "./helpers.js";
import {
  ConnectTimeoutError,
  ConnectTokenError,
  InvalidOptionError,
  SecureConfigError,
  connect,
  createConnectToken,
  generateServerKey,
  listen,
  type Connection,
  type SecureConnectRequestInfo,
  type Server,
} from "../../src/index.js";

const protocolId = 0x5ec7;
const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

async function secureServer(serverKey: Uint8Array, extra: Record<string, unknown> = {}): Promise<Server> {
  const server = await listen({ protocolId, host: "127.0.0.1", port: 0, secure: { serverKey, addresses: [] }, ...extra });
  server.on("connection", (conn) => conn.on("message", (m) => conn.send(m.data, { channel: m.channel })));
  return server;
}

function tokenFor(serverKey: Uint8Array, server: Server, clientId: bigint, over: Record<string, unknown> = {}): Uint8Array {
  return createConnectToken({ serverKey, protocolId, clientId, serverAddresses: [`127.0.0.1:${server.address.port}`], userData: Uint8Array.of(1, 2, 3), ...over });
}

/** Sends `count` self-checking messages and waits for all their echoes. */
async function echo(conn: Connection, count: number): Promise<void> {
  const got = new Set<number>();
  const done = waitFor<void>("echoes", (resolve) =>
    conn.on("message", (m) => {
      const n = m.data[0]! | (m.data[1]! << 8);
      if (m.data.length === 500 && m.data.every((v, i) => i < 2 || v === ((n * 7 + i) & 0xff))) got.add(n);
      if (got.size === count) resolve();
    }),
  );
  for (let n = 0; n < count; n++) conn.send(Uint8Array.from({ length: 500 }, (_, i) => (i === 0 ? n & 0xff : i === 1 ? n >> 8 : (n * 7 + i) & 0xff)), { channel: 0 });
  await done;
}

describe("listen({ secure }) and connect({ connectToken }), in-process", () => {
  it("a client with a token connects; the server knows its id and user data; messages echo", async () => {
    const key = generateServerKey();
    const seen: SecureConnectRequestInfo[] = [];
    const server = await secureServer(key, {
      accept: (r: SecureConnectRequestInfo) => {
        seen.push(r);
        return r.identity?.clientId === 77n;
      },
    });
    try {
      const accepted = waitFor<Connection>("connection", (resolve) => server.on("connection", resolve));
      const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId, connectToken: tokenFor(key, server, 77n) });
      const serverSide = await accepted;
      expect(serverSide.identity?.clientId).toBe(77n);
      expect(serverSide.identity?.userData).toEqual(Uint8Array.of(1, 2, 3));
      expect(server.identityOf(serverSide.address)?.clientId).toBe(77n);
      expect(seen.map((r) => r.identity?.clientId)).toEqual([77n]);
      expect(server.secure).toBe(true);
      await echo(conn, 200);
      // The endpoint left room for the layer: nothing was too large to seal.
      expect(server.counters().secure).toMatchObject({ opened: 1, sendDropped: 0, badTag: 0 });
      expect(conn.stats().pathMtu).toBeLessThanOrEqual(1452 - 29);
      await conn.close();

      // The accept hook refuses another client id.
      await expect(connect(`127.0.0.1:${server.address.port}`, { protocolId, connectToken: tokenFor(key, server, 78n) })).rejects.toThrow(/denied|refused/i);
    } finally {
      await server.close();
    }
  });

  it("a plain client, a token for another key, and a reused token get no answer", async () => {
    const key = generateServerKey();
    const server = await secureServer(key);
    const target = `127.0.0.1:${server.address.port}`;
    try {
      await expect(connect(target, { protocolId, connectTimeoutMs: 800 })).rejects.toThrow(ConnectTimeoutError);
      await expect(connect(target, { protocolId, connectTimeoutMs: 800, connectToken: tokenFor(generateServerKey(), server, 1n) })).rejects.toThrow(ConnectTimeoutError);
      const token = tokenFor(key, server, 2n);
      const first = await connect(target, { protocolId, connectToken: token });
      await first.close();
      // A new socket (a new address) with the same token: bound to the first one's address.
      await expect(connect(target, { protocolId, connectTimeoutMs: 800, connectToken: token })).rejects.toThrow(ConnectTimeoutError);
      const c = server.counters().secure!;
      expect(c.plain).toBeGreaterThan(0);
      expect(c.badToken).toBeGreaterThan(0);
      expect(c.tokenUsed).toBeGreaterThan(0);
      expect(c.opened).toBe(1);
      // None of the refused datagrams reached the endpoint, so it had nothing to answer them with.
      expect(c.sendDropped).toBe(0);
    } finally {
      await server.close();
    }
  });

  it("refuses a token that lists another server, over IPv6 too", async () => {
    const key = generateServerKey();
    // `addresses` is where clients reach the server (say, its public address behind a NAT), not
    // necessarily the bound port; written in any IPv6 spelling, compared in canonical form.
    const s = await listen({ protocolId, host: "::1", port: 0, secure: { serverKey: key, addresses: ["[0:0::1]:7777"] } });
    s.on("connection", (conn) => conn.on("message", (m) => conn.send(m.data, { channel: m.channel })));
    const target = `[::1]:${s.address.port}`;
    try {
      const good = createConnectToken({ serverKey: key, protocolId, clientId: 5, serverAddresses: ["[::1]:7777"] });
      // Written the long way: connect() compares the server's datagrams in canonical form.
      const conn = await connect(`[0:0:0:0:0:0:0:1]:${s.address.port}`, { protocolId, connectToken: good });
      expect(conn.address).toBe(target);
      await echo(conn, 50);
      await conn.close();
      const other = createConnectToken({ serverKey: key, protocolId, clientId: 6, serverAddresses: ["[::1]:7778", "127.0.0.1:7777"] });
      await expect(connect(target, { protocolId, connectTimeoutMs: 800, connectToken: other })).rejects.toThrow(ConnectTimeoutError);
      expect(s.counters().secure).toMatchObject({ opened: 1, wrongServer: expect.any(Number) });
      expect(s.counters().secure!.wrongServer).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
  });

  it("typed errors: an unusable token at connect(), bad secure options at listen(), what a secure server cannot do", async () => {
    const key = generateServerKey();
    const expired = createConnectToken({ serverKey: key, protocolId, clientId: 1, serverAddresses: ["127.0.0.1:9"], expiresInSeconds: 1, nowSeconds: Math.floor(Date.now() / 1000) - 3600 });
    await expect(connect("127.0.0.1:9", { protocolId, connectToken: expired })).rejects.toMatchObject({ code: "ERR_CONNECT_TOKEN", problem: "expired" });
    const token = createConnectToken({ serverKey: key, protocolId, clientId: 1, serverAddresses: ["127.0.0.1:9"] });
    await expect(connect("127.0.0.1:9", { protocolId: protocolId + 1, connectToken: token })).rejects.toMatchObject({ problem: "protocol-mismatch" });
    await expect(connect("127.0.0.1:9", { protocolId, connectToken: new Uint8Array(10) })).rejects.toThrow(ConnectTokenError);
    await expect(connect("127.0.0.1:9", { protocolId, connectToken: token, mtu: 320 })).rejects.toThrow(SecureConfigError);
    await expect(connect("127.0.0.1:9", { protocolId, connectTimeoutMs: -1 })).rejects.toThrow(InvalidOptionError);
    // What a backend or a server gets wrong comes back typed too.
    expect(() => createConnectToken(undefined as never)).toThrow(SecureConfigError);
    expect(() => createConnectToken({ serverKey: key, protocolId, clientId: 1, serverAddresses: ["127.0.0.1:9"], nowSeconds: Date.now() })).toThrow(/whole seconds/);
    await expect(listen({ protocolId, port: 0, secure: { serverKey: key, addresses: "127.0.0.1:9" as never } })).rejects.toThrow(SecureConfigError);
    await expect(listen({ protocolId, port: 0, mtu: 1600, secure: { serverKey: key } })).rejects.toThrow(SecureConfigError);
    await expect(listen({ protocolId, port: 0, secure: { serverKey: key, previousServerKeys: [new Uint8Array(3)] } })).rejects.toThrow(SecureConfigError);
    await expect(listen({ protocolId, port: 0, secure: { serverKey: new Uint8Array(16) } })).rejects.toThrow(SecureConfigError);
    await expect(listen({ protocolId, port: 0, secure: { serverKey: key, addresses: ["localhost:1"] } })).rejects.toThrow(/ip:port/);
    await expect(listen({ protocolId, port: 0, secure: { serverKey: key, idleTimeoutMs: 5 } })).rejects.toThrow(/idleTimeoutMs/);
    const server = await secureServer(key);
    try {
      await expect(server.connect("127.0.0.1:9")).rejects.toThrow(InvalidOptionError);
      expect(() => server.punch("127.0.0.1:9", new Uint8Array(8))).toThrow(InvalidOptionError);
      expect(() => server.addRelayRoute("127.0.0.1:9", new Uint8Array(8))).toThrow(InvalidOptionError);
    } finally {
      await server.close();
    }
  });
});

const PLAN = [
  { channel: 0, kind: "reliable", count: 200, size: 120 },
  { channel: 2, kind: "unreliable", count: 100, size: 80 },
  { channel: 5, kind: "latest", count: 160, size: 40, keys: 8 },
  { channel: 6, kind: "reliable", count: 1, size: 1 << 20 },
];

describe("secure connections between runtimes (server x client, real processes)", () => {
  const serverKey = generateServerKey();
  const servers = new Map<RuntimeName, { peer: Peer; port: number }>();

  beforeAll(async () => {
    assertBuilt();
    await Promise.all(
      RUNTIMES.map(async (runtime) => {
        const peer = await startPeer(runtime, "server", { serverKey: hex(serverKey), events: true }, 180_000);
        servers.set(runtime, { peer, port: Number((await peer.waitFor("listening")).listening) });
      }),
    );
  }, 60_000);

  afterAll(() => {
    for (const { peer } of servers.values()) peer.stop();
  });

  let clientId = 1000n;
  for (const serverRuntime of RUNTIMES) {
    it(`${serverRuntime} server: node, bun and deno clients with tokens run the plan; the server sees each client's id`, async () => {
      const { peer, port } = servers.get(serverRuntime)!;
      const results = await Promise.all(
        RUNTIMES.map(async (clientRuntime) => {
          const id = ++clientId;
          const connectToken = createConnectToken({ serverKey, protocolId: 0x41434b57, clientId: id, serverAddresses: [`127.0.0.1:${port}`], userData: Uint8Array.of(Number(id & 0xffn)) });
          const client = await startPeer(clientRuntime, "client", { target: `127.0.0.1:${port}`, plan: PLAN, waitMs: 40_000, connectToken: hex(connectToken) }, 70_000);
          const result = (await client.waitFor("ok", 70_000)) as unknown as PlanResult;
          await client.exited();
          return { clientRuntime, id, result };
        }),
      );
      for (const { clientRuntime, result } of results) {
        const context = `${serverRuntime} server, ${clientRuntime} client`;
        expect(result.error, context).toBeUndefined();
        expect(result.ok, context).toBe(true);
        expect(result.bad, context).toBe(0);
        for (const channel of ["0", "6"]) {
          const c = result.channels[channel]!;
          expect(c.received, `${context}: channel ${channel}`).toBe(c.sent);
          expect(c.outOfOrder + c.duplicates, context).toBe(0);
        }
        expect(result.channels["5"]!.converged, context).toBe(true);
      }
      const identities = peer.lines.filter((l) => l.event === "connection").map((l) => (l.identity as { clientId: string } | undefined)?.clientId);
      for (const { id } of results) expect(identities).toContain(String(id));
    }, 120_000);
  }
});
