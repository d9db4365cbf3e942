/**
 * LATE_ACK (PROTOCOL §3): the receiver's list of arrivals too far behind for a header's ack
 * bits, the frame it writes, and the sender's checks of what it reads: bad lengths, sequences
 * never sent and ranges over the per-datagram budget are refused (counted, nothing acked), a
 * repeat names nothing twice, and a packet carrying only acks is not ack-eliciting.
 */
import { describe, expect, it } from "vitest";
import { LATE_ACK_MAX_PER_DATAGRAM, LATE_ACK_MAX_RANGES, LATE_ACK_REPEATS, LateAckReader } from "../../src/session/late-ack.js";
import { LateArrivals } from "../../src/session/late-arrivals.js";
import { isAckOnly } from "../../src/wire/datagram.js";
import { SYSTEM_LATE_ACK } from "../../src/wire/system.js";
import type { Endpoint } from "../../src/session/endpoint.js";
import { connectPair, makePair, payload } from "./helpers.js";

/** The ranges of a written frame, as [first, last] pairs. */
function rangesOf(bytes: Uint8Array, at: number, length: number): [number, number][] {
  expect(bytes[at], "system channel").toBe(255);
  expect(bytes[at + 1], "kind Unreliable").toBe(0);
  const payloadLength = bytes[at + 4] | (bytes[at + 5] << 8);
  expect(6 + payloadLength).toBe(length);
  expect(bytes[at + 6]).toBe(SYSTEM_LATE_ACK);
  const out: [number, number][] = [];
  for (let p = at + 7; p < at + length; p += 3) {
    const first = bytes[p] | (bytes[p + 1] << 8);
    out.push([first, (first + bytes[p + 2]) & 0xffff]);
  }
  return out;
}

/** A LATE_ACK payload (type byte first) of the given [first, extra] ranges. */
function frame(ranges: [number, number][]): Uint8Array {
  const b = new Uint8Array(1 + 3 * ranges.length);
  b[0] = SYSTEM_LATE_ACK;
  ranges.forEach(([first, extra], i) => {
    b[1 + 3 * i] = first & 0xff;
    b[2 + 3 * i] = (first >> 8) & 0xff;
    b[3 + 3 * i] = extra;
  });
  return b;
}

describe("LateArrivals (receiver)", () => {
  it("writes consecutive arrivals as one range, newest first, across the sequence wrap", () => {
    const late = new LateArrivals();
    for (const s of [65534, 65535, 0, 1, 10, 40]) late.add(s);
    const bytes = new Uint8Array(200);
    const n = late.write(bytes, 3, 197, 100);
    expect(rangesOf(bytes, 3, n)).toEqual([[40, 40], [10, 10], [65534, 1]]);
  });

  it("repeats each arrival in LATE_ACK_REPEATS frames, then forgets it", () => {
    const late = new LateArrivals();
    late.add(7);
    const bytes = new Uint8Array(64);
    for (let i = 0; i < LATE_ACK_REPEATS; i++) {
      expect(late.pending).toBe(true);
      expect(rangesOf(bytes, 0, late.write(bytes, 0, 64, 50))).toEqual([[7, 7]]);
    }
    expect(late.pending).toBe(false);
    expect(late.write(bytes, 0, 64, 50)).toBe(0);
  });

  it("writes what the room holds and keeps the rest for the next packet", () => {
    const late = new LateArrivals();
    for (const s of [100, 102, 104]) late.add(s);
    const bytes = new Uint8Array(64);
    expect(late.write(bytes, 0, 9, 200)).toBe(0); // not even one range fits
    const n = late.write(bytes, 0, 13, 200); // two ranges
    expect(rangesOf(bytes, 0, n)).toEqual([[104, 104], [102, 102]]);
    // The unwritten one still has all its reports to go.
    for (let i = 0; i < LATE_ACK_REPEATS; i++) expect(rangesOf(bytes, 0, late.write(bytes, 0, 64, 200)).some(([f]) => f === 100)).toBe(true);
  });

  it("holds at most LATE_ACK_MAX_RANGES arrivals (the oldest report is given up)", () => {
    const late = new LateArrivals();
    for (let i = 0; i < 100; i++) late.add(i * 2);
    const bytes = new Uint8Array(400);
    const ranges = rangesOf(bytes, 0, late.write(bytes, 0, 400, 1000));
    expect(ranges.length).toBe(LATE_ACK_MAX_RANGES);
    expect(ranges[ranges.length - 1]).toEqual([2 * (100 - LATE_ACK_MAX_RANGES), 2 * (100 - LATE_ACK_MAX_RANGES)]);
  });
});

describe("LateAckReader (sender)", () => {
  it("names each sequence of valid ranges once, and not again when the report repeats", () => {
    const r = new LateAckReader();
    const f = frame([[90, 2], [95, 0]]);
    expect(r.read(f, 0, f.length, 120)).toBe(4);
    expect([...r.named.slice(0, 4)]).toEqual([90, 91, 92, 95]);
    r.startDatagram();
    expect(r.read(f, 0, f.length, 121)).toBe(0);
    expect(r.refused).toBe(0);
  });

  it("refuses bad lengths: no range, a partial range, more than LATE_ACK_MAX_RANGES", () => {
    const r = new LateAckReader();
    const full = frame(Array.from({ length: LATE_ACK_MAX_RANGES + 1 }, (_, i): [number, number] => [i * 2, 0]));
    for (const length of [1, 2, 3, 5, 6, full.length]) {
      r.startDatagram();
      expect(r.read(full, 0, length, 1000), `length ${length}`).toBe(-1);
    }
    expect(r.refused).toBe(6);
  });

  it("refuses a range reaching a sequence never sent, and everything before anything is sent", () => {
    const r = new LateAckReader();
    for (const [ranges, newest] of [
      [[[50, 0]], 49],
      [[[49, 1]], 49],
      [[[40, 20]], 55],
      [[[10, 0], [200, 0]], 100],
      [[[10, 0]], -1],
      [[[100, 0]], 50],
    ] as [[number, number][], number][]) {
      const f = frame(ranges);
      r.startDatagram();
      expect(r.read(f, 0, f.length, newest), JSON.stringify({ ranges, newest })).toBe(-1);
    }
    // A sequence sent is accepted, also across the wrap.
    const ok = frame([[65530, 10]]);
    r.startDatagram();
    expect(r.read(ok, 0, ok.length, 5)).toBe(11);
  });

  it("bounds the work per datagram: huge ranges beyond LATE_ACK_MAX_PER_DATAGRAM are refused whole", () => {
    const r = new LateAckReader();
    // One frame of 32 ranges of 256: 8192 sequences, far over the budget.
    const huge = frame(Array.from({ length: LATE_ACK_MAX_RANGES }, (): [number, number] => [1000, 255]));
    expect(r.read(huge, 0, huge.length, 5000)).toBe(-1);
    // Within one datagram, frames share the budget: 256 in the first, nothing more after it.
    const one = frame([[2000, 255]]);
    r.startDatagram();
    expect(r.read(one, 0, one.length, 5000)).toBe(LATE_ACK_MAX_PER_DATAGRAM);
    const more = frame([[3000, 0]]);
    expect(r.read(more, 0, more.length, 5000)).toBe(-1);
    // The next datagram has its own.
    r.startDatagram();
    expect(r.read(more, 0, more.length, 5000)).toBe(1);
    expect(r.refused).toBe(2);
  });
});

describe("isAckOnly", () => {
  // A DATA datagram: 9 header bytes, frames, 4 CRC bytes (not checked here).
  const datagram = (...frames: Uint8Array[]): Uint8Array => {
    const body = frames.reduce((n, f) => n + f.length, 0);
    const d = new Uint8Array(9 + body + 4);
    let p = 9;
    for (const f of frames) {
      d.set(f, p);
      p += f.length;
    }
    return d;
  };
  const system = (payloadBytes: Uint8Array): Uint8Array => {
    const f = new Uint8Array(6 + payloadBytes.length);
    f[0] = 255;
    f[4] = payloadBytes.length & 0xff;
    f[5] = payloadBytes.length >> 8;
    f.set(payloadBytes, 6);
    return f;
  };
  const lateAck = system(frame([[5, 0]]));
  const ackDelay = system(new Uint8Array([3, 9, 0, 10, 0]));
  const clock = system(new Uint8Array([1, 0, 0, 0, 0]));
  const data = new Uint8Array([0, 2, 0, 0, 1, 0, 42]); // channel 0, reliable-unordered, 1 byte

  it("is true for a LATE_ACK alone or followed by one ACK_DELAY, false with anything else", () => {
    const cases: [Uint8Array, boolean][] = [
      [datagram(lateAck), true],
      [datagram(lateAck, ackDelay), true],
      [datagram(lateAck, data), false],
      [datagram(lateAck, clock), false],
      [datagram(ackDelay, lateAck), false],
      [datagram(data), false],
      [datagram(clock), false],
      [datagram(), false],
    ];
    for (const [d, want] of cases) expect(isAckOnly(d, 0, d.length)).toBe(want);
    // At an offset in a bigger buffer, as in the engine's arena.
    const d = datagram(lateAck, ackDelay);
    const arena = new Uint8Array(d.length + 100);
    arena.set(d, 37);
    expect(isAckOnly(arena, 37, d.length)).toBe(true);
  });
});

interface ConnInternals {
  onSystemMessage(now: number, arena: Uint8Array, offset: number, length: number): void;
  delivery: { inFlight: number; newestDispatched: number; oldestRecordedSequence(): number };
}
function connectionOf(ep: Endpoint, id: number): ConnInternals {
  return (ep as unknown as { byId: Map<number, ConnInternals> }).byId.get(id)!;
}

describe("LATE_ACK from a hostile peer (session)", () => {
  it("malformed frames are counted invalid and acknowledge nothing; a valid one acknowledges", () => {
    const seed = 2701;
    // Nothing reaches the server, so what the client sends stays in flight.
    const pair = makePair(seed, { pair: { link: { latencyMs: 10 } } });
    const [c] = connectPair(pair);
    pair.network.link(pair.clientAddress, pair.serverAddress, { latencyMs: 10, lossRate: 1 });
    for (let i = 0; i < 5; i++) pair.client.send(c, payload(i, 100), { channel: 2 });
    pair.drive({ maxTimeMs: 5 });
    const conn = connectionOf(pair.client, c);
    const inFlight = conn.delivery.inFlight;
    expect(inFlight, `seed ${seed}`).toBeGreaterThan(0);
    const oldest = conn.delivery.oldestRecordedSequence();
    const newest = conn.delivery.newestDispatched;
    const invalid = pair.client.stats(c).invalid;
    const bad = [
      frame([]), // no range
      frame([[oldest, 0]]).slice(0, 3), // partial range
      frame([[(newest + 1) & 0xffff, 0]]), // never sent
      frame([[oldest, 255]]), // reaches past the newest sent
      frame(Array.from({ length: LATE_ACK_MAX_RANGES }, (): [number, number] => [(newest - 300) & 0xffff, 255])), // over the budget
    ];
    for (const f of bad) conn.onSystemMessage(pair.now, f, 0, f.length);
    expect(pair.client.stats(c).invalid - invalid, `seed ${seed}`).toBe(bad.length);
    expect(conn.delivery.inFlight, `seed ${seed}`).toBe(inFlight);
    // A valid report of the oldest packet in flight acknowledges it, like a header's ack bit.
    const ok = frame([[oldest, 0]]);
    conn.onSystemMessage(pair.now, ok, 0, ok.length);
    expect(conn.delivery.inFlight, `seed ${seed}`).toBe(inFlight - 1);
    expect(pair.client.stats(c).invalid - invalid, `seed ${seed}`).toBe(bad.length);
  });
});
