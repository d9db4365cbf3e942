import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { connectPair, makePair } from "./helpers.js";

describe("hostile datagrams", () => {
  it("random and bit-flipped datagrams are counted and dropped, never thrown, and the connection survives", () => {
    const seed = 501;
    const pair = makePair(seed);
    const [c] = connectPair(pair);
    // Capture some real datagrams to mutate.
    const samples: Uint8Array[] = [];
    pair.client.send(c, new Uint8Array(300).fill(1), { channel: 0 });
    pair.network.flush();
    for (let d = pair.toServer.pollDelivery(Infinity); d !== undefined; d = pair.toServer.pollDelivery(Infinity)) samples.push(d.slice());
    expect(samples.length).toBeGreaterThan(0);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ minLength: 0, maxLength: 1600 }),
          fc.tuple(fc.nat(samples.length - 1), fc.nat(10_000), fc.integer({ min: 1, max: 255 })).map(([k, pos, x]) => {
            const b = samples[k].slice();
            b[pos % b.length] ^= x;
            return b;
          }),
        ),
        fc.constantFrom(pair.clientAddress, "192.0.2.1:1", "[2001:db8::1]:5"),
        (bytes, from) => {
          pair.server.handleDatagram(pair.now, from, bytes);
          pair.server.handleTimeout(pair.now);
          let n = 0;
          for (let t = pair.server.pollTransmit(pair.now); t !== undefined && n < 1000; t = pair.server.pollTransmit(pair.now)) n++;
          expect(n).toBeLessThan(1000);
          n = 0;
          for (let e = pair.server.pollEvent(); e !== undefined && n < 1000; e = pair.server.pollEvent()) {
            n++;
            // Every input is random or a mutated copy (a flipped byte fails the CRC): none may
            // ever reach the application as a message.
            expect(e.type, `seed ${seed}`).not.toBe("message");
          }
          expect(n).toBeLessThan(1000);
        },
      ),
      { seed, numRuns: 3000 },
    );
    const drops = pair.server.counters.drops.reduce((a, b) => a + b, 0);
    expect(drops, `seed ${seed}`).toBeGreaterThan(2000);
    // The real connection still works afterwards: the 300 B message (its datagrams were taken
    // as samples, so it was never delivered) is resent, and a new one follows it, in order.
    pair.client.send(c, new Uint8Array([7, 7, 7]), { channel: 0 });
    pair.drive({ maxTimeMs: 500 });
    expect(pair.server.connections().length, `seed ${seed}`).toBe(1);
    const got = pair.serverEvents().flatMap((e) => (e.type === "message" ? [Array.from(e.data)] : []));
    expect(got, `seed ${seed}`).toEqual([Array(300).fill(1), [7, 7, 7]]);
  });
});
