/**
 * send({ delayMs }): the message is held by its channel until now + delayMs, the endpoint's
 * pollTimeout wakes the driver then, and delayed messages are released in due order (a delayed
 * message takes its message sequence at release, so undelayed sends may overtake it).
 */
import { describe, expect, it } from "vitest";
import { connectPair, makePair, payload, checkPayload } from "./helpers.js";
import { InvalidDelayError } from "../../src/channels/errors.js";

describe("delayed sends", () => {
  for (const [seed, engine, lossRate] of [[931, "ts", 0], [932, "wasm", 0], [933, "ts", 0.1]] as const) {
    it(`delays 0/50/200 ms arrive no earlier than due and in release order (seed ${seed}, ${engine}, loss ${lossRate})`, () => {
      const pair = makePair(seed, { server: { engine }, client: { engine }, pair: { link: { latencyMs: 10, lossRate } } });
      const [c] = connectPair(pair);
      const start = pair.now;
      // index -> delay; sent interleaved, in an order that differs from the release order.
      const plan: [number, number][] = [[0, 200], [1, 50], [2, 0], [3, 200], [4, 50], [5, 0]];
      for (const [index, delayMs] of plan) pair.client.send(c, payload(index, 300), { channel: 0, delayMs });
      pair.network.flush();
      // The client must ask to be woken at the first due time (50 ms), not later.
      const wake = pair.client.pollTimeout();
      expect(wake, `seed ${seed}`).toBeDefined();
      expect(wake as number, `seed ${seed}`).toBeLessThanOrEqual(start + 50);
      const arrivals: { index: number; at: number }[] = [];
      for (let steps = 0; steps < 100_000 && pair.now < start + 2000; steps++) {
        if (!pair.step()) break;
        for (const ev of pair.serverEvents()) if (ev.type === "message") arrivals.push({ index: checkPayload(ev.data), at: pair.now - start });
      }
      const info = `seed ${seed}: ${JSON.stringify(arrivals)}`;
      expect(arrivals.map((a) => a.index), info).toEqual([2, 5, 1, 4, 0, 3]);
      for (const a of arrivals) {
        const delay = plan[a.index][1];
        expect(a.at, info).toBeGreaterThanOrEqual(delay + 10); // due time + one-way latency
      }
      if (lossRate === 0) for (const a of arrivals) expect(a.at, info).toBeLessThan(plan[a.index][1] + 10 + 5);
    });
  }

  it("a delayed message with a receipt reports delivered; negative / NaN / infinite delays throw InvalidDelayError", () => {
    const pair = makePair(934);
    const [c] = connectPair(pair);
    const receipt = pair.client.send(c, payload(7, 100), { channel: 0, delayMs: 30, receipt: true });
    expect(receipt).toBeGreaterThan(0);
    let delivered: boolean | undefined;
    for (let i = 0; i < 100 && delivered === undefined; i++) {
      pair.advance(5);
      for (const ev of pair.clientEvents()) if (ev.type === "receipt" && ev.receipt === receipt) delivered = ev.delivered;
    }
    expect(delivered).toBe(true);
    for (const bad of [-1, Number.NaN, Infinity]) {
      let error: unknown;
      try {
        pair.client.send(c, payload(8, 100), { channel: 0, delayMs: bad });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidDelayError);
      expect((error as InvalidDelayError).code).toBe("ERR_INVALID_DELAY");
    }
  });
});
