/**
 * The relay's forwarding table (src/relay/forwarder.ts, PROTOCOL §8) and a peer's routes
 * (src/relay/routes.ts): what is forwarded, what is dropped and counted, and what can never
 * happen (forwarding to an address that did not send the matching token, more bytes out than in).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RelayConfigError } from "../../src/relay/errors.js";
import { RelayForwarder } from "../../src/relay/forwarder.js";
import { MAX_RELAY_ROUTES, RelayRoutes } from "../../src/relay/routes.js";
import { canonicalAddress, MAX_RELAY_DATAGRAM, RELAY_TOKEN_BYTES, virtualAddress } from "../../src/relay/wire.js";

const A = "198.51.100.1:4000";
const B = "203.0.113.7:5000";
const RELAY = "192.0.2.1:9001";

/** A forwarder whose random() gives each allocation distinct known bytes. */
function forwarder(options: ConstructorParameters<typeof RelayForwarder>[0] = {}): RelayForwarder {
  let n = 0;
  return new RelayForwarder({
    random: () => {
      n++;
      return Uint8Array.from({ length: 16 }, (_, i) => (n * 16 + i) & 0xff);
    },
    ...options,
  });
}

function datagram(token: Uint8Array, payload: number[]): Uint8Array {
  const out = new Uint8Array(RELAY_TOKEN_BYTES + payload.length);
  out.set(token, 0);
  out.set(payload, RELAY_TOKEN_BYTES);
  return out;
}

describe("RelayForwarder", () => {
  it("forwards between two bound sides, swapping in the receiver's token, same length", () => {
    const relay = forwarder();
    const { tokens } = relay.allocate(0)!;
    // A's payload before B is bound: dropped (the relay has nowhere to send it), but A is bound.
    expect(relay.handleDatagram(1, A, datagram(tokens[0], [1, 2, 3]))).toBeUndefined();
    expect(relay.counters.unbound).toBe(1);
    // B binds with its bare token: not forwarded.
    expect(relay.handleDatagram(2, B, tokens[1].slice())).toBeUndefined();
    expect(relay.counters.binds).toBe(1);
    const tx = relay.handleDatagram(3, A, datagram(tokens[0], [1, 2, 3]));
    expect(tx?.to).toBe(B);
    expect([...tx!.bytes]).toEqual([...datagram(tokens[1], [1, 2, 3])]);
    const back = relay.handleDatagram(4, B, datagram(tokens[1], [9]));
    expect(back?.to).toBe(A);
    expect([...back!.bytes]).toEqual([...datagram(tokens[0], [9])]);
    expect(relay.counters).toMatchObject({ forwarded: 2, forwardedBytes: 11 + 9 });
  });

  it("a side that moves (NAT rebinding) is reached at its newest address", () => {
    const relay = forwarder();
    const { tokens } = relay.allocate(0)!;
    relay.handleDatagram(0, A, tokens[0].slice());
    relay.handleDatagram(0, B, tokens[1].slice());
    relay.handleDatagram(1, "198.51.100.1:4999", tokens[0].slice());
    expect(relay.handleDatagram(2, B, datagram(tokens[1], [7]))?.to).toBe("198.51.100.1:4999");
  });

  it("drops and counts unknown tokens, short and oversized datagrams", () => {
    const relay = forwarder();
    const { tokens } = relay.allocate(0)!;
    relay.handleDatagram(0, A, tokens[0].slice());
    relay.handleDatagram(0, B, tokens[1].slice());
    const wrong = tokens[0].slice();
    wrong[7]! ^= 1;
    expect(relay.handleDatagram(1, A, datagram(wrong, [1]))).toBeUndefined();
    expect(relay.handleDatagram(1, A, new Uint8Array(RELAY_TOKEN_BYTES - 1))).toBeUndefined();
    expect(relay.handleDatagram(1, A, datagram(tokens[0], new Array(MAX_RELAY_DATAGRAM - RELAY_TOKEN_BYTES + 1).fill(0)))).toBeUndefined();
    expect(relay.counters).toMatchObject({ unknownToken: 1, malformed: 2, forwarded: 0 });
    // The largest allowed datagram still goes through.
    expect(relay.handleDatagram(1, A, datagram(tokens[0], new Array(MAX_RELAY_DATAGRAM - RELAY_TOKEN_BYTES).fill(0)))?.bytes.length).toBe(MAX_RELAY_DATAGRAM);
  });

  it("never forwards to an address that did not send the matching token, nor more bytes than it received", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            from: fc.constantFrom(A, B, "192.0.2.66:1", "192.0.2.66:2"),
            side: fc.constantFrom(0, 1, 2),
            payload: fc.uint8Array({ maxLength: 40 }),
            dt: fc.integer({ min: 0, max: 50 }),
          }),
          { maxLength: 200 },
        ),
        (steps) => {
          const relay = forwarder({ bytesPerSecond: 1000, burstBytes: MAX_RELAY_DATAGRAM });
          const { tokens } = relay.allocate(0)!;
          const junk = new Uint8Array(RELAY_TOKEN_BYTES).fill(0xee);
          /** Addresses that have sent each side's token, so far. */
          const sentFrom: [Set<string>, Set<string>] = [new Set(), new Set()];
          let now = 0;
          let bytesIn = 0;
          let bytesOut = 0;
          for (const step of steps) {
            now += step.dt;
            const token = step.side === 2 ? junk : tokens[step.side]!;
            const bytes = datagram(token, [...step.payload]);
            bytesIn += bytes.length;
            if (step.side !== 2) sentFrom[step.side as 0 | 1].add(step.from);
            const tx = relay.handleDatagram(now, step.from, bytes);
            if (tx === undefined) continue;
            expect(step.side).not.toBe(2);
            const receiver = 1 - step.side;
            expect(sentFrom[receiver]!.has(tx.to)).toBe(true);
            expect([...tx.bytes.subarray(0, RELAY_TOKEN_BYTES)]).toEqual([...tokens[receiver]!]);
            bytesOut += tx.bytes.length;
          }
          expect(bytesOut).toBeLessThanOrEqual(bytesIn);
          expect(relay.counters.forwardedBytes).toBe(bytesOut);
        },
      ),
      { seed: 20261122, numRuns: 200 },
    );
  });

  it("holds each side to its byte rate (token bucket), counting what it drops", () => {
    const relay = forwarder({ bytesPerSecond: 10_000, burstBytes: 2000 });
    const { tokens } = relay.allocate(0)!;
    relay.handleDatagram(0, A, tokens[0].slice());
    relay.handleDatagram(0, B, tokens[1].slice());
    const payload = new Array(992).fill(1);
    // 2000 bytes of burst: two 992-byte payloads, then nothing until the bucket refills.
    expect(relay.handleDatagram(0, A, datagram(tokens[0], payload))).toBeDefined();
    expect(relay.handleDatagram(0, A, datagram(tokens[0], payload))).toBeDefined();
    expect(relay.handleDatagram(0, A, datagram(tokens[0], payload))).toBeUndefined();
    expect(relay.counters.rateLimited).toBe(1);
    // The other side has its own bucket.
    expect(relay.handleDatagram(0, B, datagram(tokens[1], payload))).toBeDefined();
    // 100 ms at 10,000 B/s refills 1000 bytes: one more.
    expect(relay.handleDatagram(100, A, datagram(tokens[0], payload))).toBeDefined();
    expect(relay.handleDatagram(100, A, datagram(tokens[0], payload))).toBeUndefined();
  });

  it("ends idle allocations, keeps busy ones, and refuses beyond maxAllocations", () => {
    const relay = forwarder({ maxAllocations: 2, idleTimeoutMs: 1000 });
    const first = relay.allocate(0)!;
    const second = relay.allocate(0)!;
    expect(relay.allocate(0)).toBeUndefined();
    expect(relay.counters.full).toBe(1);
    // The first stays busy; the second is never used.
    for (let t = 200; t <= 1400; t += 200) relay.handleDatagram(t, A, first.tokens[0].slice());
    expect(relay.pollTimeout()).toBeLessThanOrEqual(1000);
    relay.handleTimeout(1400);
    expect(relay.size).toBe(1);
    expect(relay.counters.expired).toBe(1);
    // Its tokens are gone; the first's still work.
    expect(relay.handleDatagram(1500, B, second.tokens[1].slice())).toBeUndefined();
    expect(relay.counters.unknownToken).toBe(1);
    relay.handleDatagram(1500, B, first.tokens[1].slice());
    expect(relay.handleDatagram(1500, A, datagram(first.tokens[0], [1]))?.to).toBe(B);
    // Room again.
    expect(relay.allocate(1500)).toBeDefined();
    // And once nothing moves for idleTimeoutMs, everything ends and no timer is left.
    relay.handleTimeout(5000);
    expect(relay.size).toBe(0);
    expect(relay.pollTimeout()).toBeUndefined();
  });

  it("ends an allocation whose two sides have not both bound within bindTimeoutMs, even while one side keeps sending", () => {
    const relay = forwarder({ idleTimeoutMs: 30_000, bindTimeoutMs: 2000 });
    const lonely = relay.allocate(0)!;
    const used = relay.allocate(0)!;
    relay.handleDatagram(100, B, used.tokens[1].slice());
    relay.handleDatagram(1500, A, used.tokens[0].slice());
    for (let t = 0; t <= 3000; t += 250) relay.handleDatagram(t, A, lonely.tokens[0].slice());
    relay.handleTimeout(3000);
    expect(relay.size).toBe(1);
    expect(relay.handleDatagram(3000, A, datagram(used.tokens[0], [1]))?.to).toBe(B);
    expect(relay.handleDatagram(3000, A, lonely.tokens[0].slice())).toBeUndefined();
    expect(relay.counters.unknownToken).toBe(1);
  });

  it("once both sides are bound, only forwarded datagrams keep an allocation: binds alone do not hold it", () => {
    const relay = forwarder({ idleTimeoutMs: 1000, bindTimeoutMs: 1000 });
    const held = relay.allocate(0)!;
    const used = relay.allocate(0)!;
    for (const { tokens } of [held, used]) {
      relay.handleDatagram(0, A, tokens[0].slice());
      relay.handleDatagram(0, B, tokens[1].slice());
    }
    for (let t = 200; t <= 2000; t += 200) {
      relay.handleDatagram(t, A, held.tokens[0].slice()); // a bind: forwarded nowhere
      relay.handleDatagram(t, A, datagram(used.tokens[0], [1]));
    }
    relay.handleTimeout(2000);
    expect(relay.size).toBe(1);
    expect(relay.handleDatagram(2000, A, datagram(used.tokens[0], [2]))?.to).toBe(B);
    expect(relay.handleDatagram(2000, A, datagram(held.tokens[0], [2]))).toBeUndefined();
  });

  it("rejects options out of range with a typed error", () => {
    expect(() => new RelayForwarder({ maxAllocations: 0 })).toThrow(RelayConfigError);
    expect(() => new RelayForwarder({ idleTimeoutMs: 10 })).toThrow(/idleTimeoutMs/);
    expect(() => new RelayForwarder({ bindTimeoutMs: 0.5 })).toThrow(/bindTimeoutMs/);
    expect(() => new RelayForwarder({ burstBytes: 100 })).toThrow(/burstBytes/);
    expect(() => new RelayForwarder({ random: () => new Uint8Array(8) }).allocate(0)).toThrow(RelayConfigError);
  });

  it("refuses an allocation whose tokens are equal or already in use (a broken random source)", () => {
    const fixed = new RelayForwarder({ random: () => Uint8Array.from({ length: 16 }, (_, i) => i) });
    expect(fixed.allocate(0)).toBeDefined();
    expect(fixed.allocate(0)).toBeUndefined();
    const zeros = new RelayForwarder({ random: () => new Uint8Array(16) });
    expect(zeros.allocate(0)).toBeUndefined();
    expect(fixed.counters.collisions + zeros.counters.collisions).toBe(2);
    expect(fixed.size + zeros.size).toBe(1);
  });
});

describe("RelayRoutes", () => {
  const token = Uint8Array.from([0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07, 0x08]);

  it("names each route's peer by a 100::/64 address of its own number (not the token) and the relay's port", () => {
    expect(virtualAddress(1, 9001)).toBe("[100::1]:9001");
    expect(virtualAddress(0x1_0002_0003, 7)).toBe("[100::1:2:3]:7");
    expect(virtualAddress(0x1_0000_0000, 7)).toBe("[100::1:0:0]:7");
    const routes = new RelayRoutes();
    const first = routes.add(RELAY, token);
    expect(first).toBe("[100::1]:9001");
    expect(first).not.toContain("a1b2");
    // The same token again: the same route. Another token: the next number.
    expect(routes.add(RELAY, token)).toBe(first);
    expect(routes.add(RELAY, Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]))).toBe("[100::2]:9001");
    expect(routes.size).toBe(2);
    // A route dropped and added again is a new address: its old connection stays gone.
    routes.remove(first);
    expect(routes.add(RELAY, token)).toBe("[100::3]:9001");
    expect(() => routes.add("192.0.2.2:9001", token)).toThrow(RelayConfigError);
    expect(() => routes.add("not an address", new Uint8Array(8).fill(1))).toThrow(RelayConfigError);
    expect(() => routes.add("relay.example:9001", new Uint8Array(8).fill(1))).toThrow(RelayConfigError);
    expect(() => routes.add(RELAY, new Uint8Array(7))).toThrow(RelayConfigError);
  });

  it("matches a relay however its IPv6 address was written (RFC 5952 spelling, as runtimes report senders)", () => {
    expect(canonicalAddress("[2001:DB8:0:0:0::1]:9001")).toBe("[2001:db8::1]:9001");
    expect(canonicalAddress("[2001:db8:0:1:0:0:0:1]:9")).toBe("[2001:db8:0:1::1]:9");
    expect(canonicalAddress("[0:0::0]:1")).toBe("[::]:1");
    expect(canonicalAddress("[1:0:0:2:0:0:0:3]:1")).toBe("[1:0:0:2::3]:1");
    expect(canonicalAddress("[1:0:2:3:4:5:6:7]:1")).toBe("[1:0:2:3:4:5:6:7]:1"); // one zero group stays
    expect(canonicalAddress("192.0.2.1:9001")).toBe("192.0.2.1:9001");
    for (const bad of ["[1::2::3]:1", "[12345::]:1", "[1:2:3:4:5:6:7:8:9]:1", "010.0.0.1:1", "256.0.0.1:1", "1.2.3.4:0", "1.2.3.4", "[::1]"]) {
      expect(canonicalAddress(bad), bad).toBeUndefined();
    }
    const routes = new RelayRoutes();
    routes.add("[2001:DB8:0::1]:9001", token);
    expect(routes.isRelay("[2001:db8::1]:9001")).toBe(true);
  });

  it("wraps for the relay and unwraps only the relay's datagrams with a routed token", () => {
    const routes = new RelayRoutes();
    const virtual = routes.add(RELAY, token);
    const out = new Uint8Array(MAX_RELAY_DATAGRAM);
    const n = routes.wrap(routes.get(virtual)!, Uint8Array.from([5, 6]), out);
    expect([...out.subarray(0, n)]).toEqual([...token, 5, 6]);
    expect(routes.isRelay(RELAY)).toBe(true);
    expect(routes.isRelay(A)).toBe(false);
    expect(routes.unwrap(RELAY, out.subarray(0, n))?.virtual).toBe(virtual);
    // The right token from another address, or a wrong token from the relay: dropped.
    expect(routes.unwrap(A, out.subarray(0, n))).toBeUndefined();
    const wrong = out.slice(0, n);
    wrong[0]! ^= 1;
    expect(routes.unwrap(RELAY, wrong)).toBeUndefined();
    expect(routes.unwrap(RELAY, token.slice())).toBeUndefined(); // a bare token carries no datagram
    expect(routes.counters).toMatchObject({ wrapped: 1, unwrapped: 1, dropped: 3 });
    // Too large to wrap.
    expect(routes.wrap(routes.get(virtual)!, new Uint8Array(MAX_RELAY_DATAGRAM - RELAY_TOKEN_BYTES + 1), out)).toBe(-1);
    routes.remove(virtual);
    expect(routes.isRelay(RELAY)).toBe(false);
    expect(routes.get(virtual)).toBeUndefined();
  });

  it("keeps at most MAX_RELAY_ROUTES, dropping the one used longest ago", () => {
    const routes = new RelayRoutes();
    const out = new Uint8Array(MAX_RELAY_DATAGRAM);
    const virtuals: string[] = [];
    for (let i = 0; i < MAX_RELAY_ROUTES; i++) virtuals.push(routes.add(RELAY, Uint8Array.from([i, 0, 0, 0, 0, 0, 0, 1])));
    // Route 0 is in use; route 1 is the least recently used.
    routes.wrap(routes.get(virtuals[0]!)!, new Uint8Array(1), out);
    routes.add(RELAY, Uint8Array.from([0xff, 0, 0, 0, 0, 0, 0, 1]));
    expect(routes.size).toBe(MAX_RELAY_ROUTES);
    expect(routes.get(virtuals[0]!)).toBeDefined();
    expect(routes.get(virtuals[1]!)).toBeUndefined();
    expect(routes.counters.evicted).toBe(1);
  });
});
