/** Clock sync fast start: 10 requests/s for the first 5 s, then EndpointConfig.clockSyncMs. */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import { connectPair, makePair, PROTOCOL_ID } from "./helpers.js";

describe("clock sync", () => {
  it("error <= 2 ms 5 s after connecting over 50 +/- 10 ms jitter, seeds 1-8", () => {
    const results: string[] = [];
    let worst = 0;
    for (let seed = 1; seed <= 8; seed++) {
      const pair = makePair(seed, { pair: { link: { latencyMs: 40, jitterMs: 20 } } });
      const [c] = connectPair(pair);
      pair.advance(5000);
      const s = pair.client.stats(c);
      // Both nodes share the virtual clock: the true offset is 0.
      const error = Math.abs(s.clockOffsetMs as number);
      results.push(`seed ${seed}: error ${error.toFixed(2)} bound ${(s.clockErrorMs as number).toFixed(2)}`);
      expect(error, results.join("; ")).toBeLessThanOrEqual((s.clockErrorMs as number) + 1e-9);
      worst = Math.max(worst, error);
    }
    console.log(results.join("; "));
    expect(worst, results.join("; ")).toBeLessThanOrEqual(2);
  });

  it("after the fast start, requests follow clockSyncMs", () => {
    const seed = 11;
    const count = (clockSyncMs: number) => {
      const pair = makePair(seed, { client: { clockSyncMs, keepaliveMs: 60_000, timeoutMs: 240_000 } });
      connectPair(pair);
      pair.advance(6000);
      const before = pair.server.counters.datagramsReceived;
      pair.advance(20_000);
      return pair.server.counters.datagramsReceived - before;
    };
    // Idle connection: the client sends a clock request and a pure ack for its reply, nothing else.
    const slow = count(2000);
    const fast = count(500);
    const why = `seed ${seed}: ${slow} datagrams in 20 s at 2 s, ${fast} at 0.5 s`;
    expect(slow, why).toBeGreaterThanOrEqual(18);
    expect(slow, why).toBeLessThanOrEqual(22);
    expect(fast, why).toBeGreaterThanOrEqual(76);
    expect(fast, why).toBeLessThanOrEqual(84);
  });

  it("rejects a clockSyncMs below 10 ms with a typed error", () => {
    expect(() => new Endpoint({ protocolId: PROTOCOL_ID, clockSyncMs: 1, engine: "ts" })).toThrow(expect.objectContaining({ code: "ERR_SESSION_CONFIG" }));
  });
});
