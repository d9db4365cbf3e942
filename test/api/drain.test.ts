// Back-pressure without polling: a send() that leaves a connection's queued bytes at or above
// its highWaterMark sets needsDrain, and "drain" comes once acks bring them below it.
import { describe, expect, it } from "vitest";
import { connect, InvalidOptionError, listen } from "../../src/index.js";

const base = { protocolId: 0xd4a1 };

describe("drain", () => {
  it("a bulk sender paced by drain events delivers everything and never holds much more than the mark", async () => {
    const server = await listen({ ...base, host: "127.0.0.1", port: 0 });
    let received = 0;
    server.on("connection", (conn) => conn.on("message", (m) => (received += m.data.length)));
    try {
      const client = await connect(`127.0.0.1:${server.address.port}`, { ...base, highWaterMark: 64 * 1024 });
      expect(client.highWaterMark).toBe(64 * 1024);
      const total = 2 * 1024 * 1024;
      const chunk = new Uint8Array(8 * 1024);
      let sent = 0;
      let drains = 0;
      let peak = 0;
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`stalled at ${sent} bytes, ${drains} drains`)), 20_000);
        const pump = (): void => {
          while (sent < total && !client.needsDrain) {
            client.send(chunk);
            sent += chunk.length;
            peak = Math.max(peak, client.queuedBytes);
          }
          if (sent >= total) {
            clearTimeout(timer);
            resolve();
          }
        };
        client.on("drain", ({ queuedBytes }) => {
          drains++;
          expect(queuedBytes).toBeLessThan(64 * 1024);
          expect(client.needsDrain).toBe(false);
          pump();
        });
        pump();
      });
      expect(drains).toBeGreaterThan(5);
      // One chunk past the mark at most.
      expect(peak).toBeLessThan(64 * 1024 + chunk.length);
      await client.close();
      expect(received).toBe(total);
      expect(client.queuedBytes).toBe(0);
    } finally {
      await server.close();
    }
  }, 30_000);

  it("below the mark nothing is flagged; a bad highWaterMark is refused", async () => {
    const server = await listen({ ...base, host: "127.0.0.1", port: 0 });
    try {
      const client = await connect(`127.0.0.1:${server.address.port}`, base);
      client.send(new Uint8Array(1000));
      expect(client.queuedBytes).toBe(1000);
      expect(client.needsDrain).toBe(false);
      client.highWaterMark = 500;
      client.send(new Uint8Array(1000));
      expect(client.needsDrain).toBe(true);
      await new Promise<void>((resolve) => client.once("drain", () => resolve()));
      await client.close();
      await expect(connect("127.0.0.1:9", { ...base, highWaterMark: 0 })).rejects.toThrow(InvalidOptionError);
    } finally {
      await server.close();
    }
  });
});
