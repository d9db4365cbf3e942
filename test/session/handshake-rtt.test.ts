/**
 * The client's first RTT sample comes from its handshake (RFC 9002 §5.2 and RFC 6298 §2.2 take
 * the first sample where they can): a CONNECT_REQUEST answered by a CHALLENGE, or else a
 * CONNECT_RESPONSE answered by an ACCEPT, timed only if it was sent once (Karn: a resent packet's
 * answer cannot say which copy it answers). So `stats().rttMs` is known at the "connect" event
 * and the first data's loss timers run on the path's RTT, not on the 1 s initial RTO.
 * The server has no sample then: its CHALLENGE is stateless, so nothing there remembers when it
 * left.
 */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import type { ConnectionStats, EndpointEvent } from "../../src/session/types.js";
import { Pair } from "../../src/sim/network.js";
import { PROTOCOL_ID } from "./helpers.js";

interface AtConnect {
  client?: ConnectionStats;
  server?: ConnectionStats;
}

/** Connects over a 40 ms RTT path; `withhold` says how many requests and responses the server never sees. */
function connectTimed(seed: number, engine: "ts" | "wasm", withhold: { requests?: number; responses?: number } = {}) {
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: seed * 2 + 1, engine });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: seed * 2 + 2, engine });
  let requests = withhold.requests ?? 0;
  let responses = withhold.responses ?? 0;
  // The server as the network sees it: the same endpoint, but the withheld packets never reach it.
  const filtered = new Proxy(server, {
    get(target, key) {
      if (key === "handleDatagram") {
        return (now: number, from: string, bytes: Uint8Array): void => {
          const type = bytes[0]! & 0x0f;
          if (type === 1 && requests > 0) return void requests--;
          if (type === 3 && responses > 0) return void responses--;
          target.handleDatagram(now, from, bytes);
        };
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  const seen: AtConnect = {};
  const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(filtered, client, {
    seed,
    link: { latencyMs: 20 },
    onEvent: (address, ev) => {
      if (ev.type !== "connect") return;
      if (address === pair.clientAddress) seen.client = client.stats(ev.connection);
      else seen.server = server.stats(ev.connection);
    },
  });
  const start = pair.now;
  client.connect(pair.now, pair.serverAddress);
  pair.network.flush();
  for (let step = 0; step < 1000 && seen.client === undefined; step++) pair.drive({ maxTimeMs: 5, maxSteps: 10_000 });
  return { ...seen, elapsedMs: pair.now - start };
}

describe("the handshake's RTT sample", () => {
  for (const [seed, engine] of [[61, "ts"], [62, "wasm"]] as const) {
    it(`a client knows the path's RTT at its connect event (seed ${seed}, ${engine})`, () => {
      const r = connectTimed(seed, engine);
      const why = `seed ${seed}: client rtt ${r.client?.rttMs} after ${r.elapsedMs} ms`;
      expect(r.client, why).toBeDefined();
      expect(r.client!.rttMs, why).toBeGreaterThanOrEqual(40);
      expect(r.client!.rttMs, why).toBeLessThan(42);
      expect(r.client!.minRttMs, why).toBeGreaterThanOrEqual(40);
      expect(r.client!.linkPingMs, why).toBeLessThan(42);
      // No sample on the server: its CHALLENGE left no state behind.
      expect(Number.isNaN(r.server!.rttMs), why).toBe(true);
    });
  }

  it("a lost request leaves the response's round trip to time (seed 63)", () => {
    const r = connectTimed(63, "ts", { requests: 1 });
    const why = `client rtt ${r.client?.rttMs} after ${r.elapsedMs} ms`;
    expect(r.elapsedMs, why).toBeGreaterThan(80); // the request was sent again
    expect(r.client!.rttMs, why).toBeGreaterThanOrEqual(40);
    expect(r.client!.rttMs, why).toBeLessThan(42);
  });

  it("when both a request and a response were sent again, nothing is timed (Karn; seed 64)", () => {
    const r = connectTimed(64, "ts", { requests: 1, responses: 1 });
    const why = `client rtt ${r.client?.rttMs} after ${r.elapsedMs} ms`;
    expect(r.client, why).toBeDefined();
    expect(Number.isNaN(r.client!.rttMs), why).toBe(true);
  });
});
