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
import {
  canonicalAddress, MAX_RELAY_DATAGRAM, RELAY_BIND, RELAY_CHALLENGE, RELAY_CONFIRM, RELAY_CONTROL_BYTES, RELAY_TOKEN_BYTES, relayControlKind,
  virtualAddress, writeRelayControl,
} from "../../src/relay/wire.js";

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

/**
 * BIND, CHALLENGE, CONFIRM (PROTOCOL §8): binds `token`'s side to `from`; returns the CHALLENGE it
 * drew (empty if the side was bound there already: a BIND from its own address draws none).
 */
function bind(relay: RelayForwarder, now: number, from: string, token: Uint8Array): Uint8Array {
  const bindBytes = new Uint8Array(RELAY_CONTROL_BYTES);
  writeRelayControl(bindBytes, token, RELAY_BIND);
  const challenge = relay.handleDatagram(now, from, bindBytes);
  if (challenge === undefined) return new Uint8Array(0);
  expect(challenge.to).toBe(from);
  expect(relayControlKind(challenge!.bytes)).toBe(RELAY_CHALLENGE);
  const copy = challenge!.bytes.slice();
  expect(relay.handleDatagram(now, from, confirmOf(copy))).toBeUndefined();
  return copy;
}

/** The CONFIRM answering a CHALLENGE (the cookie echoed). */
function confirmOf(challenge: Uint8Array): Uint8Array {
  const out = new Uint8Array(RELAY_CONTROL_BYTES);
  writeRelayControl(out, challenge.subarray(0, RELAY_TOKEN_BYTES), RELAY_CONFIRM, challenge, RELAY_TOKEN_BYTES + 1);
  return out;
}

describe("RelayForwarder", () => {
  it("forwards between two bound sides, swapping in the receiver's token, same length", () => {
    const relay = forwarder();
    const { tokens } = relay.allocate(0)!;
    bind(relay, 1, A, tokens[0]);
    // A's payload before B is bound: dropped (the relay has nowhere to send it).
    expect(relay.handleDatagram(1, A, datagram(tokens[0], [1, 2, 3]))).toBeUndefined();
    expect(relay.counters.unbound).toBe(1);
    bind(relay, 2, B, tokens[1]);
    expect(relay.counters).toMatchObject({ binds: 2, challenges: 2, confirmed: 2 });
    const tx = relay.handleDatagram(3, A, datagram(tokens[0], [1, 2, 3]));
    expect(tx?.to).toBe(B);
    expect([...tx!.bytes]).toEqual([...datagram(tokens[1], [1, 2, 3])]);
    const back = relay.handleDatagram(4, B, datagram(tokens[1], [9]));
    expect(back?.to).toBe(A);
    expect([...back!.bytes]).toEqual([...datagram(tokens[0], [9])]);
    expect(relay.counters).toMatchObject({ forwarded: 2, forwardedBytes: 11 + 9 });
  });

  it("a side that moves (NAT rebinding) is reached at its newest address once that address confirms", () => {
    const relay = forwarder();
    const { tokens } = relay.allocate(0)!;
    bind(relay, 0, A, tokens[0]);
    bind(relay, 0, B, tokens[1]);
    const moved = "198.51.100.1:4999";
    // Data from the new address is not forwarded yet: it draws a CHALLENGE there instead.
    const challenge = relay.handleDatagram(200, moved, datagram(tokens[0], new Array(20).fill(3)));
    expect(challenge?.to).toBe(moved);
    expect(relay.counters.unvalidated).toBe(1);
    expect(relay.handleDatagram(201, B, datagram(tokens[1], [7]))?.to).toBe(A);
    expect(relay.handleDatagram(210, moved, confirmOf(challenge!.bytes.slice()))).toBeUndefined();
    expect(relay.handleDatagram(211, B, datagram(tokens[1], [7]))?.to).toBe(moved);
    expect(relay.handleDatagram(212, moved, datagram(tokens[0], [8]))?.to).toBe(B);
  });

  it("a token holder spoofing a victim's address cannot aim the other side's traffic at it (found by a review)", () => {
    const relay = forwarder();
    const { tokens } = relay.allocate(0)!;
    bind(relay, 0, A, tokens[0]);
    bind(relay, 0, B, tokens[1]);
    const victim = "192.0.2.99:53";
    let toVictim = 0;
    let fromVictim = 0;
    const forwardedToA = () => relay.counters.forwarded;
    for (let t = 1; t <= 60_000; t += 33) {
      // Every 5 s the attacker (side A) sends a BIND and a keepalive-sized datagram "from" the victim.
      if (t % 5000 < 33) {
        for (const bytes of [(() => { const b = new Uint8Array(RELAY_CONTROL_BYTES); writeRelayControl(b, tokens[0], RELAY_BIND); return b; })(), datagram(tokens[0], new Array(13).fill(0))]) {
          fromVictim += bytes.length;
          const tx = relay.handleDatagram(t, victim, bytes);
          if (tx !== undefined) {
            expect(tx.to).toBe(victim);
            toVictim += tx.bytes.length;
          }
        }
        // A CONFIRM with a guessed cookie does not bind.
        const guess = new Uint8Array(RELAY_CONTROL_BYTES);
        writeRelayControl(guess, tokens[0], RELAY_CONFIRM);
        fromVictim += guess.length;
        expect(relay.handleDatagram(t, victim, guess)).toBeUndefined();
      }
      // B streams 1200-byte datagrams at 30 Hz: they keep going to A's confirmed address.
      const tx = relay.handleDatagram(t, B, datagram(tokens[1], new Array(1192).fill(1)));
      if (tx?.to === victim) toVictim += tx.bytes.length;
      expect(tx === undefined || tx.to === A).toBe(true);
    }
    expect(forwardedToA()).toBeGreaterThan(100);
    expect(toVictim).toBeLessThanOrEqual(fromVictim);
    expect(relay.counters.badCookie).toBeGreaterThan(0);
  });

  it("drops and counts unknown tokens, short and oversized datagrams, and CONFIRMs for another address", () => {
    const relay = forwarder();
    const { tokens } = relay.allocate(0)!;
    bind(relay, 0, A, tokens[0]);
    const challengeB = bind(relay, 0, B, tokens[1]);
    const wrong = tokens[0].slice();
    wrong[7]! ^= 1;
    expect(relay.handleDatagram(1, A, datagram(wrong, [1]))).toBeUndefined();
    expect(relay.handleDatagram(1, A, new Uint8Array(RELAY_TOKEN_BYTES))).toBeUndefined(); // a bare token (the version-5 bind)
    expect(relay.handleDatagram(1, A, datagram(tokens[0], new Array(MAX_RELAY_DATAGRAM - RELAY_TOKEN_BYTES + 1).fill(0)))).toBeUndefined();
    expect(relay.counters).toMatchObject({ unknownToken: 1, malformed: 2, forwarded: 0 });
    // B's cookie is for B's address: echoed from elsewhere it binds nothing.
    expect(relay.handleDatagram(1, "192.0.2.50:1", confirmOf(challengeB))).toBeUndefined();
    expect(relay.counters.badCookie).toBe(1);
    expect(relay.handleDatagram(2, A, datagram(tokens[0], [1]))?.to).toBe(B);
    // A cookie is good for 10-20 s, then not.
    expect(relay.handleDatagram(25_000, B, confirmOf(challengeB))).toBeUndefined();
    expect(relay.counters.badCookie).toBe(2);
    // The largest allowed datagram still goes through.
    expect(relay.handleDatagram(25_000, A, datagram(tokens[0], new Array(MAX_RELAY_DATAGRAM - RELAY_TOKEN_BYTES).fill(0)))?.bytes.length).toBe(MAX_RELAY_DATAGRAM);
  });

  it("sends an address that has not confirmed nothing but CHALLENGEs no larger than what it sent, and forwards only to confirmed addresses", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            from: fc.constantFrom(A, B, "192.0.2.66:1", "192.0.2.66:2"),
            side: fc.constantFrom(0, 1, 2),
            kind: fc.constantFrom("data", "data", "bind", "confirm"),
            payload: fc.uint8Array({ maxLength: 40 }),
            dt: fc.integer({ min: 0, max: 50 }),
          }),
          { maxLength: 200 },
        ),
        (steps) => {
          const relay = forwarder({ bytesPerSecond: 1000, burstBytes: MAX_RELAY_DATAGRAM });
          const { tokens } = relay.allocate(0)!;
          const junk = new Uint8Array(RELAY_TOKEN_BYTES).fill(0xee);
          /** Per address: bytes it sent, bytes it got, the last CHALLENGE it got per side. */
          const sent = new Map<string, number>();
          const got = new Map<string, number>();
          const lastChallenge = new Map<string, Uint8Array>();
          /** Addresses that confirmed each side, so far. */
          const confirmed: [Set<string>, Set<string>] = [new Set(), new Set()];
          let now = 0;
          for (const step of steps) {
            now += step.dt;
            const token = step.side === 2 ? junk : tokens[step.side]!;
            let bytes: Uint8Array;
            const echo = lastChallenge.get(`${step.from}/${step.side}`);
            if (step.kind === "confirm" && echo !== undefined) bytes = confirmOf(echo);
            else if (step.kind === "bind") writeRelayControl((bytes = new Uint8Array(RELAY_CONTROL_BYTES)), token, RELAY_BIND);
            else bytes = datagram(token, [...step.payload]);
            const isConfirm = relayControlKind(bytes) === RELAY_CONFIRM;
            sent.set(step.from, (sent.get(step.from) ?? 0) + bytes.length);
            const confirmsBefore = relay.counters.confirmed;
            const tx = relay.handleDatagram(now, step.from, bytes);
            if (isConfirm && relay.counters.confirmed > confirmsBefore) confirmed[step.side as 0 | 1].add(step.from);
            if (tx === undefined) continue;
            expect(step.side).not.toBe(2);
            got.set(tx.to, (got.get(tx.to) ?? 0) + tx.bytes.length);
            if (relayControlKind(tx.bytes) === RELAY_CHALLENGE) {
              expect(tx.to).toBe(step.from);
              lastChallenge.set(`${step.from}/${step.side}`, tx.bytes.slice());
              continue;
            }
            const receiver = 1 - step.side;
            expect(confirmed[receiver]!.has(tx.to)).toBe(true);
            expect(confirmed[step.side as 0 | 1].has(step.from)).toBe(true);
            expect([...tx.bytes.subarray(0, RELAY_TOKEN_BYTES)]).toEqual([...tokens[receiver]!]);
          }
          for (const [address, n] of got) {
            if (!confirmed[0].has(address) && !confirmed[1].has(address)) expect(n).toBeLessThanOrEqual(sent.get(address) ?? 0);
          }
        },
      ),
      { seed: 20261122, numRuns: 200 },
    );
  });

  it("holds each side to its byte rate (token bucket), counting what it drops", () => {
    const relay = forwarder({ bytesPerSecond: 10_000, burstBytes: 2000 });
    const { tokens } = relay.allocate(0)!;
    bind(relay, 0, A, tokens[0]);
    bind(relay, 0, B, tokens[1]);
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
    // The first stays busy (one side binding again and again); the second is never used.
    for (let t = 200; t <= 1400; t += 200) bind(relay, t, A, first.tokens[0]);
    expect(relay.pollTimeout()).toBeLessThanOrEqual(1000);
    relay.handleTimeout(1400);
    expect(relay.size).toBe(1);
    expect(relay.counters.expired).toBe(1);
    // Its tokens are gone; the first's still work.
    expect(relay.handleDatagram(1500, B, datagram(second.tokens[1], [1]))).toBeUndefined();
    expect(relay.counters.unknownToken).toBe(1);
    bind(relay, 1500, B, first.tokens[1]);
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
    bind(relay, 100, B, used.tokens[1]);
    bind(relay, 1500, A, used.tokens[0]);
    for (let t = 0; t <= 3000; t += 250) bind(relay, t, A, lonely.tokens[0]);
    relay.handleTimeout(3000);
    expect(relay.size).toBe(1);
    expect(relay.handleDatagram(3000, A, datagram(used.tokens[0], [1]))?.to).toBe(B);
    expect(relay.handleDatagram(3000, A, datagram(lonely.tokens[0], [1]))).toBeUndefined();
    expect(relay.counters.unknownToken).toBe(1);
  });

  it("once both sides are bound, only forwarded datagrams keep an allocation: binds alone do not hold it", () => {
    const relay = forwarder({ idleTimeoutMs: 1000, bindTimeoutMs: 1000 });
    const held = relay.allocate(0)!;
    const used = relay.allocate(0)!;
    for (const { tokens } of [held, used]) {
      bind(relay, 0, A, tokens[0]);
      bind(relay, 0, B, tokens[1]);
    }
    for (let t = 200; t <= 2000; t += 200) {
      const again = new Uint8Array(RELAY_CONTROL_BYTES);
      writeRelayControl(again, held.tokens[0], RELAY_BIND);
      relay.handleDatagram(t, A, again); // a bind from the bound address: forwarded nowhere
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
