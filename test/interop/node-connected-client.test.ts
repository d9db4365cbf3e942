// The Node adapter connects a client's socket to its one peer (OpenSocketOptions.peer): sends
// to the peer go out connected, intact and in order (from one buffer rewritten after each
// send, as the engine's send arena is), a send to any other address is counted as failed, and
// the peer sees the datagrams from the client socket's own port. IPv4 and IPv6.
import { describe, expect, it } from "vitest";
import { nodeAdapter } from "../../runtimes/node/index.js";
import { formatAddress } from "../../src/api/address.js";
import type { DatagramBatch, DatagramSocket } from "../../src/api/socket.js";

// Few enough to fit the receive buffer even where the OS caps it below the 4 MiB asked for.
const COUNT = 100;

async function roundTrip(loopback: string, any: string): Promise<void> {
  const server = await nodeAdapter.openSocket({ host: loopback, port: 0, receiveBufferBytes: 4 << 20 });
  const client = await nodeAdapter.openSocket({ host: any, port: 0, peer: { host: loopback, port: server.localAddress.port } });
  const peer = formatAddress(loopback, server.localAddress.port);
  try {
    const received: { from: string; bytes: Uint8Array }[] = [];
    const all = new Promise<void>((resolve) => {
      server.onDatagrams((batch: DatagramBatch) => {
        for (let i = 0; i < batch.length; i++) received.push({ from: batch.from[i]!, bytes: batch.bytes[i]! });
        if (received.length >= COUNT) resolve();
      });
    });
    const source = new Uint8Array(200);
    for (let i = 0; i < COUNT; i++) {
      const length = 10 + (i % 190);
      for (let k = 0; k < length; k++) source[k] = (i * 13 + k) & 0xff;
      client.send(source.subarray(0, length), peer);
      source.fill(0xee);
    }
    client.flush();
    // Another destination is refused on a connected socket and counted, never thrown.
    client.send(new Uint8Array([1, 2, 3]), formatAddress(loopback, server.localAddress.port === 9 ? 10 : 9));
    expect(client.counters.sendFailures).toBe(1);
    // At most 5 s: a lost datagram then shows as a short count below instead of a hang.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([all, new Promise<void>((resolve) => (timer = setTimeout(resolve, 5000)))]);
    clearTimeout(timer);
    expect(received.length).toBe(COUNT);
    const bad: number[] = [];
    received.forEach(({ from, bytes }, i) => {
      const length = 10 + (i % 190);
      let ok = bytes.length === length && from.endsWith(`:${client.localAddress.port}`);
      for (let k = 0; ok && k < length; k++) ok = bytes[k] === ((i * 13 + k) & 0xff);
      if (!ok) bad.push(i);
    });
    expect(bad).toEqual([]);
  } finally {
    await close(client);
    await close(server);
  }
}

function close(socket: DatagramSocket): Promise<void> {
  return socket.close();
}

describe("node adapter: a client's socket connected to its peer", () => {
  it("IPv4: sends to the peer arrive intact and in order; other destinations are counted as failed", () => roundTrip("127.0.0.1", "0.0.0.0"));
  it("IPv6: the same over ::1", () => roundTrip("::1", "::"));
});
