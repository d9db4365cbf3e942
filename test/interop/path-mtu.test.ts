// Path MTU discovery over real sockets on every runtime: each client runtime talks to a Node
// server through the impairment proxy, whose link drops every datagram over 1300 bytes (both
// ways). Bursts of small reliable-ordered messages fill datagrams to whatever size the
// connection uses, so a connection that overshot would lose every full datagram.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProxy, type RunningProxy } from "../../runtimes/node/proxy.js";
import { assertBuilt, expectPlanDelivered, RUNTIMES, startPeer, type Peer } from "./helpers.js";

const LINK_MTU = 1300;
const PLAN = [{ channel: 0, kind: "reliable", count: 1500, size: 100 }];

let server: Peer;
let proxy: RunningProxy;

beforeAll(async () => {
  assertBuilt();
  server = await startPeer("node", "server", {}, 120_000);
  const port = Number((await server.waitFor("listening")).listening);
  proxy = await startProxy({
    listen: { host: "127.0.0.1", port: 0, family: 4 },
    upstream: { host: "127.0.0.1", port, family: 4 },
    link: { mtu: LINK_MTU },
    seed: 77,
  });
}, 60_000);

afterAll(async () => {
  server?.stop();
  await proxy?.close();
});

describe("path MTU discovery through a 1300-byte link, real sockets", () => {
  for (const runtime of RUNTIMES) {
    it(`${runtime} client -> proxy (mtu ${LINK_MTU}) -> node server: finds 1284..1300, delivers everything in order`, async () => {
      const client = await startPeer(runtime, "client", { target: `127.0.0.1:${proxy.address.port}`, plan: PLAN, burst: 100, waitMs: 30_000 }, 60_000);
      const result = (await client.waitFor("ok", 60_000)) as unknown as import("./helpers.js").PlanResult;
      await client.exited();
      const why = `${runtime}: ${JSON.stringify({ ...result, channels: undefined })}`;
      expectPlanDelivered(result, why);
      expect(result.pathMtu, why).toBeLessThanOrEqual(LINK_MTU);
      expect(result.pathMtu, why).toBeGreaterThanOrEqual(LINK_MTU - 16);
    }, 90_000);
  }

  it("the link really dropped the probes that were too big", () => {
    const stats = proxy.stats();
    expect(stats.toUpstream.mtuDropped + stats.toClient.mtuDropped).toBeGreaterThanOrEqual(3 * RUNTIMES.length);
  });
});
