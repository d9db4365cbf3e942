/**
 * LAN discovery: the sans-IO asker/responder on the simulated network (loss, other games,
 * forged and corrupted datagrams, rate limits, no amplification), then the socket part on
 * 127.0.0.1 (unicast to the responder's port: nothing is sent to any non-loopback address).
 */
import { describe, expect, it } from "vitest";
import { DiscoveryAsker, DiscoveryResponder, QUERY_BYTES, decodeDiscovery, encodeAnswer, encodeQuery, type HostInfo } from "../../src/game/discovery.js";
import { discoverHosts, startDiscoveryResponder } from "../../src/game/discovery-socket.js";
import { Network } from "../../src/sim/network.js";
import { Rng } from "../../src/sim/rng.js";

const APP = 0x47414d45;
const info = (name: string, players: number): HostInfo => ({ name, gamePort: 7777, players, maxPlayers: 8, appData: new Uint8Array([1, 2, 3]) });

describe("discovery on the simulator", () => {
  it("finds every host of this game and not the others, under 20% loss (seed 51)", () => {
    const seed = 51;
    const net = new Network({ seed, defaultLink: { latencyMs: 2, jitterMs: 1, lossRate: 0.2 } });
    const hosts = ["10.0.0.11:47777", "10.0.0.12:47777", "10.0.0.13:47777"];
    const responders = hosts.map((h, i) => net.addNode(h, new DiscoveryResponder({ appId: APP, info: info(`host-${i}`, i + 1) })));
    const otherGame = net.addNode("10.0.0.14:47777", new DiscoveryResponder({ appId: APP + 1, info: info("other", 1) }));
    const asker = net.addNode("10.0.0.50:5000", new DiscoveryAsker({ appId: APP, targets: [...hosts, "10.0.0.14:47777"], seed }));
    for (let round = 0; round < 8; round++) {
      asker.query(net.now);
      net.drive({ maxTimeMs: 250, maxSteps: 10_000 });
    }
    const found = asker.hosts(net.now);
    expect(found.map((h) => h.name), `seed ${seed}`).toEqual(["host-0", "host-1", "host-2"]);
    expect(found[1]).toMatchObject({ from: "10.0.0.12:47777", gameAddress: "10.0.0.12:7777", players: 2, maxPlayers: 8, appData: new Uint8Array([1, 2, 3]) });
    expect(found[0]!.rttMs).toBeGreaterThanOrEqual(4);
    expect(otherGame.counters.otherApp).toBeGreaterThan(0);
    expect(otherGame.counters.answered).toBe(0);
    expect(responders.reduce((n, r) => n + r.counters.answered, 0)).toBeGreaterThan(0);
    // Hosts that stop answering expire.
    net.drive({ maxTimeMs: 6000, maxSteps: 10_000 });
    expect(asker.hosts(net.now)).toEqual([]);
  });

  it("answers are never larger than the query, and oversized host info is refused", () => {
    const q = encodeQuery(APP, 7);
    expect(q.length).toBe(QUERY_BYTES);
    const big = { ...info("x".repeat(64), 1), appData: new Uint8Array(QUERY_BYTES - 90) };
    expect(encodeAnswer(APP, 7, big).length).toBeLessThanOrEqual(QUERY_BYTES);
    expect(() => new DiscoveryResponder({ appId: APP, info: { ...big, appData: new Uint8Array(QUERY_BYTES) } })).toThrow(
      expect.objectContaining({ code: "ERR_GAME_MESSAGE_TOO_LARGE" }),
    );
    expect(() => new DiscoveryResponder({ appId: APP, info: info("é".repeat(40), 1) })).toThrow(expect.objectContaining({ code: "ERR_GAME_USAGE" }));
    const r = new DiscoveryResponder({ appId: APP, info: big });
    r.handleDatagram(0, "10.0.0.9:1", q);
    const answer = r.pollTransmit()!;
    expect(answer.bytes.length).toBeLessThanOrEqual(q.length);
    // A short (unpadded) query gets nothing.
    r.handleDatagram(1000, "10.0.0.9:1", q.subarray(0, 40));
    expect(r.pollTransmit()).toBeUndefined();
    expect(r.counters.malformed).toBe(1);
  });

  it("rate-limits answers per address and overall", () => {
    const r = new DiscoveryResponder({ appId: APP, info: info("h", 1), perAddressRate: 4, totalRate: 10 });
    const q = encodeQuery(APP, 1);
    for (let i = 0; i < 20; i++) r.handleDatagram(0, "10.0.0.9:1", q); // a flood from one address at t=0
    expect(r.counters.answered).toBe(2); // burst of 2
    r.handleDatagram(250, "10.0.0.9:1", q); // one token back after 250 ms at 4/s
    expect(r.counters.answered).toBe(3);
    for (let a = 0; a < 50; a++) r.handleDatagram(300, `10.0.1.${a}:1`, q); // many addresses at once
    expect(r.counters.answered).toBeLessThanOrEqual(3 + 10);
    expect(r.counters.rateLimited).toBeGreaterThan(40);
  });

  it("drops corrupted, forged and random datagrams without throwing (seed 52)", () => {
    const rng = new Rng(52);
    const asker = new DiscoveryAsker({ appId: APP, targets: ["10.0.0.1:1"], seed: 52 });
    const responder = new DiscoveryResponder({ appId: APP, info: info("h", 1) });
    asker.query(0);
    const query = asker.pollTransmit()!.bytes;
    const nonce = decodeDiscovery(query)!.nonce;
    const answer = encodeAnswer(APP, nonce, info("h", 1));
    // A bit flip anywhere fails the CRC.
    for (let i = 0; i < 500; i++) {
      const bad = answer.slice();
      bad[rng.int(bad.length)] ^= 1 << rng.int(8);
      asker.handleDatagram(1, "10.0.0.1:1", bad);
      const badQuery = query.slice();
      badQuery[rng.int(badQuery.length)] ^= 1 << rng.int(8);
      responder.handleDatagram(1, "10.0.0.2:1", badQuery);
      const junk = Uint8Array.from({ length: rng.int(300) }, () => rng.int(256));
      asker.handleDatagram(1, "10.0.0.1:1", junk);
      responder.handleDatagram(1, "10.0.0.2:1", junk);
    }
    expect(asker.hosts(1)).toEqual([]);
    expect(responder.pollTransmit()).toBeUndefined();
    expect(asker.counters.malformed).toBe(1000);
    expect(responder.counters.malformed).toBe(1000);
    // A well-formed answer to a nonce we never sent is not believed.
    asker.handleDatagram(1, "10.0.0.1:1", encodeAnswer(APP, nonce ^ 1, info("spoof", 1)));
    expect(asker.counters.unknownNonce).toBe(1);
    asker.handleDatagram(1, "10.0.0.1:1", answer);
    expect(asker.hosts(1).map((h) => h.name)).toEqual(["h"]);
  });
});

describe("discovery options", () => {
  it("refuses numeric options out of range, and host info with more players than maxPlayers", () => {
    const asker = (o: Record<string, unknown>) => () => new DiscoveryAsker({ appId: APP, targets: ["127.0.0.1:47777"], seed: 1, ...o } as never);
    for (const o of [{ appId: -1 }, { appId: 2 ** 32 }, { appId: 1.5 }, { seed: NaN }, { hostTtlMs: 0 }, { hostTtlMs: NaN }, { maxHosts: 0 }, { maxHosts: Infinity }, { targets: ["not-an-address"] }, { targets: "127.0.0.1:1" }]) {
      expect(asker(o), JSON.stringify(o)).toThrow(expect.objectContaining({ code: "ERR_GAME_USAGE" }));
    }
    expect(asker({})).not.toThrow();
    const responder = (o: Record<string, unknown>) => () => new DiscoveryResponder({ appId: APP, info: info("a", 1), ...o } as never);
    for (const o of [{ appId: "x" }, { perAddressRate: 0 }, { perAddressRate: NaN }, { totalRate: -1 }, { totalRate: Infinity }, { maxTrackedAddresses: 0 }, { maxTrackedAddresses: 2.5 }]) {
      expect(responder(o), JSON.stringify(o)).toThrow(expect.objectContaining({ code: "ERR_GAME_USAGE" }));
    }
    expect(responder({})).not.toThrow();
    expect(responder({ info: { ...info("a", 1), players: 9, maxPlayers: 8 } })).toThrow(expect.objectContaining({ code: "ERR_GAME_USAGE" }));
    const r = new DiscoveryResponder({ appId: APP, info: info("a", 1) });
    expect(() => r.setInfo({ ...info("a", 1), players: 9 })).toThrow(expect.objectContaining({ code: "ERR_GAME_USAGE" }));
    r.setInfo({ ...info("a", 1), players: 8 });
  });

  it("discoverHosts rejects bad durations and intervals at once (no flood, no empty answer)", async () => {
    const target = "127.0.0.1:9";
    for (const o of [{ intervalMs: 0 }, { intervalMs: NaN }, { intervalMs: -1 }, { intervalMs: 5 }, { durationMs: -5 }, { durationMs: NaN }, { durationMs: Infinity }, { appId: -1 }, { targets: ["nope"] }, { seed: 1.5 }]) {
      const result = discoverHosts({ appId: APP, host: "127.0.0.1", targets: [target], durationMs: 300, ...o } as never).then(
        () => "resolved",
        (e: unknown) => e,
      );
      const outcome = await Promise.race([result, new Promise((r) => setTimeout(() => r("pending"), 1000))]);
      expect(outcome, JSON.stringify(o)).toMatchObject({ code: "ERR_GAME_USAGE" });
    }
  });
});

describe("discovery on real sockets (127.0.0.1)", () => {
  it("discoverHosts finds two responders by unicast on loopback", async () => {
    const a = await startDiscoveryResponder({ appId: APP, info: info("alpha", 3), port: 0, host: "127.0.0.1" });
    const b = await startDiscoveryResponder({ appId: APP, info: info("beta", 5), port: 0, host: "127.0.0.1" });
    try {
      const found = await discoverHosts({
        appId: APP,
        host: "127.0.0.1",
        targets: [`127.0.0.1:${a.address.port}`, `127.0.0.1:${b.address.port}`],
        durationMs: 300,
        intervalMs: 100,
        seed: 53,
      });
      expect(found.map((h) => [h.name, h.players, h.gameAddress])).toEqual([
        ["alpha", 3, "127.0.0.1:7777"],
        ["beta", 5, "127.0.0.1:7777"],
      ]);
      expect(a.responder.counters.answered).toBeGreaterThanOrEqual(1);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
