// An accept hook may be async (a database look-up): the handshake waits for its decision,
// bounded in time (acceptTimeoutMs) and in number (maxPendingAccepts); past a bound the client
// is denied "server-full" and the server counts it.
import { afterEach, describe, expect, it } from "vitest";
import { connect, ConnectDeniedError, listen, type ListenerError, type Server } from "../../src/index.js";

const base = { protocolId: 0xa5a5 };
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe("async accept hook", () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
  });
  async function serve(options: Parameters<typeof listen>[0]): Promise<{ server: Server; target: string }> {
    const server = await listen({ ...options, host: "127.0.0.1", port: 0 });
    servers.push(server);
    return { server, target: `127.0.0.1:${server.address.port}` };
  }

  it("async () => false denies the client (refused), and the server keeps serving", async () => {
    const { server, target } = await serve({ ...base, accept: async () => false });
    for (let i = 0; i < 2; i++) {
      const err = await connect(target, { ...base, connectTimeoutMs: 4000 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectDeniedError);
      expect((err as ConnectDeniedError).deny).toBe("refused");
    }
    expect(server.counters().session?.acceptsDeferred).toBe(2);
  });

  it("a slow decision (longer than the client's resends) is asked once and its user data arrives", async () => {
    let calls = 0;
    const { target } = await serve({
      ...base,
      accept: async (request) => {
        calls++;
        await sleep(350);
        return request.userData[0] === 7 ? { accept: true, userData: Uint8Array.of(1, 2, 3) } : { accept: false, userData: Uint8Array.of(9) };
      },
    });
    const conn = await connect(target, { ...base, userData: Uint8Array.of(7) });
    expect([...conn.userData]).toEqual([1, 2, 3]);
    await conn.close();
    const denied = (await connect(target, { ...base, userData: Uint8Array.of(8) }).catch((e: unknown) => e)) as ConnectDeniedError;
    expect(denied.deny).toBe("refused");
    expect([...denied.userData!]).toEqual([9]);
    expect(calls).toBe(2);
  });

  it("a rejected or malformed decision refuses the client and reaches the error event", async () => {
    const errors: ListenerError[] = [];
    const { server, target } = await serve({
      ...base,
      accept: async (request) => {
        if (request.userData[0] === 1) throw new Error("db down");
        return "yes" as never;
      },
    });
    server.on("error", (e) => errors.push(e));
    for (const tag of [1, 2]) {
      const err = (await connect(target, { ...base, userData: Uint8Array.of(tag) }).catch((e: unknown) => e)) as ConnectDeniedError;
      expect(err.deny).toBe("refused");
    }
    expect(errors.map((e) => [e.event, (e.cause as Error).message.slice(0, 40)])).toEqual([
      ["accept", "db down"],
      ["accept", "listen(): the accept hook returns (or re"],
    ]);
    expect(server.counters().session?.acceptHookErrors).toBe(2);
  });

  it("past acceptTimeoutMs the client is denied server-full; the late answer is ignored", async () => {
    let release!: () => void;
    const late = new Promise<boolean>((resolve) => (release = () => resolve(true)));
    const { server, target } = await serve({ ...base, acceptTimeoutMs: 300, accept: () => late });
    const err = (await connect(target, { ...base, connectTimeoutMs: 4000 }).catch((e: unknown) => e)) as ConnectDeniedError;
    expect(err).toBeInstanceOf(ConnectDeniedError);
    expect(err.deny).toBe("server-full");
    expect(err.message).toContain("acceptTimeoutMs");
    release();
    await sleep(50);
    expect(server.connections.size).toBe(0);
    expect(server.counters().session?.acceptTimeouts).toBe(1);
  });

  it("past maxPendingAccepts a client is denied server-full at once; the waiting one connects", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { server, target } = await serve({ ...base, maxPendingAccepts: 1, accept: async () => (await gate, true) });
    const first = connect(target, base);
    await sleep(100);
    const second = (await connect(target, base).catch((e: unknown) => e)) as ConnectDeniedError;
    expect(second).toBeInstanceOf(ConnectDeniedError);
    expect(second.deny).toBe("server-full");
    release();
    const conn = await first;
    expect(conn.isOpen).toBe(true);
    await conn.close();
    expect(server.counters().session).toMatchObject({ acceptsDeferred: 1, acceptsOverLimit: 1 });
  });
});
