/**
 * A path that does not carry the base datagram size (src/session/path-mtu.ts, "Below the
 * base"): full-size datagrams vanish while small ones get through. The connection falls below
 * the base, re-cuts and resends what no longer fits, and delivers everything.
 */
import { describe, expect, it } from "vitest";
import { FLOOR_MTU, PathMtu, SEARCH_STEP } from "../../src/session/path-mtu.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { checkPayload, connectPair, makePair, payload } from "./helpers.js";

type Pair = ReturnType<typeof makePair>;

/** Messages the server delivered on `channel`, as payload indices in delivery order. */
function delivered(events: EndpointEvent[], channel = 0): number[] {
  return events.flatMap((e) => (e.type === "message" && e.channel === channel ? [checkPayload(e.data)] : []));
}

/** `count` messages of `size` bytes on `channel`, one every `everyMs`; returns the server's events. */
function stream(pair: Pair, c: number, count: number, size: number, everyMs: number, channel = 0, from = 0): EndpointEvent[] {
  const events: EndpointEvent[] = [];
  for (let i = from; i < from + count; i++) {
    pair.client.send(c, payload(i, size), { channel });
    pair.drive({ maxTimeMs: everyMs });
    events.push(...pair.serverEvents());
  }
  return events;
}

describe("PathMtu below the base", () => {
  it("full-size packets lost in a run of bursts while smaller ones are acknowledged fall to the floor", () => {
    const m = new PathMtu(1200, 1452);
    expect(m.largeFrom).toBe(FLOOR_MTU);
    // Small packets (<= the floor) never count; full ones found lost at one time are one burst.
    for (let i = 0; i < 10; i++) expect(m.onLost(500, i, i)).toBe(false);
    expect(m.onLost(1200, 100, 100)).toBe(false);
    expect(m.onLost(1200, 101, 100)).toBe(false);
    m.onAcked(900, 102); // smaller ones get through: no reset
    expect(m.onLost(1200, 103, 200)).toBe(false);
    m.onAcked(1200, 104); // a full one got through: the run starts over
    expect(m.onLost(1200, 103, 300)).toBe(false); // and one sent before it was random loss
    expect(m.onLost(1200, 110, 400)).toBe(false);
    expect(m.onLost(1200, 111, 500)).toBe(false);
    expect(m.onLost(1200, 112, 600)).toBe(true);
    expect(m.current).toBe(FLOOR_MTU);
    expect(m.belowBase).toBe(true);
    expect(m.blackHolesBelowBase).toBe(1);
    // No probe until something is acknowledged; then the size that failed first, then bisection.
    expect(m.probeDue(700)).toBe(0);
    m.onPathAlive(700);
    const probed: number[] = [];
    for (let seq = 0; seq < 60; seq++) {
      const size = m.probeDue(700);
      if (size === 0) break;
      probed.push(size);
      m.onProbeSent(seq, size);
      if (size <= 1100) m.onProbeAcked(seq, 700);
      else m.onProbeLost(seq, 700);
    }
    expect(probed.slice(0, 3)).toEqual([1200, 1200, 1200]);
    expect(m.current).toBeLessThanOrEqual(1100);
    expect(1100 - m.current).toBeLessThanOrEqual(SEARCH_STEP);
    expect(m.belowBase).toBe(true);
  });

  it("a false alarm below the base: the re-check of the size that failed takes it back", () => {
    const m = new PathMtu(1200, 1452);
    for (let i = 0; i < 3; i++) m.onLost(1200, 10 + i, 100 * (i + 1));
    expect(m.current).toBe(FLOOR_MTU);
    m.onPathAlive(400);
    expect(m.probeDue(400)).toBe(1200);
    m.onProbeSent(1, 1200);
    m.onProbeAcked(1, 400);
    expect(m.current).toBe(1200);
    expect(m.belowBase).toBe(false);
  });

  it("a loss smaller than a size class acknowledged since is random loss", () => {
    const m = new PathMtu(1200, 1452);
    m.onAcked(1150, 50);
    for (let i = 0; i < 6; i++) expect(m.onLost(1100, 40 - i, 100 * (i + 1))).toBe(false);
    expect(m.current).toBe(1200);
  });
});

describe("a path that drops datagrams over 1100 bytes (simulated)", () => {
  it("300 messages of 3000 B on a reliable-ordered channel all arrive, in order (seed 931)", () => {
    const pair = makePair(931, { pair: { link: { mtu: 1100 } } });
    const [c] = connectPair(pair);
    const events = stream(pair, c, 300, 3000, 66);
    pair.drive({ maxTimeMs: 3000 });
    events.push(...pair.serverEvents());
    expect(delivered(events)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    const st = pair.client.stats(c);
    expect(st.pathMtu).toBeLessThanOrEqual(1100);
    expect(st.pathMtu).toBeGreaterThanOrEqual(1100 - SEARCH_STEP);
    expect(st.pathMtuBlackHoles).toBeGreaterThanOrEqual(1);
    const notices = pair.network.events(pair.clientAddress).filter((e) => e.type === "pathMtu");
    expect(notices.length).toBeGreaterThanOrEqual(1);
    expect(notices[0]).toMatchObject({ type: "pathMtu", connection: c, pathMtu: FLOOR_MTU, belowBase: true });
    expect(st.packets.dispatched).toBe(st.packets.delivered + st.packets.dropped + st.packets.inFlight);
  });
});
