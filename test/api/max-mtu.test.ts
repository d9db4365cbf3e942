// listen()/connect() take `maxMtu`, path MTU discovery's ceiling, as docs/SESSION.md says
// ("`maxMtu: mtu` turns discovery off"); they refused it as an unknown option (found by a docs
// review). Real loopback sockets, Node: loopback carries the default ceiling (1452).
import { describe, expect, it } from "vitest";
import { connect, listen } from "../../src/index.js";

const protocolId = 0x11a2;

async function pathMtuAfterTraffic(maxMtu: number | undefined): Promise<number> {
  const opts = maxMtu === undefined ? {} : { maxMtu };
  const server = await listen({ protocolId, host: "127.0.0.1", port: 0, ...opts });
  try {
    server.on("connection", (c) => c.on("message", (m) => c.send(m.data, { channel: m.channel })));
    const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId, ...opts });
    // Traffic for a while: discovery probes once an RTT is known, a few per search.
    for (let i = 0; i < 40 && conn.stats().pathMtu === 1200; i++) {
      conn.send(new Uint8Array(2000), { channel: 0 });
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const mtu = conn.stats().pathMtu;
    await conn.close();
    return mtu;
  } finally {
    await server.close();
  }
}

describe("maxMtu", () => {
  it("is a listen()/connect() option: maxMtu equal to mtu keeps every datagram at 1200 bytes", async () => {
    expect(await pathMtuAfterTraffic(1200)).toBe(1200);
    expect(await pathMtuAfterTraffic(undefined)).toBeGreaterThan(1200);
  }, 20_000);
});
