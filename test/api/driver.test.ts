import { describe, expect, it } from "vitest";
import { Driver } from "../../src/api/driver.js";
import type { EndpointLike } from "../../src/api/endpoint-like.js";
import type { DatagramBatch, DatagramSocket } from "../../src/api/socket.js";
import type { Transmit } from "../../src/session/sans-io.js";

/** An endpoint double that owes one ack per datagram received, sent at the next poll. */
function ackingEndpoint(): EndpointLike & { handledBetweenPolls: number[] } {
  let owed = 0;
  let handled = 0;
  const handledBetweenPolls: number[] = [];
  return {
    handledBetweenPolls,
    handleDatagram: () => {
      handled++;
      owed++;
    },
    handleTimeout: () => {},
    pollTimeout: () => undefined,
    pollEvent: () => undefined,
    pollTransmit: (): Transmit | undefined => {
      if (handled > 0) {
        handledBetweenPolls.push(handled);
        handled = 0;
      }
      if (owed === 0) return undefined;
      owed--;
      return { to: "127.0.0.1:2", bytes: new Uint8Array([1]) };
    },
    connect: () => 0,
    send: () => undefined,
    close: () => {},
    stats: () => {
      throw new Error("unused");
    },
  };
}

function fakeSocket(): DatagramSocket & { deliver(batch: DatagramBatch): void; sent: number } {
  let callback: (batch: DatagramBatch) => void = () => {};
  const socket = {
    localAddress: { host: "127.0.0.1", port: 1 },
    counters: { sendFailures: 0, receiveErrors: 0 },
    sent: 0,
    send: () => void socket.sent++,
    flush: () => {},
    onDatagrams: (cb: (batch: DatagramBatch) => void) => void (callback = cb),
    close: () => Promise.resolve(),
    deliver: (batch: DatagramBatch) => callback(batch),
  };
  return socket;
}

describe("Driver", () => {
  it("services at least every 32 datagrams of a large burst, so owed acks leave in time", async () => {
    const endpoint = ackingEndpoint();
    const socket = fakeSocket();
    const driver = new Driver(endpoint, socket, () => {});
    const n = 1000;
    socket.deliver({ length: n, from: new Array<string>(n).fill("127.0.0.1:2"), bytes: Array.from({ length: n }, () => new Uint8Array([0])) });
    expect(endpoint.handledBetweenPolls.reduce((a, b) => a + b, 0)).toBe(n);
    expect(Math.max(...endpoint.handledBetweenPolls)).toBeLessThanOrEqual(32);
    expect(socket.sent).toBe(n);
    expect(driver.counters.datagramsIn).toBe(n);
    await driver.close();
  });
});
