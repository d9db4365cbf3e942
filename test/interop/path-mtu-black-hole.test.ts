// A path MTU black hole below the base over a real kernel path: two network namespaces
// (bench/lib/netns.mjs) whose nftables input drops every UDP datagram over 1100 bytes of
// payload without a word (no ICMP, the link MTU stays 1500), so neither kernel learns of it. A
// client on each runtime sends 3000 B messages to a Node server that answers each one in order
// (test/interop/fixtures/black-hole-peer.mjs); all of them must arrive.
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, Peer, RUNTIMES } from "./helpers.js";
import { netnsUnsupported, probeNamespace, TwoHosts } from "../../bench/lib/netns.mjs";

const skip =
  netnsUnsupported() ??
  probeNamespace("nft", (name) => void execFileSync("ip", ["netns", "exec", name, "nft", "add", "table", "inet", "probe"], { stdio: "pipe" }), "nftables is not available");
if (skip !== undefined) console.warn(`path MTU black-hole tests skipped: ${skip}`);

interface ClientResult {
  ok: boolean;
  error?: string;
  sent: number;
  answered: number;
  allMs?: number;
  events: { pathMtu: number; belowBase: boolean; atMs: number }[];
  pathMtu?: number;
  pathMtuBlackHoles?: number;
}

const LIMIT = 1100;
const COUNT = 100;
const SIZE = 3000;

describe.skipIf(skip !== undefined)(`a path that silently drops UDP datagrams over ${LIMIT} bytes (netns + nftables)`, () => {
  let hosts: TwoHosts;
  let server: Peer;
  let port = 0;

  beforeAll(async () => {
    assertBuilt();
    hosts = new TwoHosts("bh", 97);
    hosts.dropUdpLargerThan(LIMIT);
    server = new Peer("node", "black-hole-peer.mjs", ["server", JSON.stringify({ deadlineMs: 240_000 })], 240_000, hosts.server);
    port = Number((await server.waitFor("listening")).listening);
  });

  afterAll(() => {
    server?.stop();
    hosts?.close();
  });

  for (const runtime of RUNTIMES) {
    it(`${runtime} client: ${COUNT} messages of ${SIZE} B all arrive; the size falls below the base and says so`, async () => {
      const drops = hosts.blackHoleDrops(hosts.server);
      const options = { target: `${hosts.serverIp}:${port}`, count: COUNT, size: SIZE, everyMs: 66, waitMs: 20_000 };
      const client = new Peer(runtime, "black-hole-peer.mjs", ["client", JSON.stringify(options)], 60_000, hosts.client);
      let result: ClientResult;
      try {
        expect((await client.waitFor("runtime")).runtime).toBe(runtime);
        result = (await client.waitFor("ok", 50_000)) as unknown as ClientResult;
      } finally {
        client.stop();
      }
      const why = JSON.stringify(result);
      expect(result.ok, why).toBe(true);
      // The black hole is real: full-size datagrams were dropped on the way.
      expect(hosts.blackHoleDrops(hosts.server) - drops, why).toBeGreaterThan(0);
      expect(result.answered, why).toBe(COUNT);
      expect(result.pathMtu, why).toBeLessThanOrEqual(LIMIT);
      expect(result.pathMtuBlackHoles, why).toBeGreaterThanOrEqual(1);
      expect(result.events.some((e) => e.belowBase && e.pathMtu < 1200), why).toBe(true);
    }, 70_000);
  }
});
