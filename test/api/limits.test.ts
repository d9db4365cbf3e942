// Connection.maxMessageBytes(channel): the largest message send() takes on a channel, the
// channel's maxMessageBytes with its default resolved for the mtu (docs/CHANNELS.md,
// "Fragmentation and its bounds"). Real loopback sockets, Node.
import { describe, expect, it } from "vitest";
import { connect, listen, MessageTooLargeError } from "../../src/index.js";

const protocolId = 0x11a1;

describe("Connection.maxMessageBytes()", () => {
  it("says each channel's limit, and send() throws just above it", async () => {
    const channels = [{ mode: "reliable-ordered" as const }, { mode: "unreliable" as const }, { mode: "reliable-ordered" as const, maxMessageBytes: 100 }];
    const server = await listen({ protocolId, host: "127.0.0.1", port: 0, channels });
    try {
      const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId, channels });
      expect([0, 1, 2, 3].map((c) => conn.maxMessageBytes(c))).toEqual([1024 * 1024, 64 * 1024, 100, undefined]);
      expect(conn.maxMessageBytes()).toBe(1024 * 1024);
      expect(() => conn.send(new Uint8Array(100), { channel: 2 })).not.toThrow();
      expect(() => conn.send(new Uint8Array(101), { channel: 2 })).toThrow(MessageTooLargeError);
      await conn.close();
    } finally {
      await server.close();
    }
  });
});
