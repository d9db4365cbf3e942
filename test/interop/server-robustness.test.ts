// A server and the application code it calls, on Node, Bun and Deno over loopback (the fixture
// fixtures/server-robustness.mjs; the session-level cases are test/session/server-robustness.test.ts):
// listen() refuses options no connection could be opened with; an accept hook that throws
// refuses that client at once, its error reaches the server's "error" listeners (not the
// runtime's unhandled-error path), and other
// clients' reliable streams lose nothing; a connection closed from the "connection" listener
// reaches its client as connect-then-disconnect; the session's drops are counted by reason.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { assertBuilt, FIXTURES, Peer, RUNTIMES } from "./helpers.js";

interface FixtureResult {
  badOptions: string[];
  bad: string[];
  badConnectMs: number;
  uncaught: number;
  acceptErrors: number;
  acceptHookErrors: number;
  good: { sent: number; got: number; inOrder: boolean }[];
  badCrcDrops: number;
  kick: { outcome: string; reason?: string; serverOpened: number };
}

describe("a server and the application code it calls", () => {
  for (const runtime of RUNTIMES) {
    it(`${runtime}: bad options, a throwing accept hook, a kick on connect, counted garbage`, async () => {
      assertBuilt();
      const peer = new Peer(runtime, join(FIXTURES, "server-robustness.mjs"), [], 40_000);
      const r = (await peer.waitFor("kick", 35_000)) as unknown as FixtureResult;
      peer.stop();
      const context = JSON.stringify(r);
      expect(r.badOptions.map((s) => s.split(":")[0]), context).toEqual(["ChannelConfigError", "ChannelConfigError", "CongestionConfigError"]);
      // Each bad client is refused by the server, not left to its 4 s connect timeout.
      expect(r.bad, context).toEqual(Array(10).fill("ERR_CONNECT_DENIED:refused"));
      expect(r.badConnectMs, context).toBeLessThan(3000);
      expect(r.uncaught, context).toBe(0);
      expect(r.acceptErrors, context).toBe(10);
      expect(r.acceptHookErrors, context).toBe(10);
      expect(r.good, context).toHaveLength(3);
      for (const g of r.good) {
        expect(g.sent, context).toBeGreaterThan(20);
        expect(g, context).toEqual({ sent: g.sent, got: g.sent, inOrder: true });
      }
      expect(r.badCrcDrops, context).toBe(5);
      expect(r.kick, context).toMatchObject({ outcome: "connected", reason: "kicked", serverOpened: 1 });
    }, 45_000);
  }
});
