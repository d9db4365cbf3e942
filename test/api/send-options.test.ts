// send()'s options: an unknown key is refused (it would silently go out on channel 0), and a
// channel may be named by its config's `name`.
import { afterEach, describe, expect, it } from "vitest";
import { ChannelConfigError, connect, InvalidOptionError, listen, UnknownChannelNameError, type Connection, type Message, type Server } from "../../src/index.js";
import { checkSendOptionKeys } from "../../src/api/send-options.js";

const channels = [
  { mode: "reliable-ordered", name: "chat" },
  { mode: "unreliable-sequenced", name: "moves" },
  { mode: "reliable-unordered" },
  { mode: "latest-state", name: "entities" },
] as const;
const base = { protocolId: 0x5e0d, channels };

describe("send() options", () => {
  const open: (Server | Connection)[] = [];
  afterEach(async () => {
    for (const o of open.splice(0)) await o.close();
  });

  async function pair(): Promise<{ client: Connection; got: Message[] }> {
    const server = await listen({ ...base, host: "127.0.0.1", port: 0 });
    open.push(server);
    const got: Message[] = [];
    server.on("connection", (conn) => conn.on("message", (m) => got.push(m)));
    const client = await connect(`127.0.0.1:${server.address.port}`, base);
    open.push(client);
    return { client, got };
  }

  it("refuses a key send() does not know, naming the closest, and sends nothing", async () => {
    const { client } = await pair();
    const typo = { chanel: 1 } as unknown as { channel: number };
    expect(() => client.send(new Uint8Array(4), typo)).toThrow(InvalidOptionError);
    expect(() => client.send(new Uint8Array(4), typo)).toThrow(/unknown option "chanel" \(did you mean "channel"\?\); its options are channel, key, receipt, delayMs/);
    expect(() => client.send(new Uint8Array(4), { channel: 0, reciept: true } as never)).toThrow(/did you mean "receipt"/);
    // Undefined values are not checked (a spread of optional fields), as in listen()/connect().
    expect(() => client.send(new Uint8Array(4), { channel: 0, extra: undefined } as never)).not.toThrow();
    expect(client.stats().messagesSent).toEqual([1, 0, 0, 0]);
  });

  it("the key check walks own and inherited keys without Object.keys", () => {
    expect(() => checkSendOptionKeys(Object.create({ inherited: 1 }) as object)).toThrow(/"inherited"/);
    expect(() => checkSendOptionKeys({ channel: 1, key: 2, receipt: true, delayMs: 3 })).not.toThrow();
  });

  it("sends by channel name; an unknown name is a typed error with the closest name", async () => {
    const { client, got } = await pair();
    client.send(Uint8Array.of(1), { channel: "chat" });
    client.send(Uint8Array.of(2), { channel: "entities", key: 7 });
    expect(await client.send(Uint8Array.of(3), { channel: "chat", receipt: true })).toBe(true);
    for (let t = 0; t < 200 && got.length < 3; t++) await new Promise((r) => setTimeout(r, 5));
    expect(got.map((m) => [m.channel, m.data[0]]).sort()).toEqual([[0, 1], [0, 3], [3, 2]]);
    const err = (() => {
      try {
        client.send(Uint8Array.of(4), { channel: "caht" });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(UnknownChannelNameError);
    expect((err as UnknownChannelNameError).code).toBe("ERR_UNKNOWN_CHANNEL_NAME");
    expect((err as Error).message).toContain('did you mean "chat"?');
    expect((err as Error).message).toContain('"chat", "moves", "entities"');
    expect(client.maxMessageBytes("moves")).toBe(client.maxMessageBytes(1));
    expect(client.maxMessageBytes("nope")).toBeUndefined();
  });

  it("without names a name is refused with how to add one; bad names fail listen()/connect()", async () => {
    const server = await listen({ protocolId: 1, host: "127.0.0.1", port: 0 });
    open.push(server);
    const client = await connect(`127.0.0.1:${server.address.port}`, { protocolId: 1 });
    open.push(client);
    expect(() => client.send(Uint8Array.of(1), { channel: "chat" })).toThrow(/no channel has a name/);
    await expect(listen({ protocolId: 1, channels: [{ mode: "unreliable", name: "a" }, { mode: "unreliable", name: "a" }] })).rejects.toThrow(ChannelConfigError);
    await expect(connect("127.0.0.1:9", { protocolId: 1, channels: [{ mode: "unreliable", name: "" }] })).rejects.toThrow(/name must be a string of 1..64/);
  });
});
