// A send from a "message" listener on a connection the endpoint has already dropped.
//
// Cause (seen once in the e2e benchmark as UnknownConnectionError "no connection 1 on this
// endpoint" thrown by Connection.send while isOpen was still true): the peer's data and its
// DISCONNECT arrive in one receive burst. The endpoint queues the "message" events, then on the
// DISCONNECT removes the connection at once and queues "disconnect" behind them. The driver then
// delivers the messages, and a listener that replies reaches an endpoint without that connection.
//
// The burst is made exact here with an in-memory carrier (a RuntimeAdapter written for the test:
// the test decides when queued datagrams are delivered, and delivers them as one batch), with the
// real session Endpoint (WASM engine) on both ends.
import { describe, expect, it } from "vitest";
import { createRuntime, ClosedError, type DatagramBatch, type DatagramSocket, type RuntimeAdapter } from "../../src/index.js";

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Loopback in memory: datagrams wait in `queued` until delivered (automatically unless held). */
class MemoryNetwork {
  hold = false;
  readonly queued: { from: string; to: string; bytes: Uint8Array }[] = [];
  #sockets = new Map<string, (batch: DatagramBatch) => void>();
  #nextPort = 40000;
  #scheduled = false;

  readonly adapter: RuntimeAdapter = {
    name: "node",
    resolve: async (host) => host,
    openSocket: async (options) => {
      const port = options.port === 0 ? this.#nextPort++ : options.port;
      const self = `127.0.0.1:${port}`;
      let open = true;
      const socket: DatagramSocket = {
        localAddress: { host: "127.0.0.1", port },
        counters: { sendFailures: 0, receiveErrors: 0 },
        send: (bytes, to) => {
          if (!open) return;
          this.queued.push({ from: self, to, bytes: bytes.slice() });
          this.#schedule();
        },
        flush: () => {},
        onDatagrams: (cb) => void this.#sockets.set(self, cb),
        close: async () => {
          open = false;
          this.#sockets.delete(self);
        },
      };
      return socket;
    },
  };

  #schedule(): void {
    if (this.hold || this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (!this.hold) this.deliver();
    });
  }

  /** Hands every queued datagram to its socket, one batch per destination, in send order. */
  deliver(): number {
    const batches = new Map<string, DatagramBatch>();
    for (const d of this.queued.splice(0)) {
      let batch = batches.get(d.to);
      if (batch === undefined) batches.set(d.to, (batch = { length: 0, from: [], bytes: [] }));
      batch.from[batch.length] = d.from;
      batch.bytes[batch.length++] = d.bytes;
    }
    for (const [to, batch] of batches) this.#sockets.get(to)?.(batch);
    return [...batches.values()].reduce((n, b) => n + b.length, 0);
  }
}

const options = { protocolId: 0x52414345 };

async function connectedPair(net: MemoryNetwork) {
  const runtime = createRuntime(net.adapter);
  const server = await runtime.listen({ ...options, host: "127.0.0.1", port: 7000 });
  const accepted = new Promise<import("../../src/index.js").Connection>((resolve) => server.once("connection", resolve));
  const client = await runtime.connect("127.0.0.1:7000", options);
  const serverConn = await accepted;
  await sleep(5); // the client's held events are released a turn after connect() resolved
  return { server, client, serverConn };
}

describe("sends racing the peer's disconnect (in-memory carrier, real engine)", () => {
  it("a reply from a message listener after the peer's DISCONNECT in the same burst is dropped, not thrown", async () => {
    const net = new MemoryNetwork();
    const { server, client, serverConn } = await connectedPair(net);
    const thrown: unknown[] = [];
    const replies: (void | Promise<boolean>)[] = [];
    const seen: string[] = [];
    serverConn.on("message", (m) => {
      seen.push(`message ${m.data[0]}`);
      try {
        replies.push(serverConn.send(new Uint8Array([m.data[0]! + 100]), { channel: 0 }));
        replies.push(serverConn.send(new Uint8Array([1]), { channel: 0, receipt: true }));
      } catch (error) {
        thrown.push(error);
      }
      seen.push(`isOpen ${serverConn.isOpen}`);
    });
    serverConn.on("disconnect", (info) => seen.push(`disconnect ${String(info.reason)}`));

    net.hold = true;
    client.send(new Uint8Array([7]), { channel: 0 });
    await Promise.resolve(); // the client's service runs in a microtask: the DATA packet is queued
    await new Promise<void>((resolve) => queueMicrotask(resolve));
    const closed = client.close("normal", undefined, { linger: false }); // DISCONNECT queued behind it, not after its ack
    const toServer = net.queued.filter((d) => d.to === "127.0.0.1:7000").length;
    expect(toServer).toBeGreaterThanOrEqual(2);
    net.hold = false;
    net.deliver(); // DATA and DISCONNECT reach the server as one batch
    await sleep(20);
    net.deliver();
    await closed;

    expect(thrown).toEqual([]);
    expect(seen).toEqual(["message 7", "isOpen false", "disconnect normal"]);
    expect(replies).toHaveLength(2); // both sends ran (and returned) inside the listener
    expect(replies[0]).toBeUndefined();
    await expect(replies[1]).resolves.toBe(false);
    // After the disconnect event: the typed closed-connection error.
    let after: unknown;
    try {
      serverConn.send(new Uint8Array([2]));
    } catch (error) {
      after = error;
    }
    expect(after).toBeInstanceOf(ClosedError);
    expect((after as ClosedError).code).toBe("ERR_CLOSED");
    // stats() keeps answering with the final figures.
    expect(serverConn.stats().messagesReceived[0]).toBe(1);
    await server.close();
  });

  it("sends before the burst still arrive, and misuse errors are still thrown", async () => {
    const net = new MemoryNetwork();
    const { server, client, serverConn } = await connectedPair(net);
    const got: number[] = [];
    client.on("message", (m) => got.push(m.data[0]!));
    serverConn.send(new Uint8Array([42]), { channel: 0 });
    await sleep(20);
    expect(got).toEqual([42]);
    expect(() => serverConn.send(new Uint8Array([1]), { channel: 200 })).toThrow(/channel 200/);
    expect(serverConn.isOpen).toBe(true);
    await client.close();
    await server.close();
  });
});
