// A listener that throws never takes the process down: its error reaches the "error" listeners
// of the connection, else of the server, else the console; the connection and server go on.
import { afterEach, describe, expect, it, vi } from "vitest";
import { connect, listen, ListenerError, type Connection, type Server } from "../../src/index.js";

const base = { protocolId: 0x11e7 };
const bytes = (n: number): Uint8Array => new Uint8Array([n]);

/** Resolves once `count` values were pushed into `list`, or rejects after `ms`. */
async function until<T>(list: T[], count: number, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (list.length < count) {
    if (Date.now() > deadline) throw new Error(`${what}: ${list.length} of ${count} within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("errors thrown by listeners", () => {
  const open: (Server | Connection)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const o of open.splice(0)) await o.close();
  });

  it("a throwing message listener: the server's error event gets it and both sides keep running", async () => {
    const server = await listen({ ...base, host: "127.0.0.1", port: 0 });
    open.push(server);
    const errors: ListenerError[] = [];
    server.on("error", (e) => errors.push(e));
    server.on("connection", (conn) => {
      conn.on("message", (m) => {
        if (m.data[0]! % 2 === 0) throw new Error(`even ${m.data[0]}`);
      });
      // A second listener still runs after the first threw.
      conn.on("message", (m) => conn.send(m.data));
    });
    const client = await connect(`127.0.0.1:${server.address.port}`, base);
    open.push(client);
    const echoes: number[] = [];
    client.on("message", (m) => echoes.push(m.data[0]!));
    for (let i = 0; i < 6; i++) client.send(bytes(i));
    await until(echoes, 6, "echoes");
    expect(echoes).toEqual([0, 1, 2, 3, 4, 5]);
    expect(errors.map((e) => (e.cause as Error).message)).toEqual(["even 0", "even 2", "even 4"]);
    expect(errors[0]).toBeInstanceOf(ListenerError);
    expect(errors[0]!.code).toBe("ERR_LISTENER");
    expect(errors[0]!.event).toBe("message");
    expect(errors[0]!.connection).toBe([...server.connections.values()][0]);
    expect(client.isOpen).toBe(true);
  });

  it("the connection's own error listener takes it before the server's", async () => {
    const server = await listen({ ...base, host: "127.0.0.1", port: 0 });
    open.push(server);
    const serverErrors: ListenerError[] = [];
    const connErrors: ListenerError[] = [];
    server.on("error", (e) => serverErrors.push(e));
    server.on("connection", (conn) => {
      conn.on("error", (e) => connErrors.push(e));
      conn.on("message", () => {
        throw new Error("boom");
      });
    });
    const client = await connect(`127.0.0.1:${server.address.port}`, base);
    open.push(client);
    client.send(bytes(1));
    await until(connErrors, 1, "connection errors");
    expect(serverErrors).toEqual([]);
  });

  it("with no error listener anywhere it is printed with its stack, and nothing crashes", async () => {
    const printed: unknown[][] = [];
    vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void printed.push(args));
    const server = await listen({ ...base, host: "127.0.0.1", port: 0 });
    open.push(server);
    server.on("connection", (conn) => {
      conn.on("message", (m) => {
        conn.send(m.data);
        throw new TypeError("server listener bug");
      });
    });
    const client = await connect(`127.0.0.1:${server.address.port}`, base);
    open.push(client);
    const echoes: number[] = [];
    client.on("message", (m) => {
      echoes.push(m.data[0]!);
      throw new RangeError("client listener bug");
    });
    for (let i = 0; i < 3; i++) client.send(bytes(i));
    await until(echoes, 3, "echoes");
    await until(printed, 6, "printed errors");
    const causes = printed.map((args) => ((args[1] as ListenerError).cause as Error).message).sort();
    expect(causes).toEqual(["client listener bug", "client listener bug", "client listener bug", "server listener bug", "server listener bug", "server listener bug"]);
    expect(String(printed[0]![0])).toContain('add an "error" listener');
    expect(((printed[0]![1] as ListenerError).cause as Error).stack).toContain("listener-errors.test.ts");
    expect(client.isOpen).toBe(true);
  });

  it("an error listener that throws is printed, not rethrown", async () => {
    const printed: unknown[][] = [];
    vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void printed.push(args));
    const server = await listen({ ...base, host: "127.0.0.1", port: 0 });
    open.push(server);
    server.on("error", () => {
      throw new Error("error listener bug");
    });
    server.on("connection", (conn) => conn.on("message", () => {
      throw new Error("first");
    }));
    const client = await connect(`127.0.0.1:${server.address.port}`, base);
    open.push(client);
    client.send(bytes(1));
    await until(printed, 1, "printed errors");
    expect((printed[0]![1] as Error).message).toBe("error listener bug");
  });

  it("a throwing accept hook reaches the server's error event as event 'accept'", async () => {
    const errors: ListenerError[] = [];
    const server = await listen({ ...base, host: "127.0.0.1", port: 0, accept: () => {
      throw new Error("db down");
    } });
    open.push(server);
    server.on("error", (e) => errors.push(e));
    await expect(connect(`127.0.0.1:${server.address.port}`, { ...base, connectTimeoutMs: 3000 })).rejects.toMatchObject({ code: "ERR_CONNECT_DENIED", deny: "refused" });
    expect(errors).toHaveLength(1);
    expect(errors[0]!.event).toBe("accept");
    expect((errors[0]!.cause as Error).message).toBe("db down");
  });
});
