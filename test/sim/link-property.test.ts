import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TimeHeap } from "../../src/util/time-heap.js";
import { Link, type Delivery, type LinkConfig } from "../../src/sim/link.js";

// Model-style checks: random configs and random send schedules drive the real Link, and
// invariants that hold for every configuration are checked on the outcome.

const rate = fc.oneof(fc.constant(0), fc.double({ min: 0, max: 1, noNaN: true }));
const ms = fc.double({ min: 0, max: 200, noNaN: true });

const configArb: fc.Arbitrary<LinkConfig> = fc.record(
  {
    seed: fc.integer({ min: 0, max: 2 ** 31 }),
    lossRate: rate,
    burst: fc.record({
      pGoodToBad: fc.double({ min: 0, max: 1, noNaN: true }),
      pBadToGood: fc.double({ min: 0.01, max: 1, noNaN: true }),
      lossInBad: rate,
      lossInGood: rate,
    }),
    latencyMs: ms,
    jitterMs: ms,
    reorder: fc.boolean(),
    reorderRate: rate,
    reorderDelayMs: ms,
    duplicateRate: rate,
    corruptRate: rate,
    bandwidthBps: fc.integer({ min: 8_000, max: 100_000_000 }),
    queuePackets: fc.integer({ min: 1, max: 100 }),
    queueBytes: fc.integer({ min: 1, max: 200_000 }),
    overheadBytes: fc.integer({ min: 0, max: 64 }),
    mtu: fc.integer({ min: 1, max: 1500 }),
  },
  { requiredKeys: ["seed"] },
).filter((c) => c.bandwidthBps !== undefined || (c.queuePackets === undefined && c.queueBytes === undefined));

const scheduleArb = fc.array(
  fc.record({ gapMs: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 0.1, noNaN: true }), fc.double({ min: 0, max: 20, noNaN: true })), size: fc.integer({ min: 0, max: 1600 }) }),
  { minLength: 1, maxLength: 300 },
);

function simulate(config: LinkConfig, schedule: { gapMs: number; size: number }[]): { link: Link; out: Delivery[]; maxHeld: number } {
  const link = new Link(config);
  const out: Delivery[] = [];
  let now = 0;
  let maxHeld = 0;
  for (const [i, step] of schedule.entries()) {
    now += step.gapMs;
    for (let d = link.pollDeliveryRecord(now); d; d = link.pollDeliveryRecord(now)) out.push(d);
    const bytes = new Uint8Array(step.size).fill(i & 0xff);
    link.send(now, bytes);
    maxHeld = Math.max(maxHeld, link.queuedPackets);
  }
  for (let guard = 0; guard < schedule.length * 2 + 2; guard++) {
    const t = link.nextDelivery();
    if (t === undefined) break;
    for (let d = link.pollDeliveryRecord(t); d; d = link.pollDeliveryRecord(t)) out.push(d);
  }
  return { link, out, maxHeld };
}

describe("Link properties", () => {
  it("conserves datagrams, respects latency, queue limits, MTU and time order for any config", () => {
    fc.assert(
      fc.property(configArb, scheduleArb, (config, schedule) => {
        const { link, out, maxHeld } = simulate(config, schedule);
        const s = link.stats;
        expect(link.pending).toBe(0);
        expect(s.sent).toBe(schedule.length);
        expect(s.sent + s.duplicated).toBe(s.delivered + s.lost + s.tailDropped + s.mtuDropped);
        expect(out.length).toBe(s.delivered);
        expect(s.corrupted).toBe(out.filter((d) => d.corrupted).length);
        for (let i = 0; i < out.length; i++) {
          const d = out[i];
          expect(d.arriveAt).toBeGreaterThanOrEqual(d.sentAt + (config.latencyMs ?? 0) - 1e-9);
          if (i > 0) expect(d.arriveAt).toBeGreaterThanOrEqual(out[i - 1].arriveAt);
          if (config.mtu !== undefined) expect(d.bytes.length).toBeLessThanOrEqual(config.mtu);
          expect(d.bytes.length).toBe(schedule[d.sendIndex].size);
        }
        if (config.queuePackets !== undefined) expect(maxHeld).toBeLessThanOrEqual(config.queuePackets);
        if (config.reorder !== true && !config.reorderRate) expect(s.reordered).toBe(0);
        if (config.bandwidthBps === undefined) expect(link.queueDelay.count).toBe(0);
        // Delay is bounded by the knobs (no ratcheting FIFO floor), when there is no queue.
        if (config.bandwidthBps === undefined) {
          const jitter = config.jitterMs ?? 0;
          const hold = config.reorderRate ? (config.reorderDelayMs ?? Math.max(10, 2 * jitter)) : 0;
          const bound = (config.latencyMs ?? 0) + 2 * jitter + hold + 1e-6;
          for (const d of out) expect(d.arriveAt - d.sentAt).toBeLessThanOrEqual(bound);
        }
      }),
      { numRuns: 200, seed: 20240601 },
    );
  });

  it("TimeHeap pops in (time, order) order", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 500 }), (times) => {
        const heap = new TimeHeap<{ time: number; order: number }>();
        times.forEach((time, order) => heap.push({ time, order }));
        const popped: { time: number; order: number }[] = [];
        for (let x = heap.pop(); x; x = heap.pop()) popped.push(x);
        const expected = times.map((time, order) => ({ time, order })).sort((a, b) => a.time - b.time || a.order - b.order);
        expect(popped).toEqual(expected);
        expect(heap.size).toBe(0);
      }),
      { numRuns: 200, seed: 7 },
    );
  });
});
