/**
 * Model-based fuzzing (after s2n-quic): random operation sequences (time passes, packet sent,
 * acked, lost, app-limited) drive every controller; a simple model tracks what is in flight and
 * invariants are checked after every step. fast-check runs with a fixed seed (printed by
 * fast-check on failure together with the shrunk counterexample).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ackPacket, createController, type CongestionAlgorithm, type SentPacket } from "../../src/congestion/controller.js";

type Op =
  | { kind: "wait"; ms: number }
  | { kind: "send"; bytes: number; force: boolean }
  | { kind: "ack"; pick: number }
  | { kind: "lose"; pick: number }
  | { kind: "appLimited" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("wait" as const), ms: fc.double({ min: 0, max: 2000, noNaN: true }) }),
  fc.record({ kind: fc.constant("send" as const), bytes: fc.integer({ min: 1, max: 1200 }), force: fc.boolean() }),
  fc.record({ kind: fc.constant("ack" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("lose" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("appLimited" as const) }),
);

const algorithms: CongestionAlgorithm[] = ["default", "binary", "fixed", "none"];

describe("controller invariants under random operation sequences", () => {
  for (const algorithm of algorithms) {
    it(`${algorithm}: window/rate positive, pacing finite and sane, send gate consistent with the window`, () => {
      fc.assert(
        fc.property(fc.array(opArb, { maxLength: 300 }), fc.integer({ min: 0, max: 1e9 }), (ops, start) => {
          const cc = createController({ algorithm, default: { seed: 7 } });
          let now = start;
          let inFlight = 0;
          const outstanding: SentPacket[] = [];
          let misbehaved = false; // a forced send past the gate may legitimately push pacing out
          for (const op of ops) {
            switch (op.kind) {
              case "wait":
                now += op.ms;
                break;
              case "send": {
                const allowed = cc.canSend(inFlight, op.bytes) && cc.nextSendTime(now) <= now;
                if (allowed || op.force) {
                  if (!allowed) misbehaved = true;
                  const rec = cc.onSent(now, op.bytes, inFlight);
                  expect(rec.bytes).toBe(op.bytes);
                  expect(rec.sentTime).toBe(now);
                  expect(rec.inFlightAtSend).toBe(inFlight + op.bytes);
                  inFlight += op.bytes;
                  outstanding.push(rec);
                }
                break;
              }
              case "ack":
              case "lose": {
                if (outstanding.length === 0) break;
                const [rec] = outstanding.splice(op.pick % outstanding.length, 1);
                inFlight -= rec!.bytes;
                if (op.kind === "ack") {
                  ackPacket(cc, now, rec!, inFlight);
                } else {
                  cc.onLoss(now, rec!, inFlight);
                }
                break;
              }
              case "appLimited":
                cc.onAppLimited(now, inFlight);
                break;
            }
            // invariants
            const w = cc.windowBytes();
            // The send gate agrees with the reported window at the in-flight the caller holds
            // (an empty pipe may always send one datagram, whatever its size).
            for (const b of [1, 1200]) expect(cc.canSend(inFlight, b)).toBe(inFlight === 0 || inFlight + b <= w);
            expect(w).toBeGreaterThan(0);
            expect(Number.isNaN(w)).toBe(false);
            const rate = cc.pacingRateBytesPerSec();
            expect(rate).toBeGreaterThan(0);
            expect(Number.isNaN(rate)).toBe(false);
            const bw = cc.bandwidthEstimateBps();
            expect(Number.isFinite(bw) && bw >= 0).toBe(true);
            const next = cc.nextSendTime(now);
            expect(Number.isFinite(next)).toBe(true);
            // never a stall: at most one maximal packet at the slowest configured rate away
            if (!misbehaved) expect(next - now).toBeLessThanOrEqual(1000);
            // an empty pipe can always send (no deadlock)
            expect(cc.canSend(0, 1200)).toBe(true);
          }
        }),
        { seed: 424242, numRuns: 200 },
      );
    });
  }
});
