/**
 * The matchmaking list, sans-IO: the registry on a virtual clock, then hosts and a client
 * talking to it through RpcPeers wired back to back (what attachRpc does over a connection).
 */
import { describe, expect, it } from "vitest";
import { LobbyHost, LobbyRegistry, lobbyHandlers } from "../../src/game/lobby.js";
import { RpcPeer } from "../../src/game/rpc.js";
import { settle } from "./helpers.js";

const info = (name: string, players = 1, tags: string[] = []) => ({ name, gamePort: 7777, players, maxPlayers: 4, tags });

describe("LobbyRegistry", () => {
  it("lists, filters, expires and bounds entries", () => {
    const reg = new LobbyRegistry({ ttlMs: 1000, maxEntries: 3 });
    reg.register(0, 1, "203.0.113.5", info("Alpha Base", 1, ["ctf"]));
    reg.register(0, 2, "2001:db8::7", info("beta", 4, ["dm"]));
    reg.register(500, 3, "198.51.100.1", info("Gamma", 2, ["ctf"]));
    expect(reg.list(600).map((e) => e.address)).toEqual(["203.0.113.5:7777", "[2001:db8::7]:7777", "198.51.100.1:7777"]);
    expect(reg.list(600, { tag: "ctf" }).map((e) => e.name)).toEqual(["Alpha Base", "Gamma"]);
    expect(reg.list(600, { notFull: true }).map((e) => e.name)).toEqual(["Alpha Base", "Gamma"]);
    expect(reg.list(600, { name: "ALPHA" }).map((e) => e.name)).toEqual(["Alpha Base"]);
    expect(reg.list(600, { limit: 1 }).length).toBe(1);
    expect(() => reg.register(600, 4, "192.0.2.1", info("delta"))).toThrow(expect.objectContaining({ code: "ERR_LOBBY_FULL" }));
    reg.heartbeat(900, 1, 3);
    // At 1100 the entries last heard at 0 (owner 2) have expired; owner 1 heartbeat at 900.
    expect(reg.list(1100).map((e) => [e.name, e.players])).toEqual([
      ["Alpha Base", 3],
      ["Gamma", 2],
    ]);
    expect(reg.pollTimeout()).toBe(1000); // owner 2 still held until handleTimeout
    reg.handleTimeout(1100);
    expect(reg.size).toBe(2);
    expect(() => reg.heartbeat(1100, 2)).toThrow(expect.objectContaining({ code: "ERR_LOBBY_NOT_REGISTERED" }));
    reg.register(1100, 4, "192.0.2.1", info("delta")); // room again
    expect(reg.size).toBe(3);
    expect(() => reg.register(1100, 5, "192.0.2.2", { ...info("bad"), players: 9 })).toThrow(expect.objectContaining({ code: "ERR_GAME_USAGE" }));
  });
});

describe("lobby over RPC", () => {
  it("hosts register and heartbeat; clients list; silent hosts expire; bad params get typed remote errors", async () => {
    const clock = { now: 0 };
    const registry = new LobbyRegistry({ ttlMs: 3000 });
    /** One connection to the lobby server: [client-side peer, flush]. */
    const queues: (() => Promise<void>)[] = [];
    function connect(owner: number, ip: string): RpcPeer {
      const toServer: Uint8Array[] = [];
      const toClient: Uint8Array[] = [];
      const server = new RpcPeer({ send: (d) => toClient.push(d), now: () => clock.now, handlers: lobbyHandlers(registry, owner, ip, () => clock.now) });
      const client = new RpcPeer({ send: (d) => toServer.push(d), now: () => clock.now });
      queues.push(async () => {
        for (let i = 0; i < 20 && (toServer.length || toClient.length); i++) {
          for (const d of toServer.splice(0)) server.receive(d);
          await settle();
          for (const d of toClient.splice(0)) client.receive(d);
          await settle();
        }
      });
      return client;
    }
    const pump = async () => {
      for (const q of queues) await q();
    };
    const peerA = connect(1, "203.0.113.5");
    const hostA = new LobbyHost((m, p) => peerA.call(m, p), info("alpha", 1, ["ctf"]));
    const peerB = connect(2, "198.51.100.9");
    const hostB = new LobbyHost((m, p) => peerB.call(m, p), info("beta", 2));
    const viewer = connect(3, "192.0.2.50");
    const ids = Promise.all([hostA.register(0), hostB.register(0)]);
    await pump();
    expect((await ids).length).toBe(2);

    // Ten seconds of virtual time: A heartbeats on schedule, B goes silent after 2 s.
    for (clock.now = 0; clock.now <= 10_000; clock.now += 250) {
      if (clock.now === 5000) hostA.setPlayers(3);
      hostA.handleTimeout(clock.now);
      if (clock.now <= 2000) hostB.handleTimeout(clock.now);
      await pump();
    }
    const listing = viewer.call("lobby.list", { notFull: true });
    await pump();
    expect(await listing).toEqual([{ id: 1, address: "203.0.113.5:7777", name: "alpha", players: 3, maxPlayers: 4, tags: ["ctf"], appData: new Uint8Array(0) }]);
    expect(hostA.failures).toBe(0);

    const bad = viewer.call("lobby.register", { name: "x", gamePort: 70000, players: 0, maxPlayers: 2 });
    const badList = viewer.call("lobby.list", { limit: 5000 });
    const notRegistered = viewer.call("lobby.heartbeat", {});
    await pump();
    await expect(bad).rejects.toMatchObject({ code: "ERR_RPC_REMOTE", remoteCode: "ERR_GAME_USAGE" });
    await expect(badList).rejects.toMatchObject({ remoteCode: "ERR_GAME_USAGE" });
    await expect(notRegistered).rejects.toMatchObject({ remoteCode: "ERR_LOBBY_NOT_REGISTERED" });
  });

  it("LobbyHost refuses a player count over maxPlayers (every heartbeat would fail), and bad host info", () => {
    const calls: unknown[] = [];
    const host = new LobbyHost(async (m, p) => (calls.push([m, p]), { id: 1, ttlMs: 3000 }), { name: "a", gamePort: 7777, players: 1, maxPlayers: 8 });
    for (const players of [9, 50, -1, 1.5, NaN]) expect(() => host.setPlayers(players), `players ${players}`).toThrow(expect.objectContaining({ code: "ERR_GAME_USAGE" }));
    host.setPlayers(8);
    host.setPlayers(0);
    for (const bad of [
      { name: "a", gamePort: 7777, players: 9, maxPlayers: 8 },
      { name: "", gamePort: 7777, players: 1, maxPlayers: 8 },
      { name: "a", gamePort: 70000, players: 1, maxPlayers: 8 },
    ]) {
      expect(() => new LobbyHost(async () => null, bad), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: "ERR_GAME_USAGE" }));
    }
    expect(calls).toEqual([]);
    for (const o of [{ ttlMs: NaN }, { ttlMs: 0 }, { maxEntries: 0 }, { maxEntries: 1.5 }]) expect(() => new LobbyRegistry(o), JSON.stringify(o)).toThrow(expect.objectContaining({ code: "ERR_GAME_USAGE" }));
  });
});
