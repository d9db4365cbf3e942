// LAN discovery by broadcast on Node, Bun and Deno, over a real subnet: two network namespaces
// joined by a veth pair (10.77.0.1/24 and 10.77.0.2/24, broadcast 10.77.0.255), made here and
// removed after. A responder on 10.77.0.2 is found by an asker that sends only to 10.77.0.255:
// the asker's socket must allow broadcast (without it Node and Bun refuse the send, EACCES).
// Nothing is sent outside the two namespaces. Skipped (with the reason) without root/iproute2.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ip, probeNamespace } from "../../bench/lib/netns.mjs";
import { assertBuilt, Peer, RUNTIMES } from "./helpers.js";

const skip = probeNamespace("bc", () => {}, "network namespaces are not available (root and iproute2 needed)");
if (skip !== undefined) console.warn(`LAN broadcast tests skipped: ${skip}`);

const A = `aw-bc-${process.pid}-a`;
const B = `aw-bc-${process.pid}-b`;
const PORT = 47777;

describe.skipIf(skip !== undefined)("LAN discovery by broadcast", () => {
  beforeAll(() => {
    assertBuilt();
    ip(["netns", "add", A]);
    ip(["netns", "add", B]);
    ip(["-n", A, "link", "add", "bc0", "type", "veth", "peer", "name", "bc1", "netns", B]);
    ip(["-n", A, "addr", "add", "10.77.0.1/24", "brd", "10.77.0.255", "dev", "bc0"]);
    ip(["-n", B, "addr", "add", "10.77.0.2/24", "brd", "10.77.0.255", "dev", "bc1"]);
    for (const [ns, dev] of [[A, "bc0"], [B, "bc1"]] as const) {
      ip(["-n", ns, "link", "set", dev, "up"]);
      ip(["-n", ns, "link", "set", "lo", "up"]);
    }
  });
  afterAll(() => {
    for (const ns of [A, B]) {
      try {
        ip(["netns", "del", ns]);
      } catch {
        // already gone
      }
    }
  });

  for (const runtime of RUNTIMES) {
    it(`${runtime}: a query to 10.77.0.255 finds the host on 10.77.0.2`, async () => {
      const responder = new Peer(runtime, "lan-broadcast.mjs", ["responder", JSON.stringify({ port: PORT, name: `lan-${runtime}` })], 25_000, B);
      try {
        await responder.waitFor("listening", 15_000);
        const asker = new Peer(runtime, "lan-broadcast.mjs", ["asker", JSON.stringify({ target: `10.77.0.255:${PORT}` })], 25_000, A);
        const { hosts } = (await asker.waitFor("hosts", 20_000)) as { hosts: { name: string; from: string; gameAddress: string }[] };
        expect(hosts, asker.stderr.join("")).toEqual([{ name: `lan-${runtime}`, from: `10.77.0.2:${PORT}`, gameAddress: "10.77.0.2:7777" }]);
        asker.stop();
      } finally {
        responder.stop();
      }
    }, 40_000);
  }
});
