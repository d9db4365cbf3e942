// Outgoing datagrams are views into the engine's send arena, overwritten by the next call into
// the engine. These tests pin that the adapters' send copies (src/api/send-slab.ts) hold: a
// copy stays intact however the source is reused afterwards, and datagrams sent through the
// Node adapter from one buffer rewritten after every send arrive exactly as they were sent.
import { describe, expect, it } from "vitest";
import { SendSlab } from "../../src/api/send-slab.js";
import { SenderNames } from "../../src/api/address.js";
import { nodeAdapter } from "../../runtimes/node/index.js";
import type { DatagramBatch } from "../../src/api/socket.js";

/** Deterministic payload for datagram `i`: length and every byte derived from i. */
function fill(buf: Uint8Array, i: number): number {
  const length = 20 + ((i * 37) % 900);
  for (let k = 0; k < length; k++) buf[k] = (i * 31 + k * 7) & 0xff;
  return length;
}

function matches(bytes: Uint8Array, i: number): boolean {
  const expected = new Uint8Array(1000);
  const length = fill(expected, i);
  if (bytes.length !== length) return false;
  for (let k = 0; k < length; k++) if (bytes[k] !== expected[k]) return false;
  return true;
}

describe("send copies", () => {
  it("SendSlab: every copy stays intact until releaseAll, across slab boundaries", () => {
    const slab = new SendSlab();
    const source = new Uint8Array(1000);
    const copies: Uint8Array[] = [];
    for (let i = 0; i < 300; i++) {
      copies.push(slab.copy(source.subarray(0, fill(source, i)))); // 300 x ~480 B: several slabs
      source.fill(0xee); // the "arena" is overwritten after each send
    }
    const bad = copies.map((c, i) => (matches(c, i) ? -1 : i)).filter((i) => i >= 0);
    expect(bad).toEqual([]);
    // After releaseAll the space is reused (slabs are kept): the next copy starts where the
    // first one was.
    slab.releaseAll();
    const again = slab.copy(new Uint8Array([1, 2, 3]));
    expect(again.buffer).toBe(copies[0]!.buffer);
    expect(again.byteOffset).toBe(0);
  });

  it("SenderNames: the core's address text, cached per port and still exact per IP", () => {
    const names = new SenderNames();
    expect(names.get("127.0.0.1", 5000)).toBe("127.0.0.1:5000");
    expect(names.get("127.0.0.2", 5000)).toBe("127.0.0.2:5000");
    expect(names.get("::1", 5000)).toBe("[::1]:5000");
    expect(names.get("127.0.0.1", 5000)).toBe("127.0.0.1:5000");
  });

  it("node adapter: 2000 datagrams sent from one buffer rewritten after each send arrive intact", async () => {
    const a = await nodeAdapter.openSocket({ host: "127.0.0.1", port: 0, receiveBufferBytes: 4 << 20, sendBufferBytes: 4 << 20 });
    const b = await nodeAdapter.openSocket({ host: "127.0.0.1", port: 0, receiveBufferBytes: 4 << 20 });
    const received: Uint8Array[] = [];
    const done = new Promise<void>((resolve) => {
      b.onDatagrams((batch: DatagramBatch) => {
        for (let i = 0; i < batch.length; i++) received.push(batch.bytes[i]!);
        if (received.length >= 2000) resolve();
      });
    });
    const to = `127.0.0.1:${b.localAddress.port}`;
    const arena = new Uint8Array(1000);
    // Bursts of 100 per turn (the receive buffer holds them all), bounded by count.
    for (let burst = 0; burst < 20; burst++) {
      for (let j = 0; j < 100; j++) {
        const i = burst * 100 + j;
        a.send(arena.subarray(0, fill(arena, i)), to);
        arena.fill(0xee);
      }
      a.flush();
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 3000))]);
    await a.close();
    await b.close();
    // Loopback with 4 MiB buffers loses nothing here; what arrived must be exactly what was sent.
    expect(received.length).toBe(2000);
    const bad = received.map((bytes, i) => (matches(bytes, i) ? -1 : i)).filter((i) => i >= 0);
    expect(bad).toEqual([]);
    expect(a.counters.sendFailures).toBe(0);
  });
});
