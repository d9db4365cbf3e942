// Address migration over real sockets on every runtime: each client runtime talks to a Node echo
// server through the UDP proxy, which mid-transfer closes its upstream socket and opens a new one
// (what a NAT that lost its mapping does: the server sees the client come from a new port, and
// its replies to the old port go nowhere). The connection must move, not close: every echo back
// once and in order, and the server reports the move.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProxy, type RunningProxy } from "../../runtimes/node/proxy.js";
import { assertBuilt, expectPlanDelivered, RUNTIMES, startPeer, type Peer, type PlanResult } from "./helpers.js";

/** About 0.6 s of sending at 10 messages per 10 ms tick: the rebinding lands inside it. */
const PLAN = [{ channel: 0, kind: "reliable", count: 600, size: 100 }];
const REBIND_AFTER_MS = 150;

let server: Peer;
let proxy: RunningProxy;

beforeAll(async () => {
  assertBuilt();
  server = await startPeer("node", "server", { events: true }, 120_000);
  const port = Number((await server.waitFor("listening")).listening);
  proxy = await startProxy({
    listen: { host: "127.0.0.1", port: 0, family: 4 },
    upstream: { host: "127.0.0.1", port, family: 4 },
    link: {},
    seed: 78,
  });
}, 60_000);

afterAll(async () => {
  server?.stop();
  await proxy?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("address migration through a NAT rebinding, real sockets", () => {
  for (const runtime of RUNTIMES) {
    it(`${runtime} client -> proxy (new upstream port mid-transfer) -> node server: the connection moves, every echo once and in order`, async () => {
      const seen = server.lines.length;
      const client = await startPeer(runtime, "client", { target: `127.0.0.1:${proxy.address.port}`, plan: PLAN, burst: 10, tickMs: 10, waitMs: 20_000 }, 60_000);
      const connection = await server.waitFor("event", 30_000, seen);
      expect(connection.event).toBe("connection");
      await sleep(REBIND_AFTER_MS);
      proxy.rebind();
      const result = (await client.waitFor("ok", 60_000)) as unknown as PlanResult;
      await client.exited();
      const why = `${runtime}: ${JSON.stringify({ ...result, channels: undefined })}; server: ${JSON.stringify(server.lines.slice(seen))}`;
      expectPlanDelivered(result, why);
      // Only the client's own close at the end of its plan: never "no-connection".
      expect(result.disconnect ?? "normal", why).toBe("normal");
      const moves = server.lines.slice(seen).filter((l) => l.event === "migrate" && l.id === connection.id);
      expect(moves.length, why).toBe(1);
      expect(moves[0].to, why).not.toBe(moves[0].from);
      expect(moves[0].address, why).toBe(moves[0].to);
    }, 90_000);
  }
});
