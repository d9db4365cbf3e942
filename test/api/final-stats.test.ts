// A connection's final stats stay readable after it ended: the "disconnect" event (and
// `closed`) carry them, and stats() keeps answering with them.
import { describe, expect, it } from "vitest";
import { connect, listen, type Connection, type DisconnectInfo } from "../../src/index.js";

const base = { protocolId: 0xf1a1 };

describe("final stats", () => {
  it("stats() answers after the end, on both sides, with what the disconnect carried", async () => {
    const server = await listen({ ...base, host: "127.0.0.1", port: 0 });
    const serverSide: Promise<{ conn: Connection; info: DisconnectInfo }> = new Promise((resolve) =>
      server.on("disconnect", ({ connection, info }) => resolve({ conn: connection, info })),
    );
    try {
      const client = await connect(`127.0.0.1:${server.address.port}`, base);
      for (let i = 0; i < 5; i++) client.send(new Uint8Array(300));
      expect(await client.send(new Uint8Array(300), { receipt: true })).toBe(true);
      const info = await client.close();
      expect(info.stats?.messagesSent[0]).toBe(6);
      expect(client.stats()).toBe(info.stats);
      expect(client.stats().bytesSent).toBeGreaterThan(1800);
      expect(client.stats().rttEwmaMs).toBeGreaterThan(0);
      const { conn, info: serverInfo } = await serverSide;
      expect(serverInfo.stats?.messagesReceived[0]).toBe(6);
      expect(conn.stats().messagesReceived[0]).toBe(6);
    } finally {
      await server.close();
    }
  });
});
