/**
 * HELLO floods against a secure server (PROTOCOL §9, "Retry"). Sans-IO: the server's half of
 * the layer with RETRY and HELLO_COOKIE, then the simulator's flood from 1,000 spoofed
 * addresses (bench/secure/hello-flood-sim.ts) against honest clients.
 */
import { describe, expect, it } from "vitest";
import { runHelloFlood } from "../../bench/secure/hello-flood-sim.js";
import { ClientSecurity } from "../../src/secure/client-security.js";
import { RETRY_WINDOW_MS, ServerSecurity, VALIDATED_RESERVE } from "../../src/secure/server-security.js";
import { createConnectToken, parseConnectToken } from "../../src/secure/token.js";
import { HELLO_COOKIE, HELLO_FIXED_BYTES, RETRY, RETRY_BYTES } from "../../src/secure/wire.js";

const PROTOCOL = 0x5ec0de01;
const SERVER = "198.51.100.7:7777";
const CLIENT = "203.0.113.5:40000";
const NOW = 1_800_000_000;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i * 7 + 1);
const FOREIGN = Uint8Array.from({ length: 32 }, (_, i) => 200 - i);

function server(): ServerSecurity {
  let id = 100;
  return new ServerSecurity({ serverKey: KEY, protocolId: PROTOCOL, addresses: [SERVER], maxAssociations: 64, idleTimeoutMs: 30_000, unixSeconds: () => NOW + 1, randomU32: () => id++ });
}

function client(key = KEY, clientId = 42): ClientSecurity {
  return new ClientSecurity(parseConnectToken(createConnectToken({ serverKey: key, protocolId: PROTOCOL, clientId, serverAddresses: [SERVER], nowSeconds: NOW }), PROTOCOL, NOW + 1));
}

const REQUEST = new Uint8Array(256).fill(0x21);

/**
 * Spends the shared budget down to its reserve: `count` HELLOs, each with a new token under
 * another key, from as many hosts (one each: the per-host limit is not what is spent).
 */
function spend(s: ServerSecurity, count: number, nowMs: number, first = 0): void {
  const template = client(FOREIGN).seal(REQUEST)!.slice();
  const tagAt = HELLO_FIXED_BYTES + (template[37]! | (template[38]! << 8)) - 16;
  for (let k = first; k < first + count; k++) {
    const hello = template.slice();
    hello[tagAt] = k;
    hello[tagAt + 1] = k >>> 8;
    s.open(`10.66.${k >> 8}.${k & 255}:5000`, hello, nowMs);
  }
}

describe("RETRY when the token-opening budget is short", () => {
  it("a HELLO is opened at once while the budget lasts; past its reserve it gets a RETRY, smaller than it, and nothing is kept", () => {
    const s = server();
    const c = client();
    spend(s, VALIDATED_RESERVE, 0);
    expect(s.counters.badToken).toBe(VALIDATED_RESERVE);
    expect(s.counters.retried).toBe(0);
    expect(s.pollRetry()).toBeUndefined();
    // The budget is down to its reserve: the spoofed HELLOs from here on and the honest one
    // get RETRYs (queued for the carrier), and none is opened.
    spend(s, 10, 0);
    const hello = c.seal(REQUEST)!.slice();
    expect(s.open(CLIENT, hello.slice(), 0)).toBeUndefined();
    expect(s.counters.retried).toBe(11);
    expect(s.counters.badToken).toBe(VALIDATED_RESERVE);
    expect(s.size).toBe(0);
    const retries = [];
    for (let r = s.pollRetry(); r !== undefined; r = s.pollRetry()) retries.push(r);
    expect(retries.length).toBe(11);
    const mine = retries.find((r) => r.to === CLIENT)!;
    expect(mine.bytes.length).toBe(RETRY_BYTES);
    expect(mine.bytes[0]).toBe(RETRY);
    for (const r of retries) expect(r.bytes.length).toBeLessThan(hello.length);

    // The client answers at once with its HELLO again, with the cookie: opened from the reserve.
    expect(c.open(mine.bytes.slice())).toBeUndefined();
    const again = c.takeRetryHello()!;
    expect(again[0]).toBe(HELLO_COOKIE);
    expect(again.length).toBe(hello.length + 16);
    expect(c.counters.retries).toBe(1);
    expect(s.open(CLIENT, again.slice(), 0)).toEqual(REQUEST);
    expect(s.counters.opened).toBe(1);
    expect(s.identityOf(CLIENT)?.clientId).toBe(42n);
  });

  it("a retry cookie is good only at its address, for its token, in its window and the next", () => {
    const s = server();
    spend(s, VALIDATED_RESERVE, 0);
    const c = client();
    s.open(CLIENT, c.seal(REQUEST)!.slice(), 0);
    const retry = s.pollRetry()!;
    c.open(retry.bytes.slice());
    const withCookie = c.takeRetryHello()!;
    // From another address: the cookie does not check, and it is taken as a HELLO without one.
    expect(s.open("203.0.113.6:40000", withCookie.slice(), 0)).toBeUndefined();
    expect(s.counters.badRetryCookie).toBe(1);
    expect(s.pollRetry()?.to).toBe("203.0.113.6:40000");
    // Another token with this cookie, from the cookie's address.
    const other = client(KEY, 43);
    const otherHello = other.seal(REQUEST)!;
    const forged = new Uint8Array(otherHello.length + 16);
    forged[0] = HELLO_COOKIE;
    forged.set(withCookie.subarray(1, 17), 1);
    forged.set(otherHello.subarray(1), 17);
    expect(s.open(CLIENT, forged, 0)).toBeUndefined();
    expect(s.counters.badRetryCookie).toBe(2);
    s.pollRetry();
    // Another attempt's cookie from the same window, tried two windows later: expired.
    const late = client(KEY, 44);
    s.open(CLIENT, late.seal(REQUEST)!.slice(), 0);
    late.open(s.pollRetry()!.bytes.slice());
    const lateHello = late.takeRetryHello()!;
    expect(s.counters.opened).toBe(0);
    // One window later (the budget spent down to its reserve again), the first one checks.
    spend(s, 2 * VALIDATED_RESERVE, RETRY_WINDOW_MS + 1, 10_000);
    expect(s.open(CLIENT, withCookie.slice(), RETRY_WINDOW_MS + 1)).toEqual(REQUEST);
    expect(s.counters.opened).toBe(1);
    spend(s, 2 * VALIDATED_RESERVE, 2 * RETRY_WINDOW_MS + 1, 20_000);
    const bad = s.counters.badRetryCookie;
    expect(s.open(CLIENT, lateHello.slice(), 2 * RETRY_WINDOW_MS + 1)).toBeUndefined();
    expect(s.counters.badRetryCookie).toBe(bad + 1);
    expect(s.counters.opened).toBe(1);
  });

  it("the client takes a RETRY only with its own nonce, before the server answered", () => {
    const c = client();
    const hello = c.seal(REQUEST)!.slice();
    const forged = new Uint8Array(RETRY_BYTES);
    forged[0] = RETRY;
    forged.set(hello.subarray(1, 9), 1); // not its nonce
    expect(c.open(forged)).toBeUndefined();
    expect(c.counters.malformed).toBe(1);
    expect(c.takeRetryHello()).toBeUndefined();
    // Its next HELLO has no cookie.
    expect(c.seal(REQUEST)![0]).toBe(0x80);
  });
});

describe("a HELLO flood from 1,000 spoofed addresses at the full budget", () => {
  it("honest clients connect in well under 1 s (virtual), and the server sends less than it receives", () => {
    // 1,000 addresses nobody holds, 20 HELLOs a second each, every one a new token minted under
    // another key: 10 times the budget passes the per-host limit.
    const r = runHelloFlood({ hosts: 1000, ratePerHost: 20, honest: 2 });
    const why = JSON.stringify({ ...r, security: undefined });
    expect(r.hellosSent).toBeGreaterThan(70_000);
    for (const ms of r.connectMs) expect(ms, why).toBeLessThan(1000);
    expect(r.bytesOut, why).toBeLessThanOrEqual(r.bytesIn);
    expect(r.spoofedBytesOut, why).toBeLessThanOrEqual(r.spoofedBytesIn / 10);
    // No association for a spoofed address: only the honest clients'.
    expect(r.maxAssociations).toBeLessThanOrEqual(2);
    expect(r.security.retried).toBeGreaterThan(10_000);
    expect(r.security.opened).toBe(2);
  });
});
