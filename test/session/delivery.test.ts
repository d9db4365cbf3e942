/**
 * End-to-end delivery over the simulated network, per delivery mode, under loss, bursts,
 * duplication, reordering and corruption. Payloads check themselves (built from their index).
 */
import { describe, expect, it } from "vitest";
import type { LinkConfig } from "../../src/sim/link.js";
import { checkPayload, connectPair, makePair, payload } from "./helpers.js";

// DEFAULT_CHANNELS: 0 reliable-ordered, 1 unreliable-sequenced, 2 unreliable, 3 reliable-unordered,
// 4 reliable-sequenced.
const RO = 0, US = 1, UN = 2, RU = 3, RS = 4;

function scenario(seed: number, link: LinkConfig, count = 300, engine: "ts" | "wasm" = "ts") {
  const pair = makePair(seed, { server: { engine }, client: { engine }, pair: { link: { latencyMs: 15, ...link } } });
  const [c, s] = connectPair(pair);
  const got = new Map<number, number[]>([[RO, []], [US, []], [UN, []], [RU, []], [RS, []]]);
  let corrupted = 0;
  const collect = () => {
    for (const ev of pair.serverEvents()) {
      if (ev.type !== "message") continue;
      const index = checkPayload(ev.data);
      if (index < 0) corrupted++;
      else got.get(ev.channel)?.push(index);
    }
  };
  for (let i = 0; i < count; i++) {
    // Mostly small messages; every 25th ordered one spans several datagrams (fragmented).
    const size = i % 25 === 0 ? 3000 + i : 20 + ((i * 37) % 200);
    for (const ch of [RO, US, UN, RU, RS]) pair.client.send(c, payload(i, ch === RO ? size : 20 + (i % 50)), { channel: ch });
    pair.drive({ maxTimeMs: 5 });
    collect();
  }
  pair.drive({ maxTimeMs: 20_000 });
  collect();
  return { got, corrupted, pair, c, s };
}

const CASES: [string, LinkConfig][] = [
  ["loss 0%", {}],
  ["loss 5%", { lossRate: 0.05 }],
  ["loss 20%", { lossRate: 0.2 }],
  ["loss 30%", { lossRate: 0.3 }],
  ["Gilbert-Elliott bursts", { burst: { pGoodToBad: 0.05, pBadToGood: 0.3 } }],
  ["duplication 20%", { duplicateRate: 0.2, lossRate: 0.05 }],
  ["reordering", { jitterMs: 30, reorder: true, reorderRate: 0.2, lossRate: 0.05 }],
  ["corruption 5%", { corruptRate: 0.05, lossRate: 0.05 }],
];

describe("delivery guarantees per mode", () => {
  CASES.forEach(([name, link], k) => {
    const seed = 100 + k;
    it(`${name} (seed ${seed})`, () => {
      const count = 300;
      const { got, corrupted, pair, c, s } = scenario(seed, link, count);
      const why = `seed ${seed}, ${name}`;
      expect(corrupted, why).toBe(0);
      const all = Array.from({ length: count }, (_, i) => i);
      // Reliable ordered: all, once, in order.
      expect(got.get(RO), why).toEqual(all);
      // Reliable unordered: all, once.
      expect([...(got.get(RU) as number[])].sort((a, b) => a - b), why).toEqual(all);
      // Unreliable: never twice.
      const un = got.get(UN) as number[];
      expect(new Set(un).size, why).toBe(un.length);
      // Sequenced: never older after newer; reliable-sequenced delivers the newest.
      for (const ch of [US, RS]) {
        const seq = got.get(ch) as number[];
        expect(seq.length, `${why} ch ${ch}`).toBeGreaterThan(0);
        for (let i = 1; i < seq.length; i++) expect(seq[i] > seq[i - 1], `${why} ch ${ch} at ${i}`).toBe(true);
      }
      expect((got.get(RS) as number[]).at(-1), why).toBe(count - 1);
      // Packet counters add up on both sides.
      for (const stats of [pair.client.stats(c), pair.server.stats(s)]) {
        const p = stats.packets;
        expect(p.dispatched, why).toBe(p.delivered + p.dropped + p.inFlight);
      }
      // The loss really happened and was repaired by resends in new packets.
      if (link.lossRate || link.burst) expect(pair.client.stats(c).resends, why).toBeGreaterThan(0);
      // The other impairments really happened too, and the receiver counted what they did.
      if (link.duplicateRate) {
        expect(pair.toServer.stats.duplicated, why).toBeGreaterThan(0);
        expect(pair.server.stats(s).duplicates, why).toBeGreaterThan(0);
      }
      if (link.corruptRate) {
        expect(pair.toServer.stats.corrupted, why).toBeGreaterThan(0);
        expect(pair.server.stats(s).crcFailures, why).toBeGreaterThan(0);
      }
      if (link.lossRate === undefined && link.burst === undefined && !link.corruptRate) {
        expect(un.length, why).toBe(count);
      }
    });
  });
});

describe("the same guarantees on the WASM engine", () => {
  it("loss 20% + reordering + duplication (seed 150)", () => {
    const seed = 150;
    const count = 300;
    const { got, corrupted, pair } = scenario(seed, { lossRate: 0.2, jitterMs: 20, reorder: true, reorderRate: 0.1, duplicateRate: 0.1 }, count, "wasm");
    expect(pair.server.engine.kind).toBe("wasm");
    expect(corrupted, `seed ${seed}`).toBe(0);
    const all = Array.from({ length: count }, (_, i) => i);
    expect(got.get(RO), `seed ${seed}`).toEqual(all);
    expect([...(got.get(RU) as number[])].sort((a, b) => a - b), `seed ${seed}`).toEqual(all);
  });
});
