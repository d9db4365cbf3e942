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
    expect(m.shrinkConfirmed).toBe(false);
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
    // Started messages are resent only once the path is known not to carry the base.
    expect(m.shrinkConfirmed).toBe(true);
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
    expect(m.shrinkConfirmed).toBe(false);
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

describe("a path that shrinks below the base mid-run (simulated)", () => {
  it("every reliable kind delivers what was in flight and queued when the path shrank (seed 932)", () => {
    const pair = makePair(932);
    const [c] = connectPair(pair);
    const events: EndpointEvent[] = stream(pair, c, 20, 100, 10);
    expect(pair.client.stats(c).pathMtu).toBe(1452);
    // The route changes: datagrams over 1100 bytes vanish from here on. Large and small
    // messages on every reliable kind, sent while the path shrinks.
    pair.network.link(pair.clientAddress, pair.serverAddress, { mtu: 1100 });
    let ordered = 20;
    let unordered = 0;
    for (let round = 0; round < 60; round++) {
      pair.client.send(c, payload(ordered++, round % 3 === 0 ? 100 : 3000), { channel: 0 });
      pair.client.send(c, payload(unordered++, 2500), { channel: 3 });
      pair.client.send(c, payload(round, 2000), { channel: 4 });
      pair.client.send(c, payload(round, 1500), { channel: 5, key: round % 4 });
      pair.drive({ maxTimeMs: 50 });
      events.push(...pair.serverEvents());
    }
    pair.drive({ maxTimeMs: 5000 });
    events.push(...pair.serverEvents());
    const st = pair.client.stats(c);
    expect(st.pathMtu).toBeLessThanOrEqual(1100);
    expect(st.pathMtuBlackHoles).toBeGreaterThanOrEqual(2); // to the base, then below it
    // Reliable-ordered: every message exactly once.
    const got0 = delivered(events, 0);
    expect(got0.includes(-1)).toBe(false);
    expect([...got0].sort((a, b) => a - b)).toEqual(Array.from({ length: ordered }, (_, i) => i));
    // The large ones, all resent or cut anew, keep their order among themselves (the small
    // ones that fit keep their sequences and may come before a resent large one).
    const large = got0.filter((n) => n < 20 || (n - 20) % 3 !== 0);
    expect(large).toEqual([...large].sort((a, b) => a - b));
    // Reliable-unordered: every message exactly once.
    expect(delivered(events, 3).sort((a, b) => a - b)).toEqual(Array.from({ length: unordered }, (_, i) => i));
    // Reliable-sequenced: the newest arrives, nothing older after it.
    const got4 = delivered(events, 4);
    expect(got4.at(-1)).toBe(59);
    expect(got4).toEqual([...got4].sort((a, b) => a - b));
    // Latest-state: each key's newest value arrives last.
    const last = new Map<number, number>();
    for (const e of events) if (e.type === "message" && e.channel === 5) last.set(e.key!, checkPayload(e.data));
    expect([...last.entries()].sort((a, b) => a[0] - b[0])).toEqual([[0, 56], [1, 57], [2, 58], [3, 59]]);
    expect(st.queuedBytes).toBe(0);
  });
});
