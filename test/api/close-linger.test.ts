// Connection.close() delivers what was sent before it (linger, the default), then says goodbye;
// close(reason, userData, { linger: false }) drops it. Real loopback sockets, Node, the public API
// (the session-level cases, with loss and a silent peer, are test/session/linger.test.ts).
import { describe, expect, it } from "vitest";
import { connect, listen, InvalidOptionError, type Connection } from "../../src/index.js";

const protocolId = 0x11e6;

async function serverAndClient(): Promise<{ got: number[]; ended: Promise<unknown>; conn: Connection; close(): Promise<void> }> {
  const server = await listen({ protocolId, host: "127.0.0.1", port: 0 });
  const got: number[] = [];
  let resolveEnded: (info: unknown) => void = () => {};
  const ended = new Promise((resolve) => (resolveEnded = resolve));
  server.on("connection", (c) => {
    c.on("message", (m) => got.push(new DataView(m.data.buffer, m.data.byteOffset).getUint32(0, true)));
    c.on("disconnect", (info) => resolveEnded(info));
  });
  const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId });
  return { got, ended, conn, close: () => server.close() };
}

const message = (i: number): Uint8Array => {
  const b = new Uint8Array(200);
  new DataView(b.buffer).setUint32(0, i, true);
  return b;
};

describe("close() and what was sent before it", () => {
  it("by default every message sent before close() arrives, in order, before the goodbye; receipts say delivered", async () => {
    const { got, ended, conn, close } = await serverAndClient();
    try {
      const receipt = conn.send(message(0), { channel: 0, receipt: true });
      for (let i = 1; i < 2000; i++) conn.send(message(i), { channel: 0 });
      const info = await conn.close("normal", Uint8Array.of(1, 2));
      expect(info.reason).toBe("normal");
      expect(await receipt).toBe(true);
      expect(await ended).toMatchObject({ reason: "normal", userData: Uint8Array.of(1, 2) });
      expect(got).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    } finally {
      await close();
    }
  }, 15_000);

  it("with { linger: false } what is still queued is dropped, and its receipts say so", async () => {
    const { got, ended, conn, close } = await serverAndClient();
    try {
      for (let i = 0; i < 1999; i++) conn.send(message(i), { channel: 0 });
      const last = conn.send(message(1999), { channel: 0, receipt: true });
      await conn.close("kicked", undefined, { linger: false });
      expect(await last).toBe(false);
      expect(await ended).toMatchObject({ reason: "kicked" });
      expect(got.length).toBeLessThan(2000);
      expect(() => conn.close("normal", undefined, { linger: "yes" as never })).toThrow(InvalidOptionError);
    } finally {
      await close();
    }
  }, 15_000);
});

describe("server.close()", () => {
  it("the README's echo server survives a graceful close while its clients keep sending: no message reaches a closing connection's listener (found by a review)", async () => {
    const server = await listen({ protocolId, host: "127.0.0.1", port: 0 });
    let echoed = 0;
    let afterClose = 0;
    let closingAt = Infinity;
    server.on("connection", (conn) => {
      // The quick start's handler, unguarded: a send() on a closing connection throws.
      conn.on("message", (msg) => {
        if (performance.now() >= closingAt) afterClose++;
        conn.send(msg.data, { channel: msg.channel });
        echoed++;
      });
    });
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown): void => void uncaught.push(e);
    process.on("uncaughtException", onUncaught);
    server.on("error", onUncaught);
    const client = await connect(`127.0.0.1:${server.address.port}`, { protocolId });
    try {
      const pump = setInterval(() => {
        if (client.isOpen) for (let i = 0; i < 20; i++) client.send(message(i), { channel: 0 });
      }, 2);
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(echoed).toBeGreaterThan(0);
      closingAt = performance.now();
      await server.close();
      clearInterval(pump);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(uncaught).toEqual([]);
      expect(afterClose).toBe(0);
      expect(client.isOpen).toBe(false);
    } finally {
      process.off("uncaughtException", onUncaught);
      await client.close(undefined, undefined, { linger: false });
    }
  }, 15_000);

  it("a client that connects while the server waits for its others' goodbyes is told server-shutdown at once, and never handed to the application", async () => {
    const { createRuntime } = await import("../../src/index.js");
    const { nodeAdapter } = await import("../../runtimes/node/index.js");
    const { firewalled } = await import("../interop/helpers.js");
    const server = await listen({ protocolId, host: "127.0.0.1", port: 0, closeTimeoutMs: 2000 });
    const target = `127.0.0.1:${server.address.port}`;
    let handedOut = 0;
    server.on("connection", () => handedOut++);
    // A client that goes silent: the server's close waits its close timeout for it.
    const blocked = new Set<string>();
    const silent = await createRuntime(firewalled(nodeAdapter, blocked)).connect(target, { protocolId, closeTimeoutMs: 300 });
    blocked.add(target);
    const closing = server.close();
    const late = await connect(target, { protocolId, connectTimeoutMs: 1500 });
    const started = performance.now();
    const info = await Promise.race([late.closed, new Promise((resolve) => setTimeout(() => resolve(undefined), 1500))]);
    expect(info).toMatchObject({ reason: "server-shutdown" });
    expect(performance.now() - started).toBeLessThan(1000);
    expect(handedOut).toBe(1); // the silent client only
    await closing;
    await silent.close(undefined, undefined, { linger: false });
  }, 15_000);
});
