// Seed 000's delayed send through the public API on real loopback sockets: a message sent with
// delayMs leaves no earlier than its delay; an undelayed one sent after it overtakes it.
import { describe, expect, it } from "vitest";
import { connect, listen } from "../../src/index.js";

describe("send(..., { delayMs })", () => {
  it("holds the message for its delay; later undelayed sends overtake it", async () => {
    const server = await listen({ protocolId: 12, host: "127.0.0.1", port: 0 });
    const arrivals: { tag: number; at: number }[] = [];
    server.on("connection", (conn) => conn.on("message", (m) => arrivals.push({ tag: m.data[0]!, at: performance.now() })));
    try {
      const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId: 12 });
      const sentAt = performance.now();
      conn.send(new Uint8Array([1]), { channel: 0, delayMs: 200 });
      conn.send(new Uint8Array([2]), { channel: 0 });
      const deadline = Date.now() + 5_000;
      while (arrivals.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(arrivals.map((a) => a.tag)).toEqual([2, 1]);
      expect(arrivals[1]!.at - sentAt).toBeGreaterThanOrEqual(195);
      await conn.close();
    } finally {
      await server.close();
    }
  }, 15_000);
});
