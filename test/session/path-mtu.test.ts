/**
 * Path MTU discovery (src/session/path-mtu.ts): the search on its own, then over the simulated
 * network against a link that drops datagrams above its MTU, and a path that shrinks mid-run.
 */
import { describe, expect, it } from "vitest";
import { BLACK_HOLE_BURSTS, MAX_BLACK_HOLE_BURSTS, PROBE_ATTEMPTS, PathMtu, RAISE_INTERVAL_MS, SEARCH_STEP, burstsFor } from "../../src/session/path-mtu.js";
import { Endpoint } from "../../src/session/endpoint.js";
import { PROTOCOL_ID, checkPayload, connectPair, makePair, payload } from "./helpers.js";

/** Run the search against a path that carries `limit` bytes; returns the sizes probed. */
function search(m: PathMtu, limit: number, now = 0): number[] {
  const probed: number[] = [];
  for (let seq = 0; seq < 100; seq++) {
    const size = m.probeDue(now);
    if (size === 0) break;
    probed.push(size);
    m.onProbeSent(seq, size);
    if (size <= limit) m.onProbeAcked(seq, now);
    else m.onProbeLost(seq, now);
  }
  return probed;
}

describe("PathMtu search", () => {
  it("takes the maximum at once when the path carries it", () => {
    const m = new PathMtu(1200, 1452);
    expect(search(m, 1500)).toEqual([1452]);
    expect(m.current).toBe(1452);
    expect(m.probeDue(0)).toBe(0);
  });

  it("bisects below a size lost PROBE_ATTEMPTS times, to within SEARCH_STEP of the path's MTU", () => {
    for (const limit of [1200, 1240, 1300, 1399, 1451]) {
      const m = new PathMtu(1200, 1452);
      const probed = search(m, limit);
      expect(m.current, `limit ${limit}`).toBeLessThanOrEqual(limit);
      expect(limit - m.current, `limit ${limit}: probed ${probed}`).toBeLessThanOrEqual(SEARCH_STEP);
      // The maximum was tried PROBE_ATTEMPTS times before any smaller size.
      expect(probed.slice(0, PROBE_ATTEMPTS)).toEqual(Array(PROBE_ATTEMPTS).fill(1452));
      expect(probed.length, `limit ${limit}`).toBeLessThan(40);
    }
  });

  it("a single lost probe (random loss) does not end the search at that size", () => {
    const m = new PathMtu(1200, 1452);
    expect(m.probeDue(0)).toBe(1452);
    m.onProbeSent(1, 1452);
    m.onProbeLost(1, 0);
    expect(m.probeDue(0)).toBe(1452);
    m.onProbeSent(2, 1452);
    m.onProbeAcked(2, 0);
    expect(m.current).toBe(1452);
  });

  it("a black hole drops back to the base, and the search resumes below the size that failed", () => {
    const m = new PathMtu(1200, 1452);
    search(m, 1500);
    expect(m.current).toBe(1452);
    // (Second arguments are send times.) Small packets lost do not count, nor large ones found
    // lost at the same time (one burst).
    for (let i = 0; i < 10; i++) expect(m.onLost(1000, 100 + i, i)).toBe(false);
    for (let i = 0; i < 20; i++) expect(m.onLost(1400, 200 + i, 50)).toBe(false);
    expect(m.onLost(1400, 230, 60)).toBe(false); // a second burst
    m.onAcked(1400, 240); // a large packet got through: the count starts over
    // Large packets sent before the one acknowledged: random loss, however many bursts.
    for (let i = 0; i < 2 * BLACK_HOLE_BURSTS; i++) expect(m.onLost(1400, 231 + i, 70 + i)).toBe(false);
    // Sent after it, lost in BLACK_HOLE_BURSTS bursts with no large ack between: a black hole.
    for (let i = 0; i < BLACK_HOLE_BURSTS - 1; i++) expect(m.onLost(1400, 241 + i, 90 + i)).toBe(false);
    m.onProbeSent(300, 1452); // in flight when the black hole is found
    expect(m.onLost(1400, 250, 100)).toBe(true);
    expect(m.current).toBe(1200);
    expect(m.blackHoles).toBe(1);
    // A probe sent before the black hole and acknowledged after it does not undo it.
    m.onProbeAcked(300, 101);
    expect(m.current).toBe(1200);
    // No probe until something is acknowledged (an outage looks like a black hole too).
    expect(m.probeDue(500)).toBe(0);
    m.onPathAlive(501);
    // The size that failed is probed again first (random loss can look like a black hole);
    // lost PROBE_ATTEMPTS times, the search bisects below it.
    const probed = search(m, 1300, 501);
    expect(probed.slice(0, PROBE_ATTEMPTS)).toEqual(Array(PROBE_ATTEMPTS).fill(1452));
    expect(Math.max(...probed.slice(PROBE_ATTEMPTS))).toBeLessThan(1452);
    expect(1300 - m.current).toBeLessThanOrEqual(SEARCH_STEP);
  });

  it("a black hole that was random loss: the re-check probe gets through and the size comes back", () => {
    const m = new PathMtu(1200, 1452);
    search(m, 1500);
    for (let i = 0; i < BLACK_HOLE_BURSTS; i++) m.onLost(1452, 10 + i, 20 + i);
    expect(m.current).toBe(1200);
    m.onPathAlive(30);
    expect(search(m, 1500, 30)).toEqual([1452]);
    expect(m.current).toBe(1452);
    expect(m.probeDue(31)).toBe(0);
  });

  it("a false alarm in the middle of a search: the re-check restores the search, which goes on", () => {
    const m = new PathMtu(1200, 1452);
    for (let seq = 0; seq < PROBE_ATTEMPTS; seq++) {
      m.onProbeSent(seq, m.probeDue(0));
      m.onProbeLost(seq, 0);
    }
    expect(m.probeDue(0)).toBe(1326);
    m.onProbeSent(10, 1326);
    m.onProbeAcked(10, 0);
    for (let i = 0; i < BLACK_HOLE_BURSTS; i++) m.onLost(1300, 1 + i, 10 + i);
    expect(m.current).toBe(1200);
    m.onPathAlive(20);
    expect(m.probeDue(20)).toBe(1326);
    m.onProbeSent(11, 1326);
    m.onProbeAcked(11, 20);
    expect(m.current).toBe(1326);
    expect(m.probeDue(20)).toBe(1389); // not "search done"
  });

  it("a large packet acknowledged long ago does not hide a black hole (send times, not 16-bit sequences)", () => {
    const m = new PathMtu(1200, 1452);
    search(m, 1500);
    m.onAcked(1452, 20);
    for (let i = 0; i < BLACK_HOLE_BURSTS - 1; i++) expect(m.onLost(1452, 600_000 + i, 600_100 + i)).toBe(false);
    expect(m.onLost(1452, 600_010, 600_200)).toBe(true);
  });

  it("on a lossy path a black hole needs a longer run of bursts: random runs that long are rarer than 1 in 1000", () => {
    expect([0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.9, 1].map(burstsFor)).toEqual([3, 3, 3, 5, 6, 8, 8, MAX_BLACK_HOLE_BURSTS]);
    const m = new PathMtu(1200, 1452);
    search(m, 1500);
    expect(m.current).toBe(1452);
    // At 30 % loss (when the run began) five bursts are not enough, the sixth is.
    for (let burst = 1; burst <= 5; burst++) expect(m.onLost(1452, burst, 100 + burst, 0.3)).toBe(false);
    expect(m.onLost(1452, 6, 106, 0.3)).toBe(true);
    expect(m.current).toBe(1200);
    expect(m.blackHoles).toBe(1);
  });

  it("a finished search looks again after RAISE_INTERVAL_MS", () => {
    const m = new PathMtu(1200, 1452);
    search(m, 1300);
    const found = m.current;
    expect(m.probeDue(1)).toBe(0);
    expect(m.probeDue(RAISE_INTERVAL_MS - 1)).toBe(0);
    expect(m.probeDue(RAISE_INTERVAL_MS + 1)).toBe(1452); // the path may have grown
    expect(m.current).toBe(found);
  });

  it("maxMtu is checked at the API: an integer in mtu..1500, with a typed error", () => {
    const make = (o: { mtu?: number; maxMtu?: number }) => () => new Endpoint({ protocolId: PROTOCOL_ID, engine: "ts", ...o });
    const configError = expect.objectContaining({ code: "ERR_SESSION_CONFIG" });
    expect(make({ maxMtu: 1199 })).toThrow(configError); // below the default mtu
    expect(make({ mtu: 1300, maxMtu: 1250 })).toThrow(configError);
    expect(make({ maxMtu: 1501 })).toThrow(configError); // a receiver accepts at most 1500
    expect(make({ maxMtu: 1400.5 })).toThrow(configError);
    expect(make({ maxMtu: 1500 })).not.toThrow();
    expect(make({ mtu: 1480 })).not.toThrow(); // the default maxMtu follows a larger mtu
  });

  it("is off when maxMtu is the base", () => {
    const m = new PathMtu(1200, 1200);
    expect(m.probeDue(0)).toBe(0);
  });
});

/** A reliable-ordered stream of `count` messages of `size` bytes, one per 10 ms. */
function stream(pair: ReturnType<typeof makePair>, c: number, count: number, size: number, from = 0): void {
  for (let i = from; i < from + count; i++) {
    pair.client.send(c, payload(i, size), { channel: 0 });
    pair.drive({ maxTimeMs: 10 });
  }
}

/** Message numbers the server received, in order of delivery. */
function serverReceived(pair: ReturnType<typeof makePair>): number[] {
  return pair.serverEvents().flatMap((e) => (e.type === "message" ? [checkPayload(e.data)] : []));
}

/**
 * 30 bursts of 40 messages of 100 B, 200 ms apart, then 3 s to settle: bursts that fill large
 * datagrams, so under random loss many large packets are lost. Returns the client connection's
 * PathMtu.
 */
function lossyBursts(pair: ReturnType<typeof makePair>, c: number): { blackHoles: number; current: number } {
  for (let round = 0; round < 30; round++) {
    for (let i = 0; i < 40; i++) pair.client.send(c, payload(round * 40 + i, 100), { channel: 0 });
    pair.drive({ maxTimeMs: 200 });
  }
  pair.drive({ maxTimeMs: 3000 });
  return (pair.client as unknown as { byId: Map<number, { pathMtu: { blackHoles: number; current: number } }> }).byId.get(c)!.pathMtu;
}

describe("path MTU discovery over the simulated network", () => {
  for (const [limit, seed] of [[undefined, 901], [1300, 902], [1400, 903]] as const) {
    it(`finds the path's MTU (link mtu ${limit ?? "none"}, seed ${seed}), and small messages fill the larger datagrams`, () => {
      const pair = makePair(seed, { pair: { link: limit === undefined ? {} : { mtu: limit } } });
      const [c] = connectPair(pair);
      stream(pair, c, 60, 100);
      const mtu = pair.client.stats(c).pathMtu;
      const expected = Math.min(limit ?? 1452, 1452);
      expect(mtu, `seed ${seed}`).toBeLessThanOrEqual(expected);
      expect(expected - mtu, `seed ${seed}`).toBeLessThanOrEqual(SEARCH_STEP);
      // A burst of 100 B messages now goes in datagrams up to the discovered size.
      for (let i = 60; i < 460; i++) pair.client.send(c, payload(i, 100), { channel: 0 });
      let largest = 0;
      for (let t = pair.client.pollTransmit(pair.now); t !== undefined; t = pair.client.pollTransmit(pair.now)) {
        largest = Math.max(largest, t.bytes.length);
        pair.server.handleDatagram(pair.now, pair.clientAddress, t.bytes.slice());
      }
      expect(largest, `seed ${seed}`).toBeGreaterThan(mtu - 110);
      expect(largest, `seed ${seed}`).toBeLessThanOrEqual(mtu);
      pair.drive({ maxTimeMs: 2000 });
      expect(serverReceived(pair), `seed ${seed}`).toEqual(Array.from({ length: 460 }, (_, i) => i));
      const packets = pair.client.stats(c).packets;
      expect(packets.dispatched, `seed ${seed}`).toBe(packets.delivered + packets.dropped + packets.inFlight);
    });
  }

  for (const [loss, seed] of [[0.2, 906], [0.3, 907]] as const) {
    it(`random loss (${loss * 100}% each way) is not a black hole (seed ${seed})`, () => {
      const pair = makePair(seed, { pair: { link: { lossRate: loss } } });
      const [c] = connectPair(pair);
      const m = lossyBursts(pair, c);
      expect(m.blackHoles, `seed ${seed}`).toBeLessThan(10);
      // Heavy random loss may look like a black hole now and then; the re-check probe then
      // takes the size back, so it does not ratchet down (the first version ended at 1234 on
      // seed 907). A re-check probe lost three times in a row at 30 % loss costs a few steps.
      expect(m.current, `seed ${seed}: ${m.blackHoles} false black holes`).toBeGreaterThan(1400);
      expect(serverReceived(pair), `seed ${seed}`).toEqual(Array.from({ length: 1200 }, (_, i) => i));
    });
  }

  it("false black holes at 30 % random loss, seeds 1000-1019: at most 12 (40 with a fixed run of 3 bursts)", () => {
    let runs = 0;
    let falseAlarms = 0;
    for (let seed = 1000; seed < 1020; seed++) {
      const pair = makePair(seed, { pair: { link: { lossRate: 0.3 } } });
      let c: number;
      try {
        [c] = connectPair(pair);
      } catch {
        continue; // a handshake that 30 % loss kept from finishing within its timeout
      }
      runs++;
      falseAlarms += lossyBursts(pair, c).blackHoles;
      expect(serverReceived(pair), `seed ${seed}`).toEqual(Array.from({ length: 1200 }, (_, i) => i));
    }
    expect(runs).toBeGreaterThanOrEqual(15);
    expect(falseAlarms, `${falseAlarms} false black holes in ${runs} runs`).toBeLessThanOrEqual(12);
  });

  it("a path that shrinks mid-run (a black hole) falls back to the base MTU and loses nothing (seed 904)", () => {
    const seed = 904;
    const pair = makePair(seed);
    const [c] = connectPair(pair);
    stream(pair, c, 40, 100);
    expect(pair.client.stats(c).pathMtu, `seed ${seed}`).toBe(1452);
    // The route changes: datagrams over 1250 bytes vanish from here on.
    pair.network.link(pair.clientAddress, pair.serverAddress, { mtu: 1250 });
    stream(pair, c, 300, 100, 40);
    for (let i = 340; i < 740; i++) pair.client.send(c, payload(i, 100), { channel: 0 });
    pair.drive({ maxTimeMs: 5000 });
    const st = pair.client.stats(c);
    expect(st.pathMtu, `seed ${seed}`).toBeLessThanOrEqual(1250);
    expect(serverReceived(pair), `seed ${seed}`).toEqual(Array.from({ length: 740 }, (_, i) => i));
  });

  it("maxMtu equal to mtu turns discovery off: no datagram over the base (seed 905)", () => {
    const seed = 905;
    const pair = makePair(seed, { client: { maxMtu: 1200 }, server: { maxMtu: 1200 } });
    const [c] = connectPair(pair);
    stream(pair, c, 30, 100);
    for (let i = 30; i < 330; i++) pair.client.send(c, payload(i, 100), { channel: 0 });
    let largest = 0;
    for (let t = pair.client.pollTransmit(pair.now); t !== undefined; t = pair.client.pollTransmit(pair.now)) largest = Math.max(largest, t.bytes.length);
    expect(largest, `seed ${seed}`).toBeLessThanOrEqual(1200);
    expect(largest, `seed ${seed}`).toBeGreaterThan(1100);
    expect(pair.client.stats(c).pathMtu, `seed ${seed}`).toBe(1200);
  });
});
