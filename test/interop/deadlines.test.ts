// Per-message deadlines over a real socket: `deadlineMs` on a reliable-ordered channel while
// dropTest discards 30 % of the client's datagrams. What arrives arrives once and in order, a
// true receipt means it arrived, some messages are given up, and the stream keeps flowing past
// them (the last messages, sent after the others settled, all arrive).
import { describe, expect, it } from "vitest";
import { connect, listen, InvalidDeadlineError } from "../../src/index.js";

const index = (data: Uint8Array): number => new DataView(data.buffer, data.byteOffset).getUint32(0, true);

describe("deadlineMs over loopback", () => {
  it("30% of datagrams dropped: delivered once and in order, receipts agree, the stream goes on", async () => {
    const server = await listen({ protocolId: 12, host: "127.0.0.1", port: 0, seed: 7 });
    const received: number[] = [];
    server.on("connection", (conn) => conn.on("message", (m) => received.push(index(m.data))));
    try {
      const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId: 12, dropTest: 0.3, seed: 8, connectTimeoutMs: 10_000 });
      const receipts: Promise<boolean>[] = [];
      const payload = (i: number): Uint8Array => {
        const b = new Uint8Array(64);
        new DataView(b.buffer).setUint32(0, i, true);
        return b;
      };
      // 200 messages a few ms apart, each given 40 ms: on loopback an ack comes in well under a
      // millisecond, so only the messages whose datagrams were dropped (and whose resends were)
      // miss it.
      for (let i = 0; i < 200; i++) {
        receipts.push(conn.send(payload(i), { channel: 0, receipt: true, deadlineMs: 40 }));
        await new Promise((r) => setTimeout(r, 3));
      }
      const delivered = await Promise.all(receipts);
      // Then 20 without a deadline: they must all arrive, none held behind a given-up one.
      for (let i = 200; i < 220; i++) conn.send(payload(i), { channel: 0 });
      const until = Date.now() + 15_000;
      while (!received.includes(219) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(new Set(received).size).toBe(received.length);
      for (let k = 1; k < received.length; k++) expect(received[k]).toBeGreaterThan(received[k - 1]);
      delivered.forEach((ok, i) => {
        if (ok) expect(received, `message ${i}: receipt true`).toContain(i);
      });
      for (let i = 200; i < 220; i++) expect(received).toContain(i);
      console.log(`deadlines: ${delivered.filter((ok) => !ok).length} of 200 given up, ${received.length} of 220 delivered`);
      expect(conn.stats().deadlinesMissed).toBe(delivered.filter((ok) => !ok).length);
      await conn.close();
    } finally {
      await server.close();
    }
  }, 40_000);

  it("refuses a deadline that is not a finite number > 0", async () => {
    const server = await listen({ protocolId: 13, host: "127.0.0.1", port: 0 });
    try {
      const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId: 13 });
      expect(() => conn.send(new Uint8Array(1), { deadlineMs: 0 })).toThrow(InvalidDeadlineError);
      expect(() => conn.send(new Uint8Array(1), { deadlineMs: Number.NaN })).toThrow(InvalidDeadlineError);
      await conn.close();
    } finally {
      await server.close();
    }
  });
});
