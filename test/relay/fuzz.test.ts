/**
 * Hostile input to both ends of the relay, fuzzed (fast-check, fixed seeds): random datagrams
 * from random addresses never throw, never grow state, and a peer never hands its endpoint a
 * relayed datagram that did not carry one of its routes' tokens from that route's relay.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RelayForwarder } from "../../src/relay/forwarder.js";
import { RelayedNode } from "../../src/relay/nodes.js";
import { RELAY_TOKEN_BYTES } from "../../src/relay/wire.js";
import type { SansIoNode } from "../../src/session/sans-io.js";

const RELAY = "192.0.2.1:9001";
const addresses = fc.constantFrom(RELAY, "192.0.2.1:9002", "198.51.100.7:4000", "[2001:db8::1]:9001", "[100::1]:9001", "[100::2]:1", "x", "");

/** Records what reaches it. */
class Sink implements SansIoNode<never> {
  got: { from: string; bytes: number[] }[] = [];
  handleDatagram(_now: number, from: string, bytes: Uint8Array): void {
    this.got.push({ from, bytes: [...bytes] });
  }
  handleTimeout(): void {}
  pollTimeout(): undefined {
    return undefined;
  }
  pollEvent(): undefined {
    return undefined;
  }
  pollTransmit(): undefined {
    return undefined;
  }
}

describe("the relay under hostile datagrams", () => {
  it("a peer delivers only its routes' datagrams from their relay, unwrapped, and real senders as they are", () => {
    const tokens = [Uint8Array.of(1, 1, 1, 1, 1, 1, 1, 1), Uint8Array.of(2, 2, 2, 2, 2, 2, 2, 2)];
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            from: addresses,
            // Often a real token as the prefix, sometimes one bit off, sometimes anything.
            prefix: fc.oneof(fc.constantFrom(...tokens), fc.uint8Array({ minLength: 8, maxLength: 8 }), fc.constant(Uint8Array.of(1, 1, 1, 1, 1, 1, 1, 0))),
            rest: fc.uint8Array({ maxLength: 60 }),
            cut: fc.integer({ min: 0, max: 80 }),
          }),
          { maxLength: 100 },
        ),
        (datagrams) => {
          const sink = new Sink();
          const node = new RelayedNode<never>(sink);
          const virtuals = tokens.map((t) => node.routes.add(RELAY, t));
          let expected = 0;
          for (const d of datagrams) {
            const whole = new Uint8Array(RELAY_TOKEN_BYTES + d.rest.length);
            whole.set(d.prefix, 0);
            whole.set(d.rest, RELAY_TOKEN_BYTES);
            const bytes = whole.subarray(0, Math.min(whole.length, d.cut));
            const before = sink.got.length;
            node.handleDatagram(0, d.from, bytes);
            if (sink.got.length === before) continue;
            expected++;
            const got = sink.got[sink.got.length - 1]!;
            if (d.from === RELAY) {
              // Unwrapped: from a route's virtual address, with that route's token stripped.
              const i = virtuals.indexOf(got.from);
              expect(i).toBeGreaterThanOrEqual(0);
              expect([...bytes.subarray(0, RELAY_TOKEN_BYTES)]).toEqual([...tokens[i]!]);
              expect(got.bytes).toEqual([...bytes.subarray(RELAY_TOKEN_BYTES)]);
            } else {
              // Any other sender passes as it is, except a real one in 100::/64.
              expect(got.from).toBe(d.from);
              expect(d.from.startsWith("[100::")).toBe(false);
              expect(got.bytes).toEqual([...bytes]);
            }
          }
          expect(sink.got.length).toBe(expected);
          expect(node.routes.size).toBe(2);
        },
      ),
      { seed: 11_2026, numRuns: 300 },
    );
  });

  it("the forwarder never throws on any bytes from any address, and forwarding leaves its table alone", () => {
    fc.assert(
      fc.property(fc.array(fc.record({ from: addresses, bytes: fc.uint8Array({ maxLength: 1600 }), dt: fc.nat(5000) }), { maxLength: 200 }), (datagrams) => {
        const relay = new RelayForwarder({ idleTimeoutMs: 1000, bindTimeoutMs: 1000 });
        const { tokens } = relay.allocate(0)!;
        let now = 0;
        for (const d of datagrams) {
          now += d.dt;
          // Half the time with a real token in front, so the bind/forward paths run too.
          const bytes = d.bytes.length >= 8 && d.dt % 2 === 0 ? Uint8Array.from([...tokens[d.dt % 4 < 2 ? 0 : 1]!, ...d.bytes.subarray(8)]) : d.bytes;
          relay.handleDatagram(now, d.from, bytes);
          relay.handleTimeout(now);
          expect(relay.size).toBeLessThanOrEqual(1);
        }
        const c = relay.counters;
        // Each datagram ends in exactly one counter (CHALLENGEs sent are counted apart).
        expect(c.forwarded + c.binds + c.confirmed + c.badCookie + c.unvalidated + c.malformed + c.unknownToken + c.unbound + c.rateLimited).toBe(datagrams.length);
      }),
      { seed: 22_2026, numRuns: 200 },
    );
  });
});
