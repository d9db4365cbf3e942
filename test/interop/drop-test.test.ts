// Seed 004's drop-test switch: `dropTest` discards a fraction of outgoing datagrams on a real
// socket, and reliable delivery still holds (exactly once, in order) — the loss is real: the
// sender resends.
import { describe, expect, it } from "vitest";
import { connect, listen, InvalidOptionError } from "../../src/index.js";

describe("dropTest", () => {
  it("30% of the client's datagrams discarded: 300 reliable-ordered messages still arrive once, in order, and the client resent", async () => {
    const server = await listen({ protocolId: 11, host: "127.0.0.1", port: 0, seed: 5 });
    const received: number[] = [];
    server.on("connection", (conn) => conn.on("message", (m) => received.push(new DataView(m.data.buffer, m.data.byteOffset).getUint32(0, true))));
    try {
      const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId: 11, dropTest: 0.3, seed: 6, connectTimeoutMs: 10_000 });
      for (let i = 0; i < 300; i++) {
        const b = new Uint8Array(64);
        new DataView(b.buffer).setUint32(0, i, true);
        conn.send(b, { channel: 0 });
      }
      const deadline = Date.now() + 20_000;
      while (received.length < 300 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(received).toEqual(Array.from({ length: 300 }, (_, i) => i));
      expect(conn.stats().resends).toBeGreaterThan(0);
      await conn.close();
    } finally {
      await server.close();
    }
  }, 30_000);

  it("rejects a drop rate outside 0..1 with a typed error", async () => {
    await expect(connect("127.0.0.1:9", { protocolId: 11, dropTest: 1.5 })).rejects.toBeInstanceOf(InvalidOptionError);
    await expect(listen({ protocolId: 11, dropTest: -0.1 })).rejects.toBeInstanceOf(InvalidOptionError);
  });
});
