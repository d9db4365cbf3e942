// Differential: the WASM engine (debug build, bounds checks on) and the TypeScript reference
// engine must give identical records, counters, sealed bytes and slot state on the same input.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DropReason, RECORD_INTS, type Engine } from "../../src/engine/abi.js";
import { config, deliver, sealPacket, tsEngine, wasmEngine, ALL_KINDS, rng } from "./helpers.js";
import { HostileStream } from "./streams.js";

function counters(e: Engine): number[] {
  return Array.from({ length: 12 }, (_, r) => e.dropCount(r as DropReason));
}

/** Engine state from the counters to the end: slots, windows, bitmaps must agree byte for byte. */
function stateBytes(e: Engine): Uint8Array {
  return e.bytes.subarray(e.layout.slotOffset, e.layout.totalBytes);
}

async function runStream(seed: number, datagrams: number, keyed = false): Promise<{ recordTypes: Set<number>; wasm: Engine }> {
  const recordTypes = new Set<number>();
  const rand = rng(seed);
  const cfg = config();
  const wasm = await wasmEngine(cfg);
  const ts = tsEngine(cfg);
  const peer = tsEngine(cfg);
  const start = Math.floor(rand() * 65536);
  const peerStart = Math.floor(rand() * 65536);
  for (const e of [wasm, ts]) {
    e.resetSlot(0, start);
    e.resetSlot(1, start ^ 0x5555);
  }
  peer.resetSlot(0, peerStart);
  if (keyed) {
    // Slot 0 shares the peer's connection key; slot 1 has another (PROTOCOL §1).
    const key = Uint8Array.from({ length: 8 }, () => Math.floor(rand() * 256));
    for (const e of [wasm, ts, peer]) e.keySlot(0, key);
    for (const e of [wasm, ts]) e.keySlot(1, key.map((b) => b ^ 0xa5));
  }
  const stream = new HostileStream(peer, cfg.channels, rand);
  let sent = 0;
  while (sent < datagrams) {
    const n = 1 + Math.floor(rand() * 40);
    const batch = Array.from({ length: n }, () => stream.next());
    sent += n;
    const batchSize = 1 + Math.floor(rand() * 64);
    const a = deliver(wasm, batch, batchSize);
    const b = deliver(ts, batch, batchSize);
    expect(a, `records differ (seed ${seed})`).toEqual(b);
    for (const r of a) recordTypes.add(r[0]);
    expect(counters(wasm), `counters differ (seed ${seed})`).toEqual(counters(ts));
    // Reply: both receivers seal the same packet; the bytes must match; the peer acks them.
    if (rand() < 0.7) {
      const replyA = sealPacket(wasm, 0, []);
      const replyB = sealPacket(ts, 0, []);
      expect(replyA.bytes, `sealed bytes differ (seed ${seed})`).toEqual(replyB.bytes);
      expect(wasm.sentCrc(0, replyA.seq), `sent CRCs differ (seed ${seed})`).toBe(ts.sentCrc(0, replyB.seq));
      if (rand() < 0.8) deliver(peer, [{ bytes: replyB.bytes, slot: 0 }]);
    }
  }
  expect(Buffer.from(stateBytes(wasm)).equals(Buffer.from(stateBytes(ts))), `slot state differs (seed ${seed})`).toBe(true);
  return { recordTypes, wasm };
}

describe("WASM engine == TS reference engine", () => {
  it("on random hostile streams (fast-check seeds)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 0x7fffffff }), async (seed) => {
        await runStream(seed, 400);
      }),
      { numRuns: 40, seed: 20261121 },
    );
  });

  it("on random hostile streams with keyed slots (fast-check seeds)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 0x7fffffff }), async (seed) => {
        await runStream(seed, 400, true);
      }),
      { numRuns: 20, seed: 20261122 },
    );
  });

  it("on one long stream", async () => {
    const { recordTypes, wasm } = await runStream(3, 20000);
    // The stream must actually reach every outcome, or the comparison proves little.
    expect([...recordTypes].sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    for (let reason = DropReason.TooShort; reason <= DropReason.TooFarAhead; reason++)
      expect(wasm.dropCount(reason), `drop reason ${reason} never happened`).toBeGreaterThan(0);
  });

  it("with record-area back-pressure: consumed() and partial batches agree", async () => {
    // maxRecords is raised by the layout to 2 * worst case per datagram; fill it with
    // frame-heavy datagrams so processBatch must stop early.
    const cfg = config({ channels: [ALL_KINDS[0]], maxRecords: 1 });
    const wasm = await wasmEngine(cfg);
    const ts = tsEngine(cfg);
    const peer = tsEngine(cfg);
    for (const e of [wasm, ts, peer]) e.resetSlot(0, 1);
    const batch = Array.from({ length: 64 }, () => {
      const frames = Array.from({ length: 200 }, () => ({ channel: 0, kind: 0, seq: 0, payload: new Uint8Array(0) }));
      return { bytes: sealPacket(peer, 0, frames).bytes, slot: 0 };
    });
    const consumedBy = (e: Engine) => {
      for (let i = 0; i < batch.length; i++) {
        const at = e.layout.rxArenaOffset + i * 1500;
        e.bytes.set(batch[i].bytes, at);
        e.descriptors.set([at, batch[i].bytes.length, 0, 0], i * 4);
      }
      const n = e.processBatch(batch.length);
      return { n, consumed: e.consumed(), records: Array.from(e.records.subarray(0, n * RECORD_INTS)) };
    };
    const a = consumedBy(wasm);
    const b = consumedBy(ts);
    expect(a.consumed).toBeLessThan(batch.length);
    expect(a).toEqual(b);
  });
});
