/**
 * Memory across connections (docs/SESSION.md, "Memory across connections"): what all of a server's connections hold received
 * stays under maxTotalReceiveBufferBytes. Attacking connections each try to hold their own
 * maximum (maxReceiveBufferBytes): large unreliable messages on a lossy path, every one missing
 * a fragment, so each stays a partial until evicted; reliable-ordered messages behind a lost
 * one, held for ordering. An honest connection keeps sending through it all. Seeded simulator
 * (the harness: bench/sim/receive-budget-sim.ts).
 */
import { describe, expect, it } from "vitest";
import { run } from "../../bench/sim/receive-budget-sim.js";

const KIB = 1024;

describe("what all connections hold received", () => {
  it("unreliable partials of many connections stay under the endpoint's bound, oldest evicted first; the honest connection keeps working", () => {
    const r = run(3, 16, { maxTotalReceiveBufferBytes: 1024 * KIB }, 2);
    const why = JSON.stringify({ ...r, counters: undefined });
    // Each could hold 256 KiB (4 MiB in all); together they are held to 1 MiB.
    expect(r.maxTotal, why).toBeLessThanOrEqual(r.limit);
    expect(r.maxTotal, why).toBeGreaterThan(r.limit / 2);
    expect(r.honestClosed, why).toBe(false);
    expect(r.honestReceived, why).toBe(r.honestSent);
    expect(r.honestSent, why).toBeGreaterThan(50);
    // Unreliable data is evicted, not a reason to end anyone.
    expect(r.counters.receiveBudgetCloses, why).toBe(0);
    // Without the shared bound, the same attack holds far more.
    const open = run(3, 16, {}, 2);
    expect(open.maxTotal).toBeGreaterThan(2 * r.limit);
  });

  it("reliable data held for ordering past the bound ends the connections that hold the most, not the honest one", () => {
    const r = run(4, 16, { maxTotalReceiveBufferBytes: 1024 * KIB }, 6);
    const why = JSON.stringify({ ...r, counters: undefined });
    expect(r.counters.receiveBudgetCloses, why).toBeGreaterThan(0);
    // Every attacker ended (by the shared bound or its own) heard why, in a DISCONNECT.
    expect(Object.keys(r.attackerCloses), why).toEqual(["receive-buffer-exceeded"]);
    expect(r.attackerCloses["receive-buffer-exceeded"], why).toBeGreaterThanOrEqual(r.counters.receiveBudgetCloses);
    expect(r.honestClosed, why).toBe(false);
    expect(r.honestReceived, why).toBe(r.honestSent);
    // Between receive batches it may pass the bound by at most one batch of datagrams.
    expect(r.maxTotal, why).toBeLessThanOrEqual(r.limit + 256 * 1500);
    // Without the shared bound the same attack holds more than that.
    const open = run(4, 16, {}, 6);
    expect(open.maxTotal, JSON.stringify({ ...open, counters: undefined })).toBeGreaterThan(r.limit + 256 * 1500);
  });

  it("a connection the shared bound ends is told why: its peer closes with receive-buffer-exceeded, not no-connection", () => {
    // Each connection's own bound above the shared one: every close is the shared bound's.
    // The server removes the connection at once; its DISCONNECT goes once, and again to each
    // later packet of the session (the attackers' uplinks lose 30 %, so some keep sending).
    const r = run(4, 16, { maxTotalReceiveBufferBytes: 1024 * KIB, maxReceiveBufferBytes: 2048 * KIB }, 6);
    const why = JSON.stringify({ ...r, counters: undefined });
    expect(r.counters.receiveBudgetCloses, why).toBeGreaterThan(4);
    expect(r.attackerCloses, why).toEqual({ "receive-buffer-exceeded": r.counters.receiveBudgetCloses });
    expect(r.honestClosed, why).toBe(false);
  });
});
