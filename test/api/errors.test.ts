// The public API's typed errors, in-process on Node over real loopback sockets: what
// Connection.send()/close() and listen()/connect() throw is the class the package root exports
// (instanceof holds), every error is an AckwireError with a `code`, and the codes are the ones
// docs/RUNTIMES.md "Errors" lists.
import { describe, expect, it } from "vitest";
import * as root from "../../src/index.js";
import {
  AckwireError,
  ChannelConfigError,
  ChannelError,
  ClosedError,
  connect,
  InvalidDataError,
  InvalidDelayError,
  InvalidKeyError,
  InvalidOptionError,
  listen,
  MessageTooLargeError,
  SessionConfigError,
  SessionError,
  TooManyKeysError,
  UnknownChannelError,
  UserDataTooLargeError,
  type Connection,
  type DisconnectInfo,
  type Server,
} from "../../src/index.js";

const protocolId = 0x3e77;
const channels = [
  { mode: "reliable-ordered", maxMessageBytes: 100 },
  { mode: "latest-state", maxKeys: 2 },
] as const;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What `f` throws (synchronously); fails the test if it returns. */
function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

async function pair(): Promise<{ server: Server; conn: Connection; peerDisconnect: Promise<DisconnectInfo> }> {
  const server = await listen({ protocolId, host: "127.0.0.1", port: 0, channels: [...channels] });
  let resolvePeer!: (info: DisconnectInfo) => void;
  const peerDisconnect = new Promise<DisconnectInfo>((resolve) => (resolvePeer = resolve));
  server.on("connection", (c) => c.on("disconnect", resolvePeer));
  const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId, channels: [...channels] });
  return { server, conn, peerDisconnect };
}

describe("error classes of the package root", () => {
  it("every exported *Error is an AckwireError subclass; the channel errors are exported", () => {
    const names = Object.keys(root).filter((k) => k.endsWith("Error"));
    for (const name of ["ChannelError", "UnknownChannelError", "MessageTooLargeError", "InvalidKeyError", "TooManyKeysError", "InvalidDelayError", "ChannelConfigError", "InvalidDataError"]) {
      expect(names, name).toContain(name);
    }
    for (const name of names) {
      const cls = (root as Record<string, unknown>)[name] as { prototype: unknown };
      expect(typeof cls, name).toBe("function");
      expect(cls === AckwireError || cls.prototype instanceof AckwireError, `${name} extends AckwireError`).toBe(true);
    }
    expect(SessionError.prototype).toBeInstanceOf(AckwireError);
    expect(ChannelError.prototype).toBeInstanceOf(AckwireError);
  });

  it("misconfigured channels and session options throw their typed errors with ERR_* codes from listen()", async () => {
    const bad = await listen({ protocolId, host: "127.0.0.1", port: 0, channels: [{ mode: "unreliable", redundancy: 9 }] }).catch((e: unknown) => e);
    // src/session/endpoint.ts checks the connection config at construction (checkConnectionConfig).
    if (!(bad instanceof Error)) {
      await (bad as Server).close();
    } else {
      expect(bad).toBeInstanceOf(ChannelConfigError);
      expect(bad).toBeInstanceOf(AckwireError);
      expect((bad as ChannelConfigError).code).toBe("ERR_CHANNEL_CONFIG");
    }
    const mtu = await listen({ protocolId, host: "127.0.0.1", port: 0, mtu: 100 }).catch((e: unknown) => e);
    expect(mtu).toBeInstanceOf(SessionConfigError);
    expect(mtu).toBeInstanceOf(AckwireError);
    expect((mtu as SessionConfigError).code).toBe("ERR_SESSION_CONFIG");
  });
});

describe("Connection.send() errors", () => {
  it("are the root's classes with their documented codes, and the connection stays usable", async () => {
    const { server, conn } = await pair();
    try {
      const cases: [string, () => unknown, abstract new (...args: never[]) => Error, string][] = [
        ["unknown channel", () => conn.send(new Uint8Array(1), { channel: 9 }), UnknownChannelError, "ERR_UNKNOWN_CHANNEL"],
        ["too large", () => conn.send(new Uint8Array(101), { channel: 0 }), MessageTooLargeError, "ERR_MESSAGE_TOO_LARGE"],
        ["missing key", () => conn.send(new Uint8Array(1), { channel: 1 }), InvalidKeyError, "ERR_INVALID_KEY"],
        ["key on another mode", () => conn.send(new Uint8Array(1), { channel: 0, key: 1 }), InvalidKeyError, "ERR_INVALID_KEY"],
        ["negative delay", () => conn.send(new Uint8Array(1), { channel: 0, delayMs: -1 }), InvalidDelayError, "ERR_INVALID_DELAY"],
        ["NaN delay", () => conn.send(new Uint8Array(1), { channel: 0, delayMs: Number.NaN }), InvalidDelayError, "ERR_INVALID_DELAY"],
        ["string data", () => conn.send("str" as never), InvalidDataError, "ERR_INVALID_DATA"],
        ["ArrayBuffer data", () => conn.send(new ArrayBuffer(4) as never), InvalidDataError, "ERR_INVALID_DATA"],
        ["DataView data", () => conn.send(new DataView(new ArrayBuffer(4)) as never), InvalidDataError, "ERR_INVALID_DATA"],
        ["null data", () => conn.send(null as never), InvalidDataError, "ERR_INVALID_DATA"],
        ["undefined data", () => (conn.send as (d?: unknown) => void)(), InvalidDataError, "ERR_INVALID_DATA"],
      ];
      for (const [label, f, cls, code] of cases) {
        const error = thrown(f);
        expect(error, label).toBeInstanceOf(cls);
        expect(error, label).toBeInstanceOf(AckwireError);
        expect(error, label).toBeInstanceOf(ChannelError);
        expect((error as AckwireError).code, label).toBe(code);
        expect((error as Error).name, label).toBe(cls.name);
      }
      conn.send(new Uint8Array(1), { channel: 1, key: 1 });
      conn.send(new Uint8Array(1), { channel: 1, key: 2 });
      const tooMany = thrown(() => conn.send(new Uint8Array(1), { channel: 1, key: 3 }));
      expect(tooMany).toBeInstanceOf(TooManyKeysError);
      expect((tooMany as TooManyKeysError).code).toBe("ERR_TOO_MANY_KEYS");
      // None of these closed the connection.
      expect(conn.isOpen).toBe(true);
      expect(await conn.send(new Uint8Array(4), { channel: 0, receipt: true })).toBe(true);
      await conn.close();
      const closed = thrown(() => conn.send(new Uint8Array(1)));
      expect(closed).toBeInstanceOf(ClosedError);
      expect((closed as ClosedError).code).toBe("ERR_CLOSED");
      // Bad data on a closed connection: still a typed error with a code.
      expect((thrown(() => conn.send("x" as never)) as AckwireError).code).toMatch(/^(ERR_CLOSED|invalid-data)$/);
    } finally {
      await server.close();
    }
  });
});

describe("Connection.close(reason)", () => {
  it("accepts the reasons an application may give, and the peer sees the same reason", async () => {
    for (const reason of [undefined, "normal", "kicked", "server-shutdown", { app: 64 }, { app: 255 }] as const) {
      const { server, conn, peerDisconnect } = await pair();
      try {
        const local = await conn.close(reason);
        const expected = reason ?? "normal";
        expect(local.reason, JSON.stringify(reason)).toEqual(expected);
        const peer = await Promise.race([peerDisconnect, sleep(5000).then(() => undefined)]);
        expect(peer?.reason, JSON.stringify(reason)).toEqual(expected);
      } finally {
        await server.close();
      }
    }
  });

  it("throws InvalidOptionError naming the allowed reasons for anything else, and leaves the connection open", async () => {
    const { server, conn } = await pair();
    try {
      const bad: unknown[] = [
        "bogus", "timeout", "protocol-violation", "receive-buffer-exceeded", "no-connection", "denied", "connect-timeout", "aborted",
        5, null, true, {}, { app: 63 }, { app: 256 }, { app: 100.5 }, { app: "100" }, [],
      ];
      for (const reason of bad) {
        const error = thrown(() => conn.close(reason as never));
        expect(error, JSON.stringify(reason)).toBeInstanceOf(InvalidOptionError);
        expect((error as InvalidOptionError).code).toBe("ERR_INVALID_OPTION");
        expect((error as Error).message).toMatch(/"normal", "kicked", "server-shutdown" or \{ app: n \}/);
        expect(conn.isOpen, JSON.stringify(reason)).toBe(true);
      }
      // userData must be bytes, at most 512 of them (PROTOCOL §4); a refused close changes nothing.
      const notBytes = thrown(() => conn.close("normal", "bye" as never));
      expect(notBytes).toBeInstanceOf(InvalidOptionError);
      const tooLarge = thrown(() => conn.close("normal", new Uint8Array(513)));
      expect(tooLarge).toBeInstanceOf(UserDataTooLargeError);
      expect((tooLarge as UserDataTooLargeError).code).toBe("ERR_USER_DATA_TOO_LARGE");
      expect((tooLarge as Error).message).toMatch(/DISCONNECT packet; send the rest as a message before closing/);
      expect(conn.isOpen).toBe(true);
      expect(await conn.send(new Uint8Array(1), { channel: 0, receipt: true })).toBe(true);
      const info = await Promise.race([conn.close("kicked", new Uint8Array([1, 2])), sleep(8000).then(() => undefined)]);
      expect(info?.reason).toBe("kicked");
    } finally {
      await server.close();
    }
  });
});

describe("listen()/connect() options", () => {
  it("an unknown top-level option or engine is an InvalidOptionError naming it", async () => {
    const typo = await listen({ protocolId, host: "127.0.0.1", port: 0, maxConections: 3 } as never).catch((e: unknown) => e);
    expect(typo).toBeInstanceOf(InvalidOptionError);
    expect((typo as Error).message).toContain('"maxConections"');
    expect((typo as Error).message).toContain('did you mean "maxConnections"');
    const connectOnly = await listen({ protocolId, host: "127.0.0.1", port: 0, connectTimeoutMs: 100 } as never).catch((e: unknown) => e);
    expect(connectOnly).toBeInstanceOf(InvalidOptionError);
    const listenOnly = await connect("127.0.0.1:9", { protocolId, maxConnections: 3 } as never).catch((e: unknown) => e);
    expect(listenOnly).toBeInstanceOf(InvalidOptionError);
    expect((listenOnly as Error).message).toContain('"maxConnections"');
    const engine = await listen({ protocolId, host: "127.0.0.1", port: 0, engine: "bogus" } as never).catch((e: unknown) => e);
    expect(engine).toBeInstanceOf(InvalidOptionError);
    expect((engine as Error).message).toMatch(/engine/);
    // Known keys left undefined are fine (options built from optional settings).
    const server = await listen({ protocolId, host: "127.0.0.1", port: 0, maxConnections: undefined, engine: undefined });
    const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId, connectTimeoutMs: undefined, signal: undefined });
    await conn.close();
    await server.close();
  });
});
