// The engine's sent-packet ring (assembly/sent-ring.ts): sealing, the ack scan's settlement,
// loss detection, eviction and the oldest ack-eliciting packet, held to a model (the public
// DeliveryNotificationManager, which the session used before the ring moved into the engine)
// and to each other (the WASM debug build against the TypeScript twin: identical records,
// lists and slot memory).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DeliveryNotificationManager } from "../../src/channels/index.js";
import {
  PACKET_WINDOW, RecordType, SettledRecord, SettleOutcome, SlotField, type Engine,
} from "../../src/engine/abi.js";
import { oldestEliciting as oldestIn } from "../../src/recovery/sent-ring.js";
import { config, deliver, rng, sealPacket, tsEngine, wasmEngine, type Rec } from "./helpers.js";

/** The slot's oldest ack-eliciting packet in flight, as the host reads it (SentRing). */
const oldestEliciting = (e: Engine, slot: number): number => {
  const base = e.layout.slotOffset + slot * e.layout.slotStride;
  return oldestIn(e.u32, base >> 2, (base + SlotField.SentWindow) >> 2);
};
/** Everything in flight declared lost, as SentRing.dropAll asks. */
const dropAll = (e: Engine, slot: number): number => e.detectLosses(slot, 0, -Infinity, Infinity, 1);

interface Outcome {
  kind: "delivered" | "dropped";
  sequence: number;
  sentTime: number;
}

const slotWord = (e: Engine, slot: number, field: number): number =>
  e.u32[(e.layout.slotOffset + slot * e.layout.slotStride + field) >> 2];

function slotState(e: Engine, slot: number): Uint8Array {
  const base = e.layout.slotOffset + slot * e.layout.slotStride;
  return e.bytes.slice(base, base + e.layout.slotStride);
}

/** Seal one packet of `framesLength` bytes of padding frames (0 for a pure ack). */
function seal(e: Engine, slot: number, framesLength: number, now: number, eliciting: boolean): { seq: number; bytes: Uint8Array } {
  const at = e.layout.txArenaOffset;
  e.bytes.fill(0, at + 9, at + 9 + framesLength);
  const seq = e.sealData(slot, at, framesLength, 0, now, eliciting);
  return { seq, bytes: e.bytes.slice(at, at + framesLength + 13) };
}

async function run(seed: number): Promise<void> {
  const rand = rng(seed);
  const cfg = config();
  const wasm = await wasmEngine(cfg);
  const ts = tsEngine(cfg);
  const peer = tsEngine(cfg);
  const start = Math.floor(rand() * 65536);
  for (const e of [wasm, ts]) e.resetSlot(0, start);
  peer.resetSlot(0, Math.floor(rand() * 65536));
  const threshold = 1 + Math.floor(rand() * (rand() < 0.5 ? 4 : 300));
  const outcomes: Outcome[] = [];
  const model = new DeliveryNotificationManager<number, object>(
    {
      onDelivered: (sequence, _d, sentTime) => outcomes.push({ kind: "delivered", sequence, sentTime }),
      onDropped: (sequence, _d, sentTime) => outcomes.push({ kind: "dropped", sequence, sentTime }),
    },
    { capacity: PACKET_WINDOW, packetThreshold: threshold },
  );
  const lostOf = (e: Engine, n: number): number[] => Array.from(e.lost.subarray(0, n));
  let now = rand() * 1000;
  const toPeer: Uint8Array[] = [];
  for (let step = 0; step < 300; step++) {
    now += rand() < 0.3 ? 0 : rand() * 20;
    const op = rand();
    if (op < 0.45) {
      // Seal a few packets (a burst shares one `now`); some reach the peer.
      for (let k = 1 + Math.floor(rand() * 12); k > 0; k--) {
        const eliciting = rand() < 0.8;
        const framesLength = eliciting ? 6 + Math.floor(rand() * 1000) : rand() < 0.5 ? 0 : 2;
        const ew = wasm.evictNext(0);
        const et = ts.evictNext(0);
        expect(ew, `evict (seed ${seed})`).toBe(et);
        const before = outcomes.length;
        const a = seal(wasm, 0, framesLength, now, eliciting);
        const b = seal(ts, 0, framesLength, now, eliciting);
        expect(a.bytes, `sealed bytes (seed ${seed})`).toEqual(b.bytes);
        model.dispatch(a.seq, now, a.bytes.length, a.seq, eliciting ? {} : undefined);
        // The model drops the packet PACKET_WINDOW back at dispatch: the engine's evictNext did.
        // (Its send time is gone: the new packet took the entry.)
        const evicted = outcomes.splice(before).filter((o) => o.kind === "dropped").map((o) => o.sequence);
        expect(evicted, `eviction (seed ${seed})`).toEqual(ew >= 0 ? [ew] : []);
        if (rand() < 0.75) toPeer.push(a.bytes);
      }
    } else if (op < 0.75) {
      // The peer acks what reached it (in a shuffled order, so acks come back out of order).
      for (let i = toPeer.length - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [toPeer[i], toPeer[j]] = [toPeer[j], toPeer[i]];
      }
      deliver(peer, toPeer.splice(0).map((bytes) => ({ bytes, slot: 0 })));
      const reply = sealPacket(peer, 0, []);
      const ra = deliver(wasm, [{ bytes: reply.bytes, slot: 0 }]);
      const rb = deliver(ts, [{ bytes: reply.bytes, slot: 0 }]);
      expect(ra, `records (seed ${seed})`).toEqual(rb);
      for (const r of ra.filter((x: Rec) => x[0] === RecordType.Settled)) {
        const sequence = r[SettledRecord.Sequence];
        const acked = model.acknowledge(sequence, now);
        expect(acked, `settled ${sequence} (seed ${seed})`).toBe(r[SettledRecord.Outcome] === SettleOutcome.Acked);
        expect(r[SettledRecord.LargestAcked], `largest acked (seed ${seed})`).toBe(model.largestAckedSequence);
      }
    } else if (op < 0.9) {
      const timeout = rand() < 0.2 ? Infinity : rand() * 300;
      const timeThreshold = rand() < 0.3 ? Infinity : rand() * 200;
      const before = outcomes.length;
      const nw = wasm.detectLosses(0, now, timeout, timeThreshold, threshold);
      const nt = ts.detectLosses(0, now, timeout, timeThreshold, threshold);
      expect(lostOf(wasm, nw), `lost lists (seed ${seed})`).toEqual(lostOf(ts, nt));
      model.detectLosses(now, timeout, timeThreshold);
      expect(outcomes.slice(before).map((o) => o.sequence), `declared lost (seed ${seed})`).toEqual(lostOf(wasm, nw));
    } else {
      // A LATE_ACK frame's ack of some recent sequence.
      const sequence = (slotWord(wasm, 0, SlotField.NextSendSequence) - 1 - Math.floor(rand() * 300)) & 0xffff;
      const ow = wasm.acknowledge(0, sequence);
      expect(ow, `acknowledge (seed ${seed})`).toBe(ts.acknowledge(0, sequence));
      if (ow !== SettleOutcome.None) expect(model.acknowledge(sequence, now), `acknowledged (seed ${seed})`).toBe(ow === SettleOutcome.Acked);
    }
    // Oldest eliciting, in flight, bytes, delivered, dropped; and each settled packet's send
    // time is the one it was sealed with.
    const times = (e: Engine): number[] =>
      outcomes.map((o) => e.f64[(e.layout.slotOffset + SlotField.SentTimes) / 8 + (o.sequence & (PACKET_WINDOW - 1))]);
    const state = (e: Engine): number[] => [
      oldestEliciting(e, 0),
      ...[SlotField.InFlight, SlotField.BytesInFlight, SlotField.Delivered, SlotField.Dropped].map((f) => slotWord(e, 0, f)),
      ...times(e),
    ];
    const expected = [model.oldestRecordedSequence(), model.inFlight, model.bytesInFlight, model.delivered, model.dropped, ...outcomes.map((o) => o.sentTime)];
    const sw = state(wasm);
    if (sw.some((v, i) => v !== expected[i])) expect(sw, `state after step ${step} (seed ${seed})`).toEqual(expected);
    const st = state(ts);
    if (st.some((v, i) => v !== expected[i])) expect(st, `ts state after step ${step} (seed ${seed})`).toEqual(expected);
    outcomes.length = 0;
  }
  const nw = dropAll(wasm, 0);
  expect(lostOf(wasm, nw)).toEqual(lostOf(ts, dropAll(ts, 0)));
  model.dropAll(now);
  expect(outcomes.map((o) => o.sequence)).toEqual(lostOf(wasm, nw));
  expect(slotWord(wasm, 0, SlotField.InFlight)).toBe(0);
  expect(Buffer.from(slotState(wasm, 0)).equals(Buffer.from(slotState(ts, 0))), `slot memory (seed ${seed})`).toBe(true);
}

describe("the engine's sent ring", () => {
  it("settles, detects and evicts as the reference model does, identically in both engines", async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => run(seed)), { numRuns: 5 });
  });

  it("an ack of a packet declared lost settles once, as a late ack, and moves nothing in flight", async () => {
    for (const e of [await wasmEngine(config()), tsEngine(config())]) {
      e.resetSlot(0, 65534);
      const a = seal(e, 0, 100, 1, true).seq;
      const b = seal(e, 0, 100, 2, true).seq;
      expect([a, b]).toEqual([65534, 65535]);
      // Both are past an RTO of 5 ms at t = 10: declared lost, oldest first.
      expect(e.detectLosses(0, 10, 5, Infinity, 3)).toBe(2);
      expect(Array.from(e.lost.subarray(0, 2))).toEqual([65534, 65535]);
      expect(oldestEliciting(e, 0)).toBe(-1);
      expect(e.acknowledge(0, 65535)).toBe(SettleOutcome.LateAck);
      expect(e.acknowledge(0, 65535)).toBe(SettleOutcome.None);
      expect(slotWord(e, 0, SlotField.LateAcks)).toBe(1);
      expect(slotWord(e, 0, SlotField.InFlight)).toBe(0);
      // Nothing acked in flight yet: largest acked stays unknown.
      expect(slotWord(e, 0, SlotField.LargestAcked)).toBe(0);
    }
  });

  it("sealing over a packet still in flight a window back declares it lost (evictNext tells which)", async () => {
    for (const e of [await wasmEngine(config()), tsEngine(config())]) {
      e.resetSlot(0, 100);
      for (let i = 0; i < PACKET_WINDOW; i++) seal(e, 0, 10, i, i === 0);
      expect(oldestEliciting(e, 0)).toBe(100);
      expect(e.evictNext(0)).toBe(100);
      expect(e.lost[0]).toBe(100);
      expect(e.evictNext(0)).toBe(-1);
      seal(e, 0, 10, 300, false);
      expect(slotWord(e, 0, SlotField.InFlight)).toBe(PACKET_WINDOW);
      expect(slotWord(e, 0, SlotField.Dropped)).toBe(1);
      // Without evictNext, sealData makes room itself (and counts it).
      seal(e, 0, 10, 301, false);
      expect(slotWord(e, 0, SlotField.Dropped)).toBe(2);
      expect(oldestEliciting(e, 0)).toBe(-1);
    }
  });
});
