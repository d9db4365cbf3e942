import { describe, expect, it } from "vitest";
import { Link, LinkError, burstAverageLoss, type Delivery, type LinkConfig } from "../../src/sim/link.js";

/** A self-checking payload: 4-byte little-endian index, then bytes derived from it. */
function payload(index: number, size = 32): Uint8Array {
  const b = new Uint8Array(size);
  new DataView(b.buffer).setUint32(0, index, true);
  for (let i = 4; i < size; i++) b[i] = (index * 31 + i) & 0xff;
  return b;
}

/** Send `count` datagrams every `intervalMs` starting at 0 and drain everything. */
function run(config: LinkConfig, count: number, intervalMs = 1, size = 32): { link: Link; deliveries: Delivery[] } {
  const link = new Link(config);
  const deliveries: Delivery[] = [];
  const drainTo = (t: number): void => {
    for (let d = link.pollDeliveryRecord(t); d; d = link.pollDeliveryRecord(t)) deliveries.push(d);
  };
  for (let i = 0; i < count; i++) {
    const now = i * intervalMs;
    drainTo(now);
    link.send(now, payload(i, size));
  }
  // Bounded: every datagram in flight has a finite arrival time.
  for (let guard = 0; guard < count * 4 + 10; guard++) {
    const t = link.nextDelivery();
    if (t === undefined) break;
    drainTo(t);
  }
  expect(link.pending).toBe(0);
  return { link, deliveries };
}

function trace(ds: Delivery[]): string[] {
  return ds.map((d) => `${d.sendIndex}@${d.arriveAt.toFixed(6)}:${d.duplicate ? "D" : ""}${d.corrupted ? "C" : ""}:${Buffer.from(d.bytes).toString("hex")}`);
}

function binomialBound(n: number, p: number, sds = 5): number {
  return sds * Math.sqrt(n * p * (1 - p));
}

const everything: LinkConfig = {
  lossRate: 0.05,
  burst: { pGoodToBad: 0.01, pBadToGood: 0.3 },
  latencyMs: 30,
  jitterMs: 15,
  reorderRate: 0.05,
  duplicateRate: 0.03,
  corruptRate: 0.02,
  bandwidthBps: 2_000_000,
  queuePackets: 40,
  mtu: 1200,
};

describe("Link", () => {
  it("same seed gives an identical delivery trace; another seed differs", () => {
    for (const seed of [1, 2, 99]) {
      const a = trace(run({ ...everything, seed }, 3000, 0.5, 200).deliveries);
      const b = trace(run({ ...everything, seed }, 3000, 0.5, 200).deliveries);
      expect(a, `seed ${seed}`).toEqual(b);
      const c = trace(run({ ...everything, seed: seed + 1000 }, 3000, 0.5, 200).deliveries);
      expect(a, `seed ${seed}`).not.toEqual(c);
    }
  });

  it("counts add up: sent + duplicated = delivered + lost + tailDropped + mtuDropped", () => {
    const seed = 5;
    const { link } = run({ ...everything, seed }, 5000, 0.4, 300);
    const s = link.stats;
    expect(s.sent).toBe(5000);
    expect(s.sent + s.duplicated, `seed ${seed}`).toBe(s.delivered + s.lost + s.tailDropped + s.mtuDropped);
    expect(s.burstLost).toBeLessThanOrEqual(s.lost);
    expect(s.tailDropped).toBeGreaterThan(0);
  });

  it("independent loss stays within statistical bounds", () => {
    const n = 20_000;
    for (const [seed, p] of [[1, 0.01], [2, 0.1], [3, 0.3]] as const) {
      const { link, deliveries } = run({ seed, lossRate: p }, n);
      const lost = link.stats.lost;
      expect(Math.abs(lost - n * p), `seed ${seed} p ${p}`).toBeLessThan(binomialBound(n, p));
      expect(deliveries.length).toBe(n - lost);
      expect(link.stats.burstLost).toBe(0);
    }
    expect(run({ seed: 4, lossRate: 0 }, 1000).deliveries.length).toBe(1000);
    expect(run({ seed: 4, lossRate: 1 }, 1000).deliveries.length).toBe(0);
  });

  it("Gilbert-Elliott loss comes in longer runs than independent loss at the same average", () => {
    const seed = 11;
    const n = 50_000;
    const burst = { pGoodToBad: 0.02, pBadToGood: 0.25 };
    const average = burstAverageLoss(burst); // 0.02 / 0.27 ~ 7.4%
    const lostRuns = (config: LinkConfig): { rate: number; meanRun: number } => {
      const { deliveries } = run(config, n);
      const arrived = new Uint8Array(n);
      for (const d of deliveries) arrived[d.sendIndex] = 1;
      let runs = 0;
      let lost = 0;
      for (let i = 0; i < n; i++) {
        if (!arrived[i]) {
          lost++;
          if (i === 0 || arrived[i - 1]) runs++;
        }
      }
      return { rate: lost / n, meanRun: lost / runs };
    };
    const ge = lostRuns({ seed, burst });
    const ind = lostRuns({ seed, lossRate: average });
    // Both near the same average (GE is correlated, so allow a wider band).
    expect(Math.abs(ge.rate - average), `seed ${seed}`).toBeLessThan(average * 0.2);
    expect(Math.abs(ind.rate - average), `seed ${seed}`).toBeLessThan(average * 0.1);
    // Mean bad-state sojourn is 1 / pBadToGood = 4 datagrams; independent runs ~ 1 / (1 - p) ~ 1.08.
    expect(ge.meanRun, `seed ${seed}`).toBeGreaterThan(3);
    expect(ind.meanRun, `seed ${seed}`).toBeLessThan(1.2);
    expect(ge.meanRun).toBeGreaterThan(2 * ind.meanRun);
  });

  it("burst loss is counted as burstLost and honours lossInGood / lossInBad", () => {
    const n = 20_000;
    const { link } = run({ seed: 3, burst: { pGoodToBad: 0, pBadToGood: 1, lossInGood: 0.2 } }, n);
    // Never leaves the good state: plain 20% loss, all attributed to the burst model.
    expect(Math.abs(link.stats.lost - n * 0.2)).toBeLessThan(binomialBound(n, 0.2));
    expect(link.stats.burstLost).toBe(link.stats.lost);
  });

  it("jitter without reorder never reorders and never arrives before the latency", () => {
    for (const seed of [1, 2, 3]) {
      const { link, deliveries } = run({ seed, latencyMs: 50, jitterMs: 40 }, 3000, 5);
      let last = -1;
      let lastAt = -Infinity;
      for (const d of deliveries) {
        expect(d.sendIndex, `seed ${seed}`).toBeGreaterThan(last);
        expect(d.arriveAt).toBeGreaterThanOrEqual(lastAt);
        expect(d.arriveAt - d.sentAt).toBeGreaterThanOrEqual(50);
        // The FIFO floor only raises an arrival to an earlier datagram's, which left no later.
        expect(d.arriveAt - d.sentAt).toBeLessThan(50 + 40);
        last = d.sendIndex;
        lastAt = d.arriveAt;
      }
      expect(link.stats.reordered).toBe(0);
      // The jitter really was applied: delays are spread out.
      const delays = deliveries.map((d) => d.arriveAt - d.sentAt);
      expect(Math.max(...delays) - Math.min(...delays)).toBeGreaterThan(20);
    }
  });

  it("reorder: true lets jitter reorder; reorderRate holds a fraction back so later ones overtake", () => {
    const seed = 8;
    const free = run({ seed, latencyMs: 50, jitterMs: 40, reorder: true }, 5000, 0.5);
    expect(free.link.stats.reordered, `seed ${seed}`).toBeGreaterThan(500);
    const inversions = free.deliveries.filter((d, i) => i > 0 && d.sendIndex < free.deliveries[i - 1].sendIndex).length;
    expect(inversions).toBeGreaterThan(0);

    const n = 10_000;
    const held = run({ seed, latencyMs: 20, reorderRate: 0.1, reorderDelayMs: 10 }, n, 1);
    const s = held.link.stats;
    expect(Math.abs(s.heldBack - n * 0.1), `seed ${seed}`).toBeLessThan(binomialBound(n, 0.1));
    // Every held datagram is overtaken by the ~10 sent after it, and only held ones are late.
    expect(s.reordered).toBe(s.heldBack);
    // Arrivals come out of the heap in time order regardless.
    for (let i = 1; i < held.deliveries.length; i++) {
      expect(held.deliveries[i].arriveAt).toBeGreaterThanOrEqual(held.deliveries[i - 1].arriveAt);
    }
  });

  it("ties in arrival time are delivered in send order", () => {
    const link = new Link({ latencyMs: 5 });
    for (let i = 0; i < 100; i++) link.send(0, payload(i));
    const order: number[] = [];
    for (let d = link.pollDeliveryRecord(5); d; d = link.pollDeliveryRecord(5)) order.push(d.sendIndex);
    expect(order).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(link.pollDelivery(100)).toBeUndefined();
  });

  it("nothing is delivered before its time", () => {
    const link = new Link({ latencyMs: 10 });
    link.send(0, payload(0));
    expect(link.nextDelivery()).toBe(10);
    expect(link.pollDelivery(9.999)).toBeUndefined();
    expect(link.pollDelivery(10)).toEqual(payload(0));
  });

  it("duplicates deliver a second identical copy at the configured rate", () => {
    const seed = 21;
    const n = 10_000;
    const { link, deliveries } = run({ seed, duplicateRate: 0.2, latencyMs: 5, jitterMs: 3 }, n);
    const s = link.stats;
    expect(Math.abs(s.duplicated - n * 0.2), `seed ${seed}`).toBeLessThan(binomialBound(n, 0.2));
    expect(s.delivered).toBe(n + s.duplicated);
    const seen = new Map<number, number>();
    let mismatched = 0;
    for (const d of deliveries) {
      seen.set(d.sendIndex, (seen.get(d.sendIndex) ?? 0) + 1);
      if (!Buffer.from(d.bytes).equals(payload(d.sendIndex))) mismatched++;
    }
    expect(mismatched).toBe(0);
    expect([...seen.values()].filter((c) => c === 2).length).toBe(s.duplicated);
    expect([...seen.values()].every((c) => c === 1 || c === 2)).toBe(true);
  });

  it("frequent duplicates at a high send rate keep delay bounded and order intact", () => {
    // Regression: duplicates once raised the FIFO floor by up to jitterMs each, so at 100
    // datagrams per ms the arrival times drifted seconds into the future.
    const seed = 1;
    const { link, deliveries } = run({ seed, latencyMs: 30, jitterMs: 10, duplicateRate: 0.05 }, 50_000, 0.01, 16);
    let worst = 0;
    for (const d of deliveries) worst = Math.max(worst, d.arriveAt - d.sentAt);
    expect(worst, `seed ${seed}`).toBeLessThanOrEqual(40);
    expect(link.stats.reordered).toBe(0);
    expect(link.stats.duplicated).toBeGreaterThan(2000);
  });

  it("corruption flips 1 to 3 bits, only in the copies it reports", () => {
    const seed = 17;
    const n = 5000;
    const { link, deliveries } = run({ seed, corruptRate: 0.3 }, n, 1, 64);
    const flipsSeen = new Set<number>();
    let corrupted = 0;
    for (const d of deliveries) {
      const original = payload(d.sendIndex, 64);
      let bits = 0;
      for (let i = 0; i < original.length; i++) {
        let x = original[i] ^ d.bytes[i];
        while (x) {
          bits += x & 1;
          x >>>= 1;
        }
      }
      if (d.corrupted) {
        corrupted++;
        expect(bits, `seed ${seed}`).toBeGreaterThanOrEqual(1);
        expect(bits).toBeLessThanOrEqual(3);
        flipsSeen.add(bits);
      } else {
        expect(bits).toBe(0);
      }
    }
    expect(corrupted).toBe(link.stats.corrupted);
    expect(Math.abs(corrupted - n * 0.3)).toBeLessThan(binomialBound(n, 0.3));
    expect([...flipsSeen].sort()).toEqual([1, 2, 3]);
  });

  it("send copies the caller's bytes", () => {
    const link = new Link({ latencyMs: 1 });
    const buf = payload(1);
    link.send(0, buf);
    buf.fill(0);
    expect(link.pollDelivery(1)).toEqual(payload(1));
  });

  it("drops datagrams larger than the MTU", () => {
    const link = new Link({ mtu: 100 });
    expect(link.send(0, new Uint8Array(100))).toBe("queued");
    expect(link.send(0, new Uint8Array(101))).toBe("mtuDropped");
    expect(link.send(0, new Uint8Array(1500))).toBe("mtuDropped");
    expect(link.stats.mtuDropped).toBe(2);
    expect(link.pollDelivery(0)?.length).toBe(100);
    expect(link.pollDelivery(0)).toBeUndefined();
  });

  it("queueing delay and arrivals match a hand computation (1 Mbit/s, 1000 B, burst of 20)", () => {
    // 1000 bytes at 1 Mbit/s take 8 ms to serialize. Twenty sent at t=0: datagram k waits 8k ms
    // behind the others and arrives at 8(k+1) + latency.
    const link = new Link({ bandwidthBps: 1_000_000, latencyMs: 10 });
    for (let k = 0; k < 20; k++) link.send(0, payload(k, 1000));
    const arrivals: number[] = [];
    // Bounded: 20 datagrams, each polled at its own arrival time.
    for (let guard = 0, t = link.nextDelivery(); guard < 100 && t !== undefined; guard++, t = link.nextDelivery()) {
      const d = link.pollDeliveryRecord(t);
      if (d) arrivals.push(d.arriveAt);
    }
    expect(link.pending).toBe(0);
    expect(arrivals).toEqual(Array.from({ length: 20 }, (_, k) => 8 * (k + 1) + 10));
    // Delays 0, 8, ..., 152. Nearest-rank p95 of 20 samples is the 19th smallest: 144.
    expect(link.queueDelay.percentile(95)).toBe(144);
    expect(link.queueDelay.percentile(50)).toBe(72);
    expect(link.queueDelay.max).toBe(152);
    expect(link.queueDelay.count).toBe(20);
  });

  it("queueing delay accounts for datagrams that already left (spaced sends)", () => {
    // 1000 B every 6 ms into an 8 ms/datagram bottleneck: datagram k starts at 8k, was sent at
    // 6k, so it waits 2k ms.
    const link = new Link({ bandwidthBps: 1_000_000 });
    for (let k = 0; k < 10; k++) {
      link.send(6 * k, payload(k, 1000));
      expect(link.lastQueueDelay).toBeCloseTo(2 * k, 9);
    }
  });

  it("a bandwidth cap gives the configured throughput", () => {
    const seed = 2;
    // Offer 2 Mbit/s (1000 B every 4 ms) to a 1 Mbit/s bottleneck with an unbounded queue.
    const { deliveries } = run({ seed, bandwidthBps: 1_000_000, overheadBytes: 0 }, 2000, 4, 1000);
    expect(deliveries.length).toBe(2000);
    const first = deliveries[0].arriveAt;
    const last = deliveries[deliveries.length - 1].arriveAt;
    const bitsPerSecond = ((deliveries.length - 1) * 1000 * 8) / ((last - first) / 1000);
    expect(Math.abs(bitsPerSecond - 1_000_000)).toBeLessThan(1_000);
  });

  it("a bounded queue tail-drops and bounds the queueing delay", () => {
    const seed = 4;
    const n = 4000;
    // Offered load 2x capacity: about half must be dropped once the queue is full.
    const { link, deliveries } = run({ seed, bandwidthBps: 1_000_000, queuePackets: 10 }, n, 4, 1000);
    const s = link.stats;
    expect(s.tailDropped + deliveries.length).toBe(n);
    expect(Math.abs(s.tailDropped - n / 2)).toBeLessThan(n * 0.02);
    // At most 9 datagrams ahead, one of them partly serialized: delay < 9 * 8 ms.
    expect(link.queueDelay.max).toBeLessThanOrEqual(72);
    expect(link.queueDelay.percentile(95)).toBeGreaterThan(60);
    // Throughput stays at the bottleneck rate.
    const span = (deliveries[deliveries.length - 1].arriveAt - deliveries[0].arriveAt) / 1000;
    expect(Math.abs(((deliveries.length - 1) * 8000) / span - 1_000_000)).toBeLessThan(5_000);

    // A byte-limited queue: 5000 bytes holds five 1000-byte datagrams.
    const byBytes = run({ seed, bandwidthBps: 1_000_000, queueBytes: 5000 }, n, 4, 1000);
    expect(byBytes.link.queueDelay.max).toBeLessThanOrEqual(32);
    expect(byBytes.link.stats.tailDropped).toBeGreaterThan(n * 0.4);
  });

  it("overheadBytes adds to serialization time", () => {
    const link = new Link({ bandwidthBps: 8_000, overheadBytes: 28 });
    link.send(0, new Uint8Array(72)); // 100 wire bytes = 800 bits = 100 ms at 8 kbit/s
    expect(link.nextDelivery()).toBeCloseTo(100, 9);
  });

  it("rejects nonsense config and misuse with typed errors", () => {
    const bad: LinkConfig[] = [
      { lossRate: -0.1 },
      { lossRate: 5 },
      { lossRate: NaN },
      { duplicateRate: 1.5 },
      { latencyMs: -1 },
      { jitterMs: Infinity },
      { bandwidthBps: 0 },
      { queuePackets: 0, bandwidthBps: 1000 },
      { queuePackets: 1.5, bandwidthBps: 1000 },
      { queuePackets: 10 },
      { mtu: 0 },
      { burst: { pGoodToBad: 0.1, pBadToGood: 0 } },
      { burst: { pGoodToBad: 2, pBadToGood: 0.5 } },
      { burst: { pGoodToBad: 0.1 } as never },
    ];
    for (const config of bad) {
      let error: unknown;
      try {
        new Link(config);
      } catch (e) {
        error = e;
      }
      expect(error, JSON.stringify(config)).toBeInstanceOf(LinkError);
      expect((error as LinkError).code).toBe("ERR_SIM_LINK_CONFIG");
    }
    const link = new Link();
    link.send(10, payload(0));
    expect(() => link.send(9, payload(1))).toThrow(/monotonic/);
    expect(() => link.send(NaN, payload(1))).toThrow(LinkError);
  });
});
