// GAP frames (PROTOCOL §3): a reliable-ordered sender that gave a message up at its deadline
// tells the receiver to skip its sequences. Both engines, the same records.
import { describe, expect, it } from "vitest";
import { DeliveryKind, DropReason, FRAME_FLAG_GAP, RECORD_INTS, RecordType, decodeRecord, type Engine, type EngineRecord } from "../../src/engine/abi.js";
import { ALL_KINDS, deliver, sealPacket, tsEngine, wasmEngine, type FrameSpec } from "./helpers.js";

const ORDERED = ALL_KINDS.indexOf(DeliveryKind.ReliableOrdered);

/** A data frame on the ordered channel, or (with `gap`) a GAP frame skipping `gap` sequences. */
function frame(seq: number, gap?: number): FrameSpec {
  if (gap === undefined) return { channel: ORDERED, kind: DeliveryKind.ReliableOrdered, seq, payload: new Uint8Array([seq & 0xff]) };
  return { channel: ORDERED, kind: DeliveryKind.ReliableOrdered, seq, payload: new Uint8Array([gap & 0xff, gap >>> 8]), flags: FRAME_FLAG_GAP };
}

/** The channel records (decoded) of one datagram carrying `frames`, sent a -> b. */
function exchange(a: Engine, b: Engine, frames: FrameSpec[]): EngineRecord[] {
  const { bytes } = sealPacket(a, 0, frames);
  const raw = deliver(b, [{ bytes, slot: 0 }]);
  const records = new Int32Array(raw.flat());
  const out: EngineRecord[] = [];
  for (let i = 0; i < raw.length; i++) out.push(decodeRecord(records, i * RECORD_INTS));
  return out.filter((r) => r.type !== RecordType.PacketReceived && r.type !== RecordType.Settled);
}

const brief = (r: EngineRecord): string => {
  switch (r.type) {
    case RecordType.Message:
      return `msg ${r.messageSeq}`;
    case RecordType.Hold:
      return `hold ${r.messageSeq}`;
    case RecordType.Release:
      return `release ${r.messageSeq}`;
    case RecordType.Skip:
      return `skip ${r.messageSeq}+${r.count}`;
    case RecordType.HoldGap:
      return `holdgap ${r.messageSeq}+${r.count}`;
    case RecordType.FrameDropped:
      return `drop ${r.reason} ${r.messageSeq}`;
    case RecordType.DatagramDropped:
      return `datagram dropped ${r.reason}`;
    default:
      return `record ${r.type}`;
  }
};

async function pairOf(kind: "ts" | "wasm"): Promise<[Engine, Engine]> {
  const make = kind === "ts" ? async () => tsEngine() : () => wasmEngine();
  const a = await make();
  const b = await make();
  a.resetSlot(0, 100);
  b.resetSlot(0, 200);
  return [a, b];
}

for (const kind of ["ts", "wasm"] as const) {
  describe(`GAP frames (${kind} engine)`, () => {
    it("at the in-order point: skips its sequences and releases the held run after them", async () => {
      const [a, b] = await pairOf(kind);
      expect(exchange(a, b, [frame(0)]).map(brief)).toEqual(["msg 0"]);
      // 1..3 were given up; 4 and 5 arrived first and wait.
      expect(exchange(a, b, [frame(4), frame(5)]).map(brief)).toEqual(["hold 4", "hold 5"]);
      expect(exchange(a, b, [frame(1, 3)]).map(brief)).toEqual(["skip 1+3", "release 4", "release 5"]);
      expect(exchange(a, b, [frame(6)]).map(brief)).toEqual(["msg 6"]);
    });

    it("at the in-order point, keeps what of the range arrived: releases it between the skipped runs", async () => {
      const [a, b] = await pairOf(kind);
      // A message of 1..5 given up; 2 and 4 of it arrived (held).
      expect(exchange(a, b, [frame(2), frame(4)]).map(brief)).toEqual(["hold 2", "hold 4"]);
      expect(exchange(a, b, [frame(0)]).map(brief)).toEqual(["msg 0"]);
      expect(exchange(a, b, [frame(1, 5)]).map(brief)).toEqual(["skip 1+1", "release 2", "skip 3+1", "release 4", "skip 5+1"]);
      expect(exchange(a, b, [frame(6)]).map(brief)).toEqual(["msg 6"]);
    });

    it("ahead of the in-order point: held like messages and released in turn", async () => {
      const [a, b] = await pairOf(kind);
      expect(exchange(a, b, [frame(2, 2)]).map(brief)).toEqual(["holdgap 2+2"]);
      expect(exchange(a, b, [frame(4)]).map(brief)).toEqual(["hold 4"]);
      expect(exchange(a, b, [frame(0), frame(1)]).map(brief)).toEqual(["msg 0", "msg 1", "release 2", "release 3", "release 4"]);
      // The given-up message's own frames, late: already past.
      expect(exchange(a, b, [frame(3)]).map(brief)).toEqual([`drop ${DropReason.DuplicateMessage} 3`]);
    });

    it("partly behind the in-order point: only the rest is skipped; wholly behind is a duplicate", async () => {
      const [a, b] = await pairOf(kind);
      exchange(a, b, [frame(0), frame(1)]);
      expect(exchange(a, b, [frame(0, 4)]).map(brief)).toEqual(["skip 2+2"]);
      expect(exchange(a, b, [frame(0, 4)]).map(brief)).toEqual([`drop ${DropReason.DuplicateMessage} 0`]);
      expect(exchange(a, b, [frame(4)]).map(brief)).toEqual(["msg 4"]);
    });

    it("a GAP reaching past the window is TooFarAhead; one at the in-order point may span it", async () => {
      const [a, b] = await pairOf(kind);
      expect(exchange(a, b, [frame(1, 1024)]).map(brief)).toEqual([`drop ${DropReason.TooFarAhead} 1`]);
      expect(exchange(a, b, [frame(0, 1024)]).map(brief)).toEqual(["skip 0+1024"]);
      expect(exchange(a, b, [frame(1024)]).map(brief)).toEqual(["msg 1024"]);
    });

    it("malformed: two GAPs in one datagram, a count of 0 or over 1024, a GAP on another kind", async () => {
      const [a, b] = await pairOf(kind);
      const malformed = `datagram dropped ${DropReason.MalformedFrame}`;
      expect(exchange(a, b, [frame(1, 1), frame(3, 1)]).map(brief)).toEqual([malformed]);
      expect(exchange(a, b, [frame(1, 0)]).map(brief)).toEqual([malformed]);
      expect(exchange(a, b, [frame(1, 1025)]).map(brief)).toEqual([malformed]);
      const unordered = ALL_KINDS.indexOf(DeliveryKind.ReliableUnordered);
      const onUnordered: FrameSpec = { channel: unordered, kind: DeliveryKind.ReliableUnordered, seq: 0, payload: new Uint8Array([1, 0]), flags: FRAME_FLAG_GAP };
      expect(exchange(a, b, [onUnordered]).map(brief)).toEqual([malformed]);
      // Nothing of those changed the window: 0 is still the next expected.
      expect(exchange(a, b, [frame(0)]).map(brief)).toEqual(["msg 0"]);
    });
  });
}
