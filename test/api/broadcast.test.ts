// server.broadcast(), groups and server.stats(): a server and a few clients on an in-memory
// network (bench/lib/memory-adapter.ts), the real session Endpoint and engine on every end.
import { describe, expect, it } from "vitest";
import { MemoryNetwork } from "../../bench/lib/memory-adapter.js";
import { broadcastTo, type BroadcastTarget } from "../../src/api/broadcast.js";
import { GroupRegistry } from "../../src/api/groups.js";
import {
  ClosedError,
  Connection,
  createRuntime,
  InvalidDataError,
  InvalidKeyError,
  InvalidOptionError,
  MessageTooLargeError,
  UnknownChannelError,
  type Message,
  type Server,
} from "../../src/index.js";
import type { SendOptions } from "../../src/session/types.js";

const protocolId = 0x42524f44;
const channels = [{ mode: "reliable-ordered" as const }, { mode: "unreliable" as const, maxMessageBytes: 200 }, { mode: "latest-state" as const }];
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (bounded) until `done()` holds. */
async function until(done: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

interface Client {
  conn: Connection;
  /** Its server-side connection. */
  peer: Connection;
  got: Message[];
}

async function setUp(n: number): Promise<{ net: MemoryNetwork; server: Server; clients: Client[]; done(): Promise<void> }> {
  const net = new MemoryNetwork();
  const runtime = createRuntime(net.adapter);
  const server = await runtime.listen({ protocolId, host: "127.0.0.1", port: 7000, channels });
  const accepted: Connection[] = [];
  server.on("connection", (c) => accepted.push(c));
  const clients: Client[] = [];
  for (let i = 0; i < n; i++) {
    const conn = await runtime.connect("127.0.0.1:7000", { protocolId, channels, closeTimeoutMs: 500 });
    const got: Message[] = [];
    conn.on("message", (m) => got.push(m));
    clients.push({ conn, peer: undefined as unknown as Connection, got });
  }
  await until(() => accepted.length === n, "the server to accept every client");
  // Each client says hello with its index, so that the server knows which connection is whose.
  const byIndex = new Map<Connection, number>();
  for (const a of accepted) a.on("message", (m) => m.channel === 0 && m.data.length === 1 && byIndex.set(a, m.data[0]!));
  clients.forEach((c, i) => c.conn.send(Uint8Array.of(i)));
  await until(() => byIndex.size === n, "every hello");
  for (const [a, i] of byIndex) clients[i]!.peer = a;
  return {
    net,
    server,
    clients,
    async done() {
      await Promise.all(clients.map((c) => (c.conn.isOpen ? c.conn.close() : undefined)));
      await server.close();
    },
  };
}

describe("server.broadcast()", () => {
  it("reaches every client but the excepted ones, from one copy the caller may reuse at once", async () => {
    const { server, clients, done } = await setUp(5);
    try {
      const payload = new Uint8Array(100).fill(7);
      expect(server.broadcast(payload)).toBe(5);
      payload.fill(0); // the broadcast holds its own copy
      expect(server.broadcast(Uint8Array.of(1, 2), { except: clients[0]!.peer })).toBe(4);
      expect(server.broadcast(Uint8Array.of(3), { channel: 1, except: [clients[1]!.peer, clients[2]!.peer] })).toBe(3);
      expect(server.broadcast(Uint8Array.of(4), { except: new Set([clients[3]!.peer]) })).toBe(4);
      await until(() => clients.every((c, i) => c.got.length === [3, 3, 3, 3, 4][i]), "every broadcast");
      for (const [i, c] of clients.entries()) {
        // Channel 0 in order; channel 1 (unreliable) may overtake it.
        const ordered = c.got.filter((m) => m.channel === 0);
        expect(ordered[0]!.data).toEqual(new Uint8Array(100).fill(7));
        expect(ordered.slice(1).map((m) => [...m.data].join(","))).toEqual([i !== 0 ? "1,2" : undefined, i !== 3 ? "4" : undefined].filter((x) => x !== undefined));
        expect(c.got.filter((m) => m.channel === 1).map((m) => m.data[0])).toEqual(i === 1 || i === 2 ? [] : [3]);
      }
    } finally {
      await done();
    }
  });

  it("checks its arguments once, before anything is queued", async () => {
    const { server, clients, done } = await setUp(2);
    try {
      expect(() => server.broadcast("hi" as unknown as Uint8Array)).toThrow(InvalidDataError);
      expect(() => server.broadcast(Uint8Array.of(1), { channel: 3 })).toThrow(UnknownChannelError);
      expect(() => server.broadcast(Uint8Array.of(1), { channel: 0.5 })).toThrow(UnknownChannelError);
      expect(() => server.broadcast(new Uint8Array(201), { channel: 1 })).toThrow(MessageTooLargeError);
      expect(() => server.broadcast(Uint8Array.of(1), { channel: 2 })).toThrow(InvalidKeyError); // latest-state without a key
      expect(() => server.broadcast(Uint8Array.of(1), { except: 5 as never })).toThrow(InvalidOptionError);
      expect(() => server.broadcast(Uint8Array.of(1), { chanel: 1 } as never)).toThrow(/unknown option "chanel" \(did you mean "channel"\?\)/);
      expect(() => server.broadcast(Uint8Array.of(1), { receipt: true } as never)).toThrow(/a broadcast has no receipt/);
      expect(() => server.broadcast(Uint8Array.of(1), null as never)).toThrow(InvalidOptionError);
      expect(server.broadcast(Uint8Array.of(9), { channel: 2, key: 1 })).toBe(2);
      await until(() => clients.every((c) => c.got.length === 1), "the latest-state broadcast");
      expect(clients.map((c) => [c.got[0]!.channel, c.got[0]!.key, c.got[0]!.data[0]])).toEqual([
        [2, 1, 9],
        [2, 1, 9],
      ]);
      const stats = server.stats();
      expect(stats.messagesSent).toBe(2); // the refused broadcasts queued nothing
    } finally {
      await done();
    }
  });

  it("skips connections that are closing, and never hands the shared buffer to the send pool", async () => {
    const { server, clients, done } = await setUp(3);
    try {
      void clients[2]!.peer.close();
      const shared = Uint8Array.from({ length: 100 }, (_, i) => i);
      expect(server.broadcast(shared)).toBe(2);
      await until(() => clients[0]!.got.length === 1 && clients[1]!.got.length === 1, "the broadcast");
      await sleep(20); // acknowledged: the messages are freed
      // Pooled 100-byte buffers are reused by the next sends of that size: had the broadcast's
      // buffer gone back to the pool (once per connection), these would overwrite each other.
      for (let k = 0; k < 8; k++) for (const c of clients.slice(0, 2)) c.peer.send(new Uint8Array(100).fill(10 + k));
      await until(() => clients[0]!.got.length === 9 && clients[1]!.got.length === 9, "the sends after it");
      for (const c of clients.slice(0, 2)) {
        expect(c.got[0]!.data).toEqual(Uint8Array.from({ length: 100 }, (_, i) => i));
        expect(c.got.slice(1).map((m) => m.data.every((b) => b === m.data[0]) && m.data[0])).toEqual([10, 11, 12, 13, 14, 15, 16, 17]);
      }
    } finally {
      await done();
    }
  });
});

describe("broadcastTo() (the shared copy)", () => {
  it("sends one buffer, not the caller's, to every connection, marked shared", () => {
    const seen: { id: number; data: Uint8Array; options: SendOptions }[] = [];
    let services = 0;
    const target: BroadcastTarget = {
      endpoint: {
        maxMessageBytes: [1000],
        send: (id: number, data: Uint8Array, options: SendOptions) => void seen.push({ id, data, options: { ...options } }),
      } as unknown as BroadcastTarget["endpoint"],
      requestService: () => void services++,
    };
    const conns = [1, 2, 3].map((id) => new Connection(undefined as never, id, `127.0.0.1:${id}`, new Uint8Array(0), 10, () => {}));
    const payload = Uint8Array.of(5, 6, 7);
    expect(broadcastTo(target, conns, payload, { except: conns[1] })).toBe(2);
    expect(seen.map((s) => s.id)).toEqual([1, 3]);
    expect(seen[0]!.data).toBe(seen[1]!.data);
    expect(seen[0]!.data).not.toBe(payload);
    expect(seen[0]!.data).toEqual(payload);
    expect(seen[0]!.options).toMatchObject({ channel: 0, shared: true });
    expect(services).toBe(1);
  });

  it("goes on past a connection that refuses it, then throws that error", () => {
    const sent: number[] = [];
    const target: BroadcastTarget = {
      endpoint: {
        send: (id: number) => {
          if (id === 2) throw new InvalidOptionError("no");
          sent.push(id);
        },
      } as unknown as BroadcastTarget["endpoint"],
      requestService: () => {},
    };
    const conns = [1, 2, 3].map((id) => new Connection(undefined as never, id, `127.0.0.1:${id}`, new Uint8Array(0), 10, () => {}));
    expect(() => broadcastTo(target, conns, Uint8Array.of(1))).toThrow(InvalidOptionError);
    expect(sent).toEqual([1, 3]);
    sent.length = 0;
    // The first connection's refusal: the same for all, nothing is queued.
    expect(() => broadcastTo(target, [conns[1]!, conns[0]!], Uint8Array.of(1))).toThrow(InvalidOptionError);
    expect(sent).toEqual([]);
  });
});

describe("groups", () => {
  it("add / remove / has / size, and a group's broadcast reaches its members only", async () => {
    const { server, clients, done } = await setUp(4);
    try {
      const red = server.group("red");
      expect(server.group("red")).toBe(red);
      expect(server.groups.get("red")).toBe(red);
      expect(red.add(clients[0]!.peer)).toBe(true);
      expect(red.add(clients[0]!.peer)).toBe(false);
      expect(red.add(clients[1]!.peer)).toBe(true);
      expect(red.add(clients[2]!.peer)).toBe(true);
      expect(red.remove(clients[2]!.peer)).toBe(true);
      expect(red.remove(clients[2]!.peer)).toBe(false);
      expect(red.size).toBe(2);
      expect(red.has(clients[1]!.peer)).toBe(true);
      expect(red.has(clients[2]!.peer)).toBe(false);
      expect([...red]).toEqual([clients[0]!.peer, clients[1]!.peer]);
      expect(red.broadcast(Uint8Array.of(42), { except: clients[1]!.peer })).toBe(1);
      expect(red.broadcast(Uint8Array.of(43))).toBe(2);
      await until(() => clients[1]!.got.length === 1, "the group broadcast");
      await sleep(20);
      expect(clients.map((c) => c.got.map((m) => m.data[0]))).toEqual([[42, 43], [43], [], []]);
      expect(() => red.add({} as Connection)).toThrow(InvalidOptionError);
      expect(() => server.group(7 as unknown as string)).toThrow(InvalidOptionError);
      red.delete();
      expect(server.groups.has("red")).toBe(false);
      expect(red.size).toBe(0);
      expect(() => red.add(clients[3]!.peer)).toThrow(ClosedError);
      expect(server.group("red")).not.toBe(red);
    } finally {
      await done();
    }
  });

  it("a connection leaves every group when it disconnects, and a closing one cannot join", async () => {
    const { server, clients, done } = await setUp(3);
    try {
      const a = server.group("a");
      const b = server.group("b");
      for (const c of clients) a.add(c.peer);
      b.add(clients[0]!.peer);
      b.add(clients[1]!.peer);
      await clients[0]!.conn.close(); // the client leaves
      await until(() => !server.connections.has(clients[0]!.peer.id), "the server to see the disconnect");
      expect([a.size, b.size]).toEqual([2, 1]);
      expect(a.has(clients[0]!.peer) || b.has(clients[0]!.peer)).toBe(false);
      void clients[1]!.peer.close("kicked"); // the server kicks one
      expect(server.group("c").add(clients[1]!.peer)).toBe(false);
      await until(() => !server.connections.has(clients[1]!.peer.id), "the kick");
      expect([a.size, b.size, server.group("c").size]).toEqual([1, 0, 0]);
      expect(a.broadcast(Uint8Array.of(1))).toBe(1);
    } finally {
      await done();
    }
  });

  it("the registry forgets a connection once it has left its last group", () => {
    const target: BroadcastTarget = { endpoint: {} as BroadcastTarget["endpoint"], requestService: () => {} };
    const registry = new GroupRegistry(target, () => true);
    const conns = [1, 2].map((id) => new Connection(undefined as never, id, `127.0.0.1:${id}`, new Uint8Array(0), 10, () => {}));
    const x = registry.group("x");
    const y = registry.group("y");
    x.add(conns[0]!);
    y.add(conns[0]!);
    x.add(conns[1]!);
    expect(registry.trackedConnections).toBe(2);
    x.remove(conns[1]!);
    expect(registry.trackedConnections).toBe(1);
    registry.leaveAll(conns[0]!);
    expect([x.size, y.size, registry.trackedConnections]).toEqual([0, 0, 0]);
    y.add(conns[1]!);
    y.delete();
    expect(registry.trackedConnections).toBe(0);
    // A connection of another server is refused.
    const strict = new GroupRegistry(target, () => false);
    expect(() => strict.group("z").add(conns[0]!)).toThrow(InvalidOptionError);
  });
});

describe("server.stats()", () => {
  it("sums the server's counters and its open connections' stats", async () => {
    const { server, clients, done } = await setUp(3);
    try {
      for (let i = 0; i < 10; i++) server.broadcast(new Uint8Array(50).fill(i));
      await until(() => clients.every((c) => c.got.length === 10), "the broadcasts");
      await sleep(20);
      const s = server.stats();
      expect(s.connections).toBe(3);
      expect(s.messagesSent).toBe(30);
      expect(s.messagesReceived).toBe(3); // the hellos
      expect(s.datagramsIn).toBeGreaterThan(3);
      expect(s.datagramsOut).toBeGreaterThanOrEqual(3);
      expect(s.bytesOut).toBeGreaterThan(30 * 50);
      expect(s.bytesIn).toBeGreaterThan(0);
      expect(s.packetsSent).toBeGreaterThanOrEqual(3);
      expect(s.queuedBytes).toBe(0);
      expect(s.drops).toBe(Object.values(s.dropsByReason!).reduce((a, b) => a + b, 0));
      expect(s.meanRttMs).toBeGreaterThanOrEqual(0);
      expect(s.maxRttMs).toBeGreaterThanOrEqual(s.meanRttMs);
      await clients[0]!.conn.close();
      await until(() => server.stats().connections === 2, "the disconnect");
      expect(server.stats().messagesSent).toBe(20);
    } finally {
      await done();
    }
  });
});
