/**
 * RelayingSocket (src/api/relay-socket.ts) over a fake socket: what reaches the driver, what
 * leaves, and what is dropped, with and without routes.
 */
import { describe, expect, it } from "vitest";
import { RelayingSocket } from "../../src/api/relay-socket.js";
import type { DatagramBatch, DatagramSocket } from "../../src/api/socket.js";

const RELAY = "[2001:db8::5]:9001";
const TOKEN = Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8);

function fake(host: string): { socket: DatagramSocket; sent: [number[], string][]; deliver(from: string[], bytes: Uint8Array[]): void } {
  const sent: [number[], string][] = [];
  let callback: (batch: DatagramBatch) => void = () => {};
  const socket: DatagramSocket = {
    localAddress: { host, port: 4000 },
    counters: { sendFailures: 0, receiveErrors: 0 },
    send: (bytes, to) => sent.push([[...bytes], to]),
    flush: () => {},
    onDatagrams: (cb) => {
      callback = cb;
    },
    close: async () => {},
  };
  return { socket, sent, deliver: (from, bytes) => callback({ length: from.length, from, bytes }) };
}

function received(relaying: RelayingSocket): [string, number[]][] {
  const got: [string, number[]][] = [];
  relaying.onDatagrams((batch) => {
    for (let i = 0; i < batch.length; i++) got.push([batch.from[i]!, [...batch.bytes[i]!]]);
  });
  return got;
}

describe("RelayingSocket", () => {
  it("passes a socket's own batch through untouched while it has no route (IPv4)", () => {
    const f = fake("0.0.0.0");
    const relaying = new RelayingSocket(f.socket);
    let seen: DatagramBatch | undefined;
    relaying.onDatagrams((batch) => (seen = batch));
    const batch = { length: 1, from: ["192.0.2.9:1"], bytes: [Uint8Array.of(1)] };
    f.deliver(batch.from, batch.bytes);
    expect(seen?.from).toBe(batch.from);
    relaying.send(Uint8Array.of(5), "192.0.2.9:1");
    expect(f.sent).toEqual([[[5], "192.0.2.9:1"]]);
  });

  it("on an IPv6 socket with no route, passes a batch through untouched unless a sender is in 100::/64", () => {
    const f = fake("::");
    const relaying = new RelayingSocket(f.socket);
    const seen: DatagramBatch[] = [];
    relaying.onDatagrams((batch) => seen.push({ length: batch.length, from: batch.from.slice(0, batch.length), bytes: batch.bytes.slice(0, batch.length) }));
    f.deliver(["[2001:db8::7]:1", "[::1]:2"], [Uint8Array.of(1), Uint8Array.of(2)]);
    f.deliver(["[2001:db8::7]:1", "[100::1]:2"], [Uint8Array.of(1), Uint8Array.of(2)]);
    expect(seen.map((b) => b.from)).toEqual([["[2001:db8::7]:1", "[::1]:2"], ["[2001:db8::7]:1"]]);
    expect(relaying.dropped.fromVirtual).toBe(1);
  });

  it("wraps sends to a route's virtual address, unwraps the relay's datagrams, drops everything else addressed as a relayed peer", () => {
    const f = fake("::");
    const relaying = new RelayingSocket(f.socket);
    const got = received(relaying);
    const virtual = relaying.routes.add(RELAY, TOKEN);
    relaying.send(Uint8Array.of(9, 9), virtual);
    expect(f.sent).toEqual([[[...TOKEN, 9, 9], RELAY]]);
    f.deliver(
      [RELAY, RELAY, "[100::1]:9001", "[2001:db8::7]:1"],
      [Uint8Array.of(...TOKEN, 4), Uint8Array.of(8, 7, 6, 5, 4, 3, 2, 1, 4), Uint8Array.of(1, 2), Uint8Array.of(3)],
    );
    // The relayed datagram comes from the virtual address; one with another token and one that
    // really came from 100::/64 (posing as the relayed peer) are dropped; a real peer passes.
    expect(got).toEqual([
      [virtual, [4]],
      ["[2001:db8::7]:1", [3]],
    ]);
    expect(relaying.routes.counters.dropped).toBe(1);
    expect(relaying.dropped.fromVirtual).toBe(1);
    // Without its route, a send to the virtual address goes nowhere.
    relaying.routes.remove(virtual);
    relaying.send(Uint8Array.of(1), virtual);
    expect(f.sent.length).toBe(1);
    expect(relaying.dropped.unrouted).toBe(1);
    expect(relaying.sendBind(virtual)).toBe(false);
  });
});
