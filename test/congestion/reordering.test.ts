/**
 * ReorderingWindow: RFC 8985 §6.2 step 4's reo_wnd rules (grow once per round on a spurious
 * loss, min(mult x min RTT / 4, SRTT), back to mult 1 after 16 recoveries without one), with
 * RFC 9002's RTT / 8 as the window before any reordering and as its floor.
 */
import { describe, expect, it } from "vitest";
import { REORDER_PERSIST_RECOVERIES, ReorderingWindow } from "../../src/congestion/reordering.js";

const MIN = 40;
const SRTT = 60;

describe("ReorderingWindow", () => {
  it("is RFC 9002's RTT / 8 until a spurious loss", () => {
    const w = new ReorderingWindow();
    expect(w.windowMs(MIN, SRTT, 64)).toBe(8);
    w.onLoss(10);
    expect(w.onAcked(10)).toBe(false);
    expect(w.windowMs(MIN, SRTT, 64)).toBe(8);
  });

  it("grows by min RTT / 4 once per round, capped at SRTT", () => {
    const w = new ReorderingWindow();
    expect(w.onSpuriousLoss(100, MIN, SRTT)).toBe(true);
    expect(w.windowMs(MIN, SRTT, SRTT)).toBe(10); // 1 x 40 / 4
    // Same round (nothing sent at or after 100 acknowledged yet): no growth.
    expect(w.onSpuriousLoss(105, MIN, SRTT)).toBe(false);
    w.onAcked(99);
    expect(w.onSpuriousLoss(106, MIN, SRTT)).toBe(false);
    expect(w.multiplier).toBe(1);
    // The round ends when packet 100 (or a later one) is acknowledged.
    w.onAcked(100);
    expect(w.onSpuriousLoss(120, MIN, SRTT)).toBe(true);
    expect(w.windowMs(MIN, SRTT, SRTT)).toBe(20);
    for (let seq = 121; seq < 200; seq++) {
      w.onAcked(seq - 1);
      w.onSpuriousLoss(seq, MIN, SRTT);
    }
    // mult stops where mult x min RTT / 4 reaches SRTT (6 x 10 = 60), and the window is SRTT.
    expect(w.multiplier).toBe(6);
    expect(w.windowMs(MIN, SRTT, SRTT)).toBe(SRTT);
  });

  it("never goes below RTT / 8", () => {
    const w = new ReorderingWindow();
    w.onSpuriousLoss(1, 4, 200);
    expect(w.windowMs(4, 200, 200)).toBe(25);
  });

  it("shrinks to mult 1 after 16 recoveries without a spurious loss, not after recoveries with one", () => {
    const w = new ReorderingWindow();
    w.onSpuriousLoss(10, MIN, SRTT);
    w.onAcked(10);
    let next = 20;
    // Recoveries with a spurious loss in them keep the window.
    for (let i = 0; i < 40; i++) {
      w.onLoss(next);
      w.onSpuriousLoss(next, MIN, SRTT);
      w.onAcked(next);
      next += 5;
    }
    expect(w.persistence).toBe(REORDER_PERSIST_RECOVERIES);
    const mult = w.multiplier;
    expect(mult).toBeGreaterThan(1);
    for (let i = 1; i <= REORDER_PERSIST_RECOVERIES; i++) {
      w.onLoss(next);
      // Losses inside a recovery (before packet `next` is acked) are the same recovery.
      w.onLoss(next + 2);
      expect(w.onAcked(next - 1)).toBe(false);
      const reset = w.onAcked(next + 1);
      expect(reset).toBe(i === REORDER_PERSIST_RECOVERIES);
      next += 5;
    }
    // Back to mult 1 (RFC 8985), not to no window: the path has been seen to reorder.
    expect(w.multiplier).toBe(1);
    expect(w.windowMs(MIN, SRTT, 64)).toBe(10);
    // And it stays there, however many more quiet recoveries follow.
    for (let i = 0; i < 40; i++) {
      w.onLoss(next);
      expect(w.onAcked(next)).toBe(false);
      next += 5;
    }
    expect(w.multiplier).toBe(1);
  });

  it("compares sequences across the 16-bit wrap", () => {
    const w = new ReorderingWindow();
    w.onSpuriousLoss(0xfffe, MIN, SRTT);
    w.onAcked(0xfffd);
    expect(w.onSpuriousLoss(0xffff, MIN, SRTT)).toBe(false);
    w.onAcked(3); // 3 is after 0xfffe once wrapped
    expect(w.onSpuriousLoss(5, MIN, SRTT)).toBe(true);
    expect(w.multiplier).toBe(2);
  });
});
