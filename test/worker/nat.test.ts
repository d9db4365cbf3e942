// ackwire/worker's server as a NAT traversal socket: connect() from its listening socket,
// punch() and the "punch" event, relay routes, and natConnect/answerIntroductions running on
// WorkerServers, all over loopback with the transport on worker threads. Loads the compiled
// dist/ (the worker needs real JS files).
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { firewalled } from "../interop/helpers.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const load = async <T>(path: string): Promise<T> => (await import(pathToFileURL(join(ROOT, "dist", ...path.split("/"))).href)) as T;
const workerApi = await load<typeof import("../../src/worker/index.js")>("src/worker/index.js");
const rootApi = await load<typeof import("../../src/index.js")>("src/index.js");
const game = await load<typeof import("../../src/game/index.js")>("src/game/index.js");
const nodeRuntime = await load<typeof import("../../runtimes/node/index.js")>("runtimes/node/index.js");
const PROTOCOL_ID = 0x4e415457;
const base = { protocolId: PROTOCOL_ID, host: "127.0.0.1", port: 0 };

/** Sends `data` on `conn` and resolves with the first message that comes back. */
function echoOf(conn: { send(d: Uint8Array, o: { channel: number }): unknown; once(t: "message", l: (m: { data: Uint8Array }) => void): unknown }, data: Uint8Array): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no echo within 5 s")), 5000);
    conn.once("message", (m) => {
      clearTimeout(timer);
      resolve([...m.data]);
    });
    conn.send(data, { channel: 0 });
  });
}

/** A lobby on this thread with the NAT introducer and a relay, on 127.0.0.1. */
async function startLobby() {
  const now = () => performance.now();
  const relay = await rootApi.listenRelay({ host: "127.0.0.1", port: 0 });
  const lobby = await rootApi.listen(base);
  const registry = new game.LobbyRegistry();
  const introducer = new game.NatIntroducer(registry, { relay });
  lobby.on("connection", (conn) => {
    const port = Number(conn.address.slice(conn.address.lastIndexOf(":") + 1));
    const rpc = game.attachRpc(conn, { handlers: { ...game.lobbyHandlers(registry, conn.id, "127.0.0.1", now, port), ...game.natHandlers(introducer, conn.id, now) } });
    introducer.attach(conn.id, conn.address, (method, params) => rpc.notify(method, params));
  });
  return { relay, lobby };
}

type NatSocket = import("../../src/game/nat-socket.js").NatSocket<import("../../src/worker/index.js").WorkerConnection>;
type NatConnectOptions = import("../../src/game/nat-socket.js").NatConnectOptions;
type Introduced = { conn: import("../../src/worker/index.js").WorkerConnection; answering: ReturnType<typeof game.answerIntroductions>; relay: import("../../src/index.js").RelayServer };
/** A root Server or a WorkerServer: what a host needs here. */
type HostSocket = NatSocket & { close(): Promise<void>; on(type: "connection", listener: (conn: { on: Function; send: Function }) => void): unknown };

/**
 * Through a lobby (startLobby): `host` registers and answers introductions (echoing every
 * message), `joiner` natConnect()s to it with `options`; `check` gets the joiner's connection.
 * Everything is closed after.
 */
async function introduce(host: HostSocket, joiner: NatSocket & { close(): Promise<void> }, options: NatConnectOptions, check: (introduced: Introduced) => Promise<void>): Promise<void> {
  const { relay, lobby } = await startLobby();
  try {
    const answering = game.answerIntroductions(host);
    host.on("connection", (conn) => conn.on("message", (m: { data: Uint8Array }) => conn.send(m.data, { channel: 0 })));
    const hostRpc = game.attachRpc((await host.connect(`127.0.0.1:${lobby.address.port}`)) as never, { handlers: answering.handlers });
    const { id } = (await hostRpc.call("lobby.register", { name: "host", gamePort: 0, players: 0, maxPlayers: 4 })) as { id: number };
    const joinerRpc = game.attachRpc((await joiner.connect(`127.0.0.1:${lobby.address.port}`)) as never);
    const conn = await game.natConnect(joiner, joinerRpc, id, options);
    await check({ conn, answering, relay });
    answering.close();
    await conn.close();
  } finally {
    await Promise.all([host.close(), joiner.close(), lobby.close()]);
    await relay.close();
  }
}

describe("ackwire/worker: a WorkerServer as a NAT traversal socket", () => {
  it("connects from its listening socket, punches, and routes through a relay, like the root Server", async () => {
    const a = await workerApi.listen(base);
    const b = await workerApi.listen(base);
    const relay = await rootApi.listenRelay({ host: "127.0.0.1", port: 0 });
    try {
      a.on("connection", (conn) => conn.on("message", (m) => conn.send(m.data, { channel: 0 })));
      let aConnections = 0;
      a.on("connection", () => aConnections++);

      // connect() from b's listening socket: a sees b's own port; b gets no "connection" event.
      let bConnections = 0;
      b.on("connection", () => bConnections++);
      const direct = await b.connect(`127.0.0.1:${a.address.port}`, { userData: Uint8Array.of(4) });
      expect(b.connections.get(direct.id)).toBe(direct);
      expect(await echoOf(direct, Uint8Array.of(1, 2))).toEqual([1, 2]);
      expect(bConnections).toBe(0);

      // Punches cross the thread both ways: b punches with a token a listens for.
      const token = Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8);
      const heard = new Promise<{ address: string; token: Uint8Array }>((resolve) => a.on("punch", resolve));
      // A punch is one datagram, and a busy host's socket buffers can drop one: punch again
      // every 100 ms until a hears it, as a real traversal does (bounded: 50 tries).
      let punching = true;
      void heard.then(() => (punching = false));
      for (let tries = 0; punching && tries < 50; tries++) {
        a.punch(`127.0.0.1:${b.address.port}`, token);
        b.punch(`127.0.0.1:${a.address.port}`, token);
        await Promise.race([heard, new Promise((r) => setTimeout(r, 100))]);
      }
      const punch = await heard;
      expect(punch.address).toBe(`127.0.0.1:${b.address.port}`);
      expect([...punch.token]).toEqual([...token]);

      // Relay routes numbered on this thread, used on the worker: b reaches a through the relay.
      const { tokens } = relay.allocate()!;
      const aSeesB = a.addRelayRoute(relay.publicAddress, tokens[0]);
      const bSeesA = b.addRelayRoute(relay.publicAddress, tokens[1]);
      expect(aSeesB).toBe(`[100::1]:${relay.address.port}`);
      expect(b.bindRelayRoute(bSeesA)).toBe(true);
      const accepted = new Promise<{ address: string }>((resolve) => a.on("connection", (c) => resolve(c)));
      const relayed = await b.connect(bSeesA, { connectTimeoutMs: 3000 });
      expect(relayed.address).toBe(bSeesA);
      expect((await accepted).address).toBe(aSeesB);
      expect(await echoOf(relayed, Uint8Array.of(9))).toEqual([9]);
      expect(relay.counters().forwarded).toBeGreaterThan(1);
      expect(aConnections).toBe(2);

      // Failures come back typed: a timeout, an abort, a bad token.
      await expect(b.connect("127.0.0.1:9", { connectTimeoutMs: 300 })).rejects.toMatchObject({ code: "ERR_CONNECT_TIMEOUT" });
      const controller = new AbortController();
      const aborted = b.connect("127.0.0.1:9", { connectTimeoutMs: 5000, signal: controller.signal });
      setTimeout(() => controller.abort(new Error("player left")), 50);
      await expect(aborted).rejects.toMatchObject({ code: "ERR_CONNECT_ABORTED", cause: { message: "player left" } });
      // Bad arguments fail as on the root Server: at the call for punch and routes, as a rejection for connect.
      await expect(b.connect("no-port")).rejects.toBeInstanceOf(rootApi.InvalidTargetError);
      expect(() => b.punch("127.0.0.1:9", new Uint8Array(3))).toThrow(rootApi.InvalidPunchTokenError);
      expect(() => b.punch("not an address", token)).toThrow(rootApi.InvalidAddressError);
      expect(() => b.addRelayRoute("[::1]:9", tokens[1])).toThrow(rootApi.InvalidOptionError);
      expect(() => b.addRelayRoute(relay.publicAddress, new Uint8Array(3))).toThrow(rootApi.RelayConfigError);
      expect(() => b.addRelayRoute(`127.0.0.2:${relay.address.port}`, tokens[1])).toThrow(/another relay/);
      // Adding a known token again: the same address.
      expect(b.addRelayRoute(relay.publicAddress, tokens[1])).toBe(bSeesA);
      await relayed.close();
      await direct.close();
      b.removeRelayRoute(bSeesA);
      expect(b.bindRelayRoute(bSeesA)).toBe(false);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await relay.close();
    }
    await expect(b.connect(`127.0.0.1:${a.address.port}`)).rejects.toBeInstanceOf(rootApi.ClosedError);
  }, 20_000);

  it("follows the worker's route evictions, and a connect still waiting when the server closes rejects with ClosedError", async () => {
    const server = await workerApi.listen(base);
    try {
      const relay = "127.0.0.1:9";
      const first = server.addRelayRoute(relay, new Uint8Array(8).fill(1));
      for (let i = 2; i <= 65; i++) server.addRelayRoute(relay, new Uint8Array(8).fill(i));
      // The worker's server keeps 64 and evicts the least recently used, the first; it says so.
      const deadline = Date.now() + 3000;
      while (server.bindRelayRoute(first) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(server.bindRelayRoute(first)).toBe(false);
      // Routed again, the token gets a new address: addresses are never reused.
      expect(server.addRelayRoute(relay, new Uint8Array(8).fill(1))).toBe("[100::42]:9");
      // A token routed again while the worker evicts its route. In this one synchronous stretch
      // the re-add of token 1 above made the worker evict [100::2], token 99 evicts [100::3],
      // and token 2 is routed again before the report of [100::2]'s eviction came back: the
      // route is back on the worker, and this thread ignores that older report.
      const second = "[100::2]:9";
      const third = "[100::3]:9";
      server.addRelayRoute(relay, new Uint8Array(8).fill(99));
      expect(server.addRelayRoute(relay, new Uint8Array(8).fill(2))).toBe(second);
      const settle = Date.now() + 3000;
      while (server.bindRelayRoute(third) && Date.now() < settle) await new Promise((r) => setTimeout(r, 20));
      expect(server.bindRelayRoute(third)).toBe(false); // evicted to make room for the re-add
      expect(server.bindRelayRoute(second)).toBe(true);
      expect(server.addRelayRoute(relay, new Uint8Array(8).fill(2))).toBe(second);
    } finally {
      // A handshake to a silent port, far from its timeout: close() ends it with ClosedError.
      const pending = server.connect("127.0.0.1:9", { connectTimeoutMs: 20_000 });
      const outcome = pending.then(
        () => "resolved",
        (error: Error) => error.name,
      );
      await new Promise((r) => setTimeout(r, 50));
      await server.close();
      expect(await Promise.race([outcome, new Promise((r) => setTimeout(() => r("pending"), 3000))])).toBe("ClosedError");
    }
  }, 20_000);

  it("natConnect and answerIntroductions run on WorkerServers: introduced through a lobby, the joiner connects where the host's punch came from", async () => {
    const hostServer = await workerApi.listen(base);
    const joinerServer = await workerApi.listen(base);
    let punches = 0;
    joinerServer.on("punch", () => punches++);
    await introduce(hostServer, joinerServer, { punchWaitMs: 2000 }, async ({ conn, answering, relay }) => {
      // Loopback has no NAT: the host's punch arrives, and the joiner connects to where it came from.
      expect(punches).toBeGreaterThan(0);
      expect(conn.address).toBe(`127.0.0.1:${hostServer.address.port}`);
      expect(await echoOf(conn, Uint8Array.of(7, 7))).toEqual([7, 7]);
      // The host added (and bound) its side of the relay allocation the lobby offered.
      expect(answering.counters).toMatchObject({ introductions: 1, relayRoutes: 1 });
      expect(relay.counters().binds).toBeGreaterThan(0);
    });
  }, 20_000);

  it("a WorkerServer joiner falls back to the relay when the host drops its datagrams", async () => {
    // The host (on this thread) drops everything from the joiner's own address, as a NAT would
    // that never saw it: punches from the host get out, but no direct handshake gets in.
    const blocked = new Set<string>();
    const hostServer = (await rootApi.createRuntime(firewalled(nodeRuntime.nodeAdapter, blocked)).listen(base)) as unknown as HostSocket;
    const joinerServer = await workerApi.listen(base);
    blocked.add(`127.0.0.1:${joinerServer.address.port}`);
    await introduce(hostServer, joinerServer, { punchWaitMs: 300, directTimeoutMs: 400, connect: { connectTimeoutMs: 3000 } }, async ({ conn, relay }) => {
      expect(conn.address).toMatch(/^\[100::[0-9a-f:]+\]:/);
      expect(await echoOf(conn, Uint8Array.of(5, 6))).toEqual([5, 6]);
      expect(relay.counters().forwarded).toBeGreaterThan(2);
    });
  }, 20_000);
});
