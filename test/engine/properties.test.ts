// Properties (fast-check) over random packet streams with loss, duplication and reordering,
// on the WASM engine (debug build), plus the 65535 -> 0 wrap of packet and message sequences.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DeliveryKind, RecordType, type Engine } from "../../src/engine/abi.js";
import { config, deliver, sealPacket, wasmEngine } from "./helpers.js";

type Rec = number[];
const ORDERED = [DeliveryKind.ReliableOrdered];

/** Apply a link to a list: drop, duplicate and locally reorder, driven by fast-check choices. */
function link<T>(items: T[], fate: number[]): T[] {
  const out: T[] = [];
  items.forEach((item, i) => {
    const f = fate[i % fate.length];
    if (f === 0) return; // lost
    out.push(item);
    if (f === 2) out.push(item); // duplicated
  });
  // Reorder: swap neighbours where the fate says so.
  for (let i = 0; i + 1 < out.length; i++) if (fate[(i * 7) % fate.length] === 3) [out[i], out[i + 1]] = [out[i + 1], out[i]];
  return out;
}

describe("packet acknowledgement properties", () => {
  it("every packet the receiver accepts is acked exactly once, and nothing else is", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 65535 }),
        fc.constantFrom(0, 65500, 65535, 32767),
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 50 }),
        fc.integer({ min: 1, max: 256 }), // all sent up front: at most the 256-entry sent window
        async (startB, startA, fate, packets) => {
          const a = await wasmEngine(config({ channels: ORDERED }));
          const b = await wasmEngine(config({ channels: ORDERED }));
          a.resetSlot(0, startA);
          b.resetSlot(0, startB);
          const sent = Array.from({ length: packets }, () => sealPacket(a, 0, []));
          const arriving = link(sent, fate);
          const ackedAtA = new Map<number, number>();
          const acceptedByB = new Set<number>();
          const ackable = new Set<number>();
          // B answers after every datagram, so each accepted packet is in the next ack window
          // unless it arrived more than 32 behind B's newest.
          for (const d of arriving) {
            const recs = deliver(b, [{ bytes: d.bytes, slot: 0 }]);
            const got = recs.find((r) => r[0] === RecordType.PacketReceived);
            if (got) {
              acceptedByB.add(got[2]);
              const reply = sealPacket(b, 0, []);
              const v = new DataView(reply.bytes.buffer);
              const ack = v.getUint16(3, true);
              const bits = v.getUint32(5, true);
              const dist = (ack - got[2]) & 0xffff;
              if (dist <= 32) {
                ackable.add(got[2]);
                expect(dist === 0 || ((bits >>> (dist - 1)) & 1) === 1).toBe(true);
              }
              for (const r of deliver(a, [{ bytes: reply.bytes, slot: 0 }]))
                if (r[0] === RecordType.Settled) ackedAtA.set(r[2], (ackedAtA.get(r[2]) ?? 0) + 1);
            }
          }
          for (const [seq, times] of ackedAtA) {
            expect(times).toBe(1);
            expect(acceptedByB.has(seq)).toBe(true);
          }
          for (const seq of ackable) expect(ackedAtA.has(seq)).toBe(true);
        },
      ),
      { numRuns: 60, seed: 424242 },
    );
  });

  it("acks across the 65535 -> 0 wrap come out oldest first", async () => {
    const a = await wasmEngine(config({ channels: ORDERED }));
    const b = await wasmEngine(config({ channels: ORDERED }));
    a.resetSlot(0, 65530);
    b.resetSlot(0, 9);
    const sent = Array.from({ length: 12 }, () => sealPacket(a, 0, []));
    expect(sent.map((s) => s.seq)).toEqual([65530, 65531, 65532, 65533, 65534, 65535, 0, 1, 2, 3, 4, 5]);
    deliver(b, sent.filter((_, i) => i !== 3).map((s) => ({ bytes: s.bytes, slot: 0 })));
    const reply = sealPacket(b, 0, []);
    const v = new DataView(reply.bytes.buffer);
    expect(v.getUint16(3, true)).toBe(5);
    // Bits for 4,3,2,1,0,65535,65534 set, 65533 missing, 65532..65530 set.
    expect(v.getUint32(5, true)).toBe(0b11101111111);
    const acked = deliver(a, [{ bytes: reply.bytes, slot: 0 }]).filter((r) => r[0] === RecordType.Settled).map((r) => r[2]);
    expect(acked).toEqual([65530, 65531, 65532, 65534, 65535, 0, 1, 2, 3, 4, 5]);
  });
});

describe("reorder buffer properties", () => {
  /** Deliver messages (ReliableOrdered channel 0) one per datagram; return the delivered order. */
  async function orderedDelivery(engine: Engine, seqs: number[]): Promise<{ delivered: number[]; held: Set<number> }> {
    const sender = await wasmEngine(config({ channels: ORDERED }));
    sender.resetSlot(0, 1);
    const delivered: number[] = [];
    const held = new Set<number>();
    for (const seq of seqs) {
      const { bytes } = sealPacket(sender, 0, [{ channel: 0, kind: DeliveryKind.ReliableOrdered, seq, payload: new Uint8Array([seq & 0xff]) }]);
      for (const r of deliver(engine, [{ bytes, slot: 0 }])) {
        if (r[0] === RecordType.Message) delivered.push(r[3]);
        if (r[0] === RecordType.Hold) held.add(r[3]);
        if (r[0] === RecordType.Release) {
          expect(held.delete(r[3])).toBe(true);
          delivered.push(r[3]);
        }
      }
    }
    return { delivered, held };
  }

  it("releases exactly the in-order prefix of what arrived", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 80 }), { minLength: 1, maxLength: 200 }),
        async (arrivals) => {
          const engine = await wasmEngine(config({ channels: ORDERED }));
          engine.resetSlot(0, 0);
          const { delivered, held } = await orderedDelivery(engine, arrivals);
          const arrived = new Set(arrivals);
          let prefix = 0;
          while (arrived.has(prefix)) prefix++;
          expect(delivered).toEqual(Array.from({ length: prefix }, (_, i) => i));
          expect([...held].sort((x, y) => x - y)).toEqual([...arrived].filter((s) => s > prefix).sort((x, y) => x - y));
        },
      ),
      { numRuns: 100, seed: 99 },
    );
  });

  it("orders across the 65535 -> 0 message-sequence wrap", async () => {
    const engine = await wasmEngine(config({ channels: ORDERED }));
    const sender = await wasmEngine(config({ channels: ORDERED }));
    engine.resetSlot(0, 0);
    sender.resetSlot(0, 0);
    // Walk the channel to 65530 in order: 200 frames per datagram.
    let next = 0;
    while (next < 65530) {
      const frames = [];
      for (let k = 0; k < 200 && next < 65530; k++) frames.push({ channel: 0, kind: DeliveryKind.ReliableOrdered, seq: next++, payload: new Uint8Array(0) });
      const recs = deliver(engine, [{ bytes: sealPacket(sender, 0, frames).bytes, slot: 0 }]);
      expect(recs.filter((r) => r[0] === RecordType.Message).length).toBe(frames.length);
    }
    const order = [65533, 65531, 0, 65530, 2, 65535, 65532, 1, 65534, 3];
    const out: number[] = [];
    for (const seq of order) {
      const { bytes } = sealPacket(sender, 0, [{ channel: 0, kind: DeliveryKind.ReliableOrdered, seq, payload: new Uint8Array(0) }]);
      for (const r of deliver(engine, [{ bytes, slot: 0 }])) if (r[0] === RecordType.Message || r[0] === RecordType.Release) out.push(r[3]);
    }
    expect(out).toEqual([65530, 65531, 65532, 65533, 65534, 65535, 0, 1, 2, 3]);
    // 65529 is behind: a duplicate; 1024 ahead of next expected (4) is too far.
    const late = deliver(engine, [{ bytes: sealPacket(sender, 0, [{ channel: 0, kind: DeliveryKind.ReliableOrdered, seq: 65529, payload: new Uint8Array(0) }]).bytes, slot: 0 }]);
    expect(late.find((r) => r[0] === RecordType.FrameDropped)?.[2]).toBe(10);
    const far = deliver(engine, [{ bytes: sealPacket(sender, 0, [{ channel: 0, kind: DeliveryKind.ReliableOrdered, seq: 4 + 1024, payload: new Uint8Array(0) }]).bytes, slot: 0 }]);
    expect(far.find((r) => r[0] === RecordType.FrameDropped)?.[2]).toBe(11);
  });
});
