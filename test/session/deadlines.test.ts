/**
 * Per-message deadlines (SendOptions.deadlineMs): a reliable message not delivered in time is
 * given up; its receipt reports false; on a reliable-ordered channel a GAP frame tells the
 * receiver to skip it, so later messages are not held behind it. Whatever is given up, what is
 * delivered is delivered once and, on ordered channels, in order.
 */
import { describe, expect, it } from "vitest";
import type { ChannelConfig, EndpointConfig } from "../../src/session/types.js";
import { InvalidDeadlineError } from "../../src/channels/errors.js";
import { checkPayload, connectPair, makePair, payload } from "./helpers.js";

const CHANNELS: ChannelConfig[] = [
  { mode: "reliable-ordered" },
  { mode: "reliable-unordered" },
  { mode: "latest-state" },
  { mode: "unreliable" },
];

interface Outcome {
  /** Send index -> arrival time minus send time, for each message delivered. */
  latency: Map<number, number>;
  /** Delivered indexes in arrival order. */
  order: number[];
  receipts: Map<number, boolean>;
  sent: number;
  missed: number;
  invalid: number;
  duplicates: number;
  bufferedAtEnd: number;
  queuedAtEnd: number;
}

/**
 * A 30 Hz stream of `size`-byte messages from client to server on `channel`, each with
 * `deadlineMs` (or none), over `link`, for `count` messages, then 5 s to settle.
 */
function stream(
  seed: number,
  opts: { channel: number; size: number; count: number; deadlineMs?: number; link: object; engine?: "ts" | "wasm"; client?: Partial<EndpointConfig> },
): Outcome {
  const engine = opts.engine ?? "ts";
  const client = { engine, channels: CHANNELS, ...opts.client };
  const pair = makePair(seed, { server: { engine, channels: CHANNELS }, client, pair: { link: opts.link } });
  const [c, s] = connectPair(pair);
  const sentAt = new Map<number, number>();
  const receiptOf = new Map<number, number>();
  const out: Outcome = { latency: new Map(), order: [], receipts: new Map(), sent: 0, missed: 0, invalid: 0, duplicates: 0, bufferedAtEnd: 0, queuedAtEnd: 0 };
  const collect = (): void => {
    for (const ev of pair.serverEvents()) {
      if (ev.type !== "message" || ev.channel !== opts.channel) continue;
      const index = checkPayload(ev.data);
      out.order.push(index);
      out.latency.set(index, pair.now - (sentAt.get(index) as number));
    }
    for (const ev of pair.clientEvents()) {
      if (ev.type !== "receipt") continue;
      for (const [index, id] of receiptOf) if (id === ev.receipt) out.receipts.set(index, ev.delivered);
    }
  };
  const runUntil = (t: number): void => {
    for (let steps = 0; steps < 200_000; steps++) {
      const next = pair.network.nextEventTime();
      if (next === undefined || next > t) break;
      pair.step();
      collect();
    }
    pair.drive({ until: t, maxSteps: 0 });
    collect();
  };
  const start = pair.now;
  for (let i = 0; i < opts.count; i++) {
    runUntil(start + (i * 1000) / 30);
    sentAt.set(i, pair.now);
    const receipt = pair.client.send(c, payload(i, opts.size), { channel: opts.channel, receipt: true, deadlineMs: opts.deadlineMs });
    receiptOf.set(i, receipt);
    out.sent++;
    pair.network.flush();
  }
  runUntil(pair.now + 5000);
  const cs = pair.client.stats(c);
  const ss = pair.server.stats(s);
  out.missed = cs.deadlinesMissed;
  out.invalid = ss.invalid;
  out.duplicates = ss.duplicates;
  out.queuedAtEnd = cs.queuedBytes;
  out.bufferedAtEnd = receiveBuffered(pair, s);
  return out;
}

/** The server connection's held receive bytes (reassembly and reorder buffers). */
function receiveBuffered(pair: ReturnType<typeof makePair>, s: number): number {
  const conn = (pair.server as unknown as { byId?: Map<number, { channels: { receiveBufferedBytes(): number } }> }).byId?.get(s);
  return conn?.channels.receiveBufferedBytes() ?? 0;
}

function checkPromises(r: Outcome, ordered: boolean): void {
  // Every receipt settled, and each message delivered at most once.
  expect(r.receipts.size).toBe(r.sent);
  expect(new Set(r.order).size).toBe(r.order.length);
  // A true receipt means delivered. (A false one may still have arrived: given up in flight.)
  for (const [index, delivered] of r.receipts) if (delivered) expect(r.latency.has(index), `message ${index}`).toBe(true);
  if (ordered) for (let i = 1; i < r.order.length; i++) expect(r.order[i]).toBeGreaterThan(r.order[i - 1]);
  expect(r.invalid).toBe(0);
  expect(r.queuedAtEnd).toBe(0);
  expect(r.bufferedAtEnd).toBe(0);
}

const p = (values: number[], q: number): number => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))];

describe("per-message deadlines", () => {
  // 30 Hz x 600 B is 144 kbit/s from a sender held to 96 kbit/s (a fixed-rate controller): without
  // deadlines its queue, and every message's wait, grows for as long as the stream lasts.
  const held = { congestion: "fixed", congestionOptions: { fixed: { rateBps: 96_000 } } };

  it("reliable-ordered from a sender slower than the stream: waits stay within the deadline", () => {
    const link = { latencyMs: 20 };
    const r = stream(41, { channel: 0, size: 600, count: 300, deadlineMs: 300, link, client: held });
    const without = stream(41, { channel: 0, size: 600, count: 300, link, client: held });
    const waits = [...r.latency.values()];
    const why = `with deadlines: ${r.latency.size} delivered of ${r.sent}, p50 ${p(waits, 0.5).toFixed(0)} ms, max ${Math.max(...waits).toFixed(0)} ms, missed ${r.missed}; without: max ${Math.max(...without.latency.values()).toFixed(0)} ms`;
    console.log(why);
    checkPromises(r, true);
    expect(r.missed, why).toBeGreaterThan(0);
    // What the rate allows still goes: about two thirds of the stream.
    expect(r.latency.size, why).toBeGreaterThan(r.sent / 2);
    // A message leaves before its deadline or not at all; then one trip to arrive.
    expect(Math.max(...waits), why).toBeLessThan(300 + 20 + 50);
    // Without deadlines every message arrives, ever later: seconds behind by the end.
    expect(without.latency.size).toBe(without.sent);
    expect(Math.max(...without.latency.values()), why).toBeGreaterThan(2000);
  });

  it("reliable-ordered, 15 % loss: a lost message given up no longer holds the ones after it", () => {
    const link = { latencyMs: 25, lossRate: 0.15 };
    const r = stream(46, { channel: 0, size: 200, count: 300, deadlineMs: 100, link });
    const without = stream(46, { channel: 0, size: 200, count: 300, link });
    const waits = [...r.latency.values()];
    const plain = [...without.latency.values()];
    const why = `p99 with a 100 ms deadline ${p(waits, 0.99).toFixed(0)} ms (${r.latency.size} delivered, ${r.missed} given up), without ${p(plain, 0.99).toFixed(0)} ms`;
    console.log(why);
    checkPromises(r, true);
    expect(r.missed, why).toBeGreaterThan(0);
    expect(p(waits, 0.99), why).toBeLessThan(p(plain, 0.99));
  });

  for (const engine of ["ts", "wasm"] as const) {
    it(`reliable-ordered, fragmented, 20 % loss: given-up messages leave GAPs, nothing is left held (${engine})`, () => {
      const r = stream(42, { channel: 0, size: 4000, count: 150, deadlineMs: 120, link: { latencyMs: 25, lossRate: 0.2 }, engine });
      const why = `${r.latency.size} delivered of ${r.sent}, missed ${r.missed}, duplicates ${r.duplicates}`;
      checkPromises(r, true);
      expect(r.missed, why).toBeGreaterThan(0);
      // Most still get through: each fragment has a couple of tries before its deadline.
      expect(r.latency.size, why).toBeGreaterThan(r.sent / 2);
    });
  }

  it("reliable-unordered, 20 % loss: delivered once or not at all, receipts agree", () => {
    const r = stream(43, { channel: 1, size: 200, count: 200, deadlineMs: 80, link: { latencyMs: 25, lossRate: 0.2 } });
    checkPromises(r, false);
    expect(r.missed).toBeGreaterThan(0);
    // Each false receipt is a message given up (the loss was never declared otherwise).
    expect([...r.receipts.values()].filter((d) => !d).length).toBe(r.missed);
  });

  it("a deadline long enough changes nothing: every message arrives, in order, every receipt true", () => {
    const r = stream(44, { channel: 0, size: 300, count: 150, deadlineMs: 10_000, link: { latencyMs: 25, lossRate: 0.05 } });
    checkPromises(r, true);
    expect(r.missed).toBe(0);
    expect(r.latency.size).toBe(r.sent);
    expect([...r.receipts.values()].every((d) => d)).toBe(true);
  });

  it("refuses a deadline that is not a finite number > 0, and any on a latest-state channel", () => {
    const pair = makePair(45, { server: { channels: CHANNELS }, client: { channels: CHANNELS } });
    const [c] = connectPair(pair);
    const data = new Uint8Array(4);
    for (const bad of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, "100" as unknown as number]) {
      expect(() => pair.client.send(c, data, { channel: 0, deadlineMs: bad })).toThrow(InvalidDeadlineError);
    }
    expect(() => pair.client.send(c, data, { channel: 2, key: 1, deadlineMs: 100 })).toThrow(/latest-state/);
    expect(() => pair.client.send(c, data, { channel: 0, deadlineMs: 100 })).not.toThrow();
  });
});
