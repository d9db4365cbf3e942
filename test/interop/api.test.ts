// The public API in-process on Node over real loopback sockets, with the real session Endpoint
// (WASM engine); one test drives a toy endpoint (fixtures/toy-endpoint.mjs) through
// `createEndpoint` to pin that any sans-IO implementation can sit under the API.
import { describe, expect, it } from "vitest";
import { connect, listen, detectRuntime, AddressInUseError, ClosedError, ConnectAbortedError, HostNotFoundError, InvalidOptionError, InvalidTargetError, MessageQueueOverflowError, Endpoint, type EndpointFactory } from "../../src/index.js";
// @ts-expect-error plain JS fixture without types
import { ToyEndpoint } from "./fixtures/toy-endpoint.mjs";

const toy = { protocolId: 7, createEndpoint: ((config) => new ToyEndpoint(config)) as EndpointFactory };
const base = { protocolId: 7 };
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

describe("public API on Node (real engine)", () => {
  it("runs on node and reports it", () => {
    expect(detectRuntime()).toBe("node");
  });

  it("port in use -> AddressInUseError naming the fix", async () => {
    const a = await listen({ ...base, host: "127.0.0.1", port: 0 });
    try {
      const err = await listen({ ...base, host: "127.0.0.1", port: a.address.port }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AddressInUseError);
      expect((err as AddressInUseError).code).toBe("ERR_ADDRESS_IN_USE");
      expect((err as Error).message).toContain(`port ${a.address.port} is in use`);
      expect((err as Error).message).toContain("pass port 0");
    } finally {
      await a.close();
    }
  });

  it("bad options, bad targets and unknown hosts get typed errors", async () => {
    await expect(listen({ protocolId: -1 })).rejects.toBeInstanceOf(InvalidOptionError);
    await expect(connect("127.0.0.1", base)).rejects.toBeInstanceOf(InvalidTargetError);
    await expect(connect("::1:7777", base)).rejects.toBeInstanceOf(InvalidTargetError);
    await expect(connect("no-such-host.invalid:7777", base)).rejects.toBeInstanceOf(HostNotFoundError);
  });

  it("a connect aborted while its socket opens rejects with ConnectAbortedError, not a timeout", async () => {
    const controller = new AbortController();
    const pending = connect("127.0.0.1:9", { ...base, signal: controller.signal, connectTimeoutMs: 3000 });
    controller.abort(); // the target needs no lookup: this lands while the socket is opening
    const started = Date.now();
    await expect(pending).rejects.toBeInstanceOf(ConnectAbortedError);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("an aborted connect rejects with ConnectAbortedError", async () => {
    // A socket that never answers (a closed port answers port unreachable: ConnectRefusedError).
    const { createSocket } = await import("node:dgram");
    const silent = createSocket("udp4");
    await new Promise<void>((resolve) => silent.bind(0, "127.0.0.1", resolve));
    try {
      const controller = new AbortController();
      const pending = connect(`127.0.0.1:${silent.address().port}`, { ...base, signal: controller.signal, connectTimeoutMs: 5000 });
      setTimeout(() => controller.abort(), 50);
      await expect(pending).rejects.toBeInstanceOf(ConnectAbortedError);
    } finally {
      silent.close();
    }
  });

  it("echo over IPv6 loopback with async iteration, receipts, then send-after-close throws", async () => {
    const server = await listen({ ...base, host: "::1", port: 0 });
    server.on("connection", (conn) => conn.on("message", (m) => conn.send(m.data, { channel: m.channel })));
    try {
      const conn = await connect(`[::1]:${server.address.port}`, base);
      // The iterator opens before the first send: the echo can arrive in the same datagram as
      // the ack that resolves the receipt.
      const iterator = conn[Symbol.asyncIterator]();
      const delivered = await conn.send(Uint8Array.of(1, 2, 3), { channel: 2, receipt: true });
      expect(delivered).toBe(true);
      for (let i = 1; i < 10; i++) conn.send(Uint8Array.of(i), { channel: 0 });
      const got: number[] = [];
      const deadline = Date.now() + 5000;
      while (got.length < 10 && Date.now() < deadline) {
        const next = await Promise.race([iterator.next(), sleep(deadline - Date.now()).then(() => undefined)]);
        if (next === undefined || next.done === true) break;
        got.push(next.value.data[0]!);
      }
      expect(got.sort((a, b) => a - b)).toEqual([1, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      const info = await conn.close();
      expect(info.reason).toBe("normal");
      expect(() => conn.send(Uint8Array.of(0))).toThrow(ClosedError);
      expect((await iterator.next()).done).toBe(true);
    } finally {
      await server.close();
    }
  });

  it("an iterator that falls behind its bound throws MessageQueueOverflowError after the queued ones", async () => {
    const server = await listen({ ...base, host: "127.0.0.1", port: 0 });
    server.on("connection", (conn) => {
      for (let i = 0; i < 20; i++) conn.send(Uint8Array.of(i), { channel: 0 });
    });
    try {
      const conn = await connect(`127.0.0.1:${server.address.port}`, { ...base, maxQueuedMessages: 5 });
      const iterator = conn[Symbol.asyncIterator]();
      await new Promise((r) => setTimeout(r, 300));
      const values: number[] = [];
      let error: unknown;
      for (let i = 0; i < 30; i++) {
        try {
          const r = await iterator.next();
          if (r.done) break;
          values.push(r.value.data[0]!);
        } catch (e) {
          error = e;
          break;
        }
      }
      expect(values).toEqual([0, 1, 2, 3, 4]);
      expect(error).toBeInstanceOf(MessageQueueOverflowError);
      await conn.close();
    } finally {
      await server.close();
    }
  });

  it("Node<->Node echo, reliable-ordered: 500 numbered messages come back once each, in order", async () => {
    const server = await listen({ ...base, host: "127.0.0.1", port: 0 });
    server.on("connection", (conn) => conn.on("message", (m) => conn.send(m.data, { channel: m.channel })));
    try {
      const conn = await connect(`127.0.0.1:${server.address.port}`, base);
      const got: number[] = [];
      const all = new Promise<void>((resolve) =>
        conn.on("message", (m) => {
          got.push(new DataView(m.data.buffer, m.data.byteOffset).getUint32(0, true));
          if (got.length === 500) resolve();
        }),
      );
      for (let i = 0; i < 500; i++) {
        const data = new Uint8Array(100).fill(i & 255);
        new DataView(data.buffer).setUint32(0, i, true);
        conn.send(data, { channel: 0 });
      }
      await Promise.race([all, sleep(10_000)]);
      expect(got).toEqual(Array.from({ length: 500 }, (_, i) => i));
      expect(conn.stats().packets.received).toBeGreaterThan(0);
      await conn.close();
    } finally {
      await server.close();
    }
  });

  it("the root exports the sans-IO Endpoint, and createEndpoint drives another implementation", async () => {
    expect(typeof Endpoint).toBe("function");
    const server = await listen({ ...toy, host: "127.0.0.1", port: 0 });
    server.on("connection", (conn) => conn.on("message", (m) => conn.send(m.data, { channel: m.channel })));
    try {
      const conn = await connect(`127.0.0.1:${server.address.port}`, toy);
      const echo = new Promise<Uint8Array>((resolve) => conn.once("message", (m) => resolve(m.data)));
      conn.send(Uint8Array.of(4, 5, 6), { channel: 0 });
      expect([...(await Promise.race([echo, sleep(5000).then(() => new Uint8Array(0))]))]).toEqual([4, 5, 6]);
      await conn.close();
    } finally {
      await server.close();
    }
  });

  it("close() is graceful both ways: the server sees the client's reason, server.close() tells clients server-shutdown", async () => {
    const server = await listen({ ...base, host: "127.0.0.1", port: 0 });
    const serverSaw: unknown[] = [];
    server.on("disconnect", ({ info }) => serverSaw.push(info.reason));
    const a = await connect(`127.0.0.1:${server.address.port}`, base);
    const b = await connect(`127.0.0.1:${server.address.port}`, base);
    expect(() => a.close({ app: 42 })).toThrow(InvalidOptionError);
    const closing = a.close({ app: 100 });
    expect(a.isOpen).toBe(false);
    expect(() => a.send(Uint8Array.of(1))).toThrow(ClosedError);
    expect((await closing).reason).toEqual({ app: 100 });
    const until = Date.now() + 3000;
    while (serverSaw.length === 0 && Date.now() < until) await sleep(10);
    expect(serverSaw).toEqual([{ app: 100 }]);
    await server.close();
    expect((await Promise.race([b.closed, sleep(3000).then(() => ({ reason: "still open" }))])).reason).toBe("server-shutdown");
  });
});
