import { describe, expect, it } from "vitest";
import { DeliveryKind, DropReason, PacketType, RecordType, DATA_HEADER_BYTES, RECORD_INTS } from "../src/engine/abi.js";
import { TsEngine } from "../src/engine/ts-engine.js";

const channels = [DeliveryKind.ReliableOrdered, DeliveryKind.Unreliable];
const make = () => new TsEngine({ protocolId: 0x1234, maxSlots: 4, channels });

/** Write one frame (PROTOCOL §3) at p; returns the next position. */
function frame(b: Uint8Array, p: number, channel: number, kind: number, seq: number, payload: number[]): number {
  const v = new DataView(b.buffer);
  b[p] = channel;
  b[p + 1] = kind;
  v.setUint16(p + 2, seq, true);
  v.setUint16(p + 4, payload.length, true);
  b.set(payload, p + 6);
  return p + 6 + payload.length;
}

function send(from: TsEngine, to: TsEngine, frames: Array<[number, number, number, number[]]>): Int32Array[] {
  const off = from.layout.txArenaOffset;
  let p = off + DATA_HEADER_BYTES;
  for (const [ch, kind, seq, payload] of frames) p = frame(from.bytes, p, ch, kind, seq, payload);
  from.sealData(0, off, p - off - DATA_HEADER_BYTES, PacketType.Data);
  const len = p - off + 4;
  to.bytes.set(from.bytes.subarray(off, off + len), to.layout.rxArenaOffset);
  to.descriptors.set([to.layout.rxArenaOffset, len, 0, 0], 0);
  const n = to.processBatch(1);
  return Array.from({ length: n }, (_, i) => to.records.slice(i * RECORD_INTS, (i + 1) * RECORD_INTS));
}

describe("TS reference engine", () => {
  it("knows the CRC32C check value", () => {
    const e = make();
    e.bytes.set(new TextEncoder().encode("123456789"), e.layout.rxArenaOffset);
    expect(e.crc32c(e.layout.rxArenaOffset, 9)).toBe(0xe3069283);
  });

  it("delivers in order, holds ahead of a gap, releases when it closes, and acks", () => {
    const a = make();
    const b = make();
    a.resetSlot(0, 65534);
    b.resetSlot(0, 100);
    const r1 = send(a, b, [[0, DeliveryKind.ReliableOrdered, 1, [9]]]);
    expect(r1.map((r) => r[0])).toEqual([RecordType.PacketReceived, RecordType.Hold]);
    expect(r1[0][2]).toBe(65534);
    const r2 = send(a, b, [[0, DeliveryKind.ReliableOrdered, 0, [8]], [1, 0, 0, [7, 7]]]);
    expect(r2.map((r) => r[0])).toEqual([RecordType.PacketReceived, RecordType.Message, RecordType.Release, RecordType.Message]);
    expect(r2[0][2]).toBe(65535);
    // b answers: its ack covers 65534 and 65535 (wrap-around in the bitfield).
    const back = send(b, a, []);
    const acked = back.filter((r) => r[0] === RecordType.Settled).map((r) => r[2]);
    expect(acked).toEqual([65534, 65535]);
    // the same ack again reports nothing new
    expect(send(b, a, []).filter((r) => r[0] === RecordType.Settled)).toEqual([]);
  });

  it("drops a corrupted datagram and counts it", () => {
    const a = make();
    const b = make();
    a.resetSlot(0, 5);
    b.resetSlot(0, 5);
    const off = a.layout.txArenaOffset;
    a.sealData(0, off, 0, PacketType.Keepalive);
    b.bytes.set(a.bytes.subarray(off, off + 13), b.layout.rxArenaOffset);
    b.bytes[b.layout.rxArenaOffset + 3] ^= 4;
    b.descriptors.set([b.layout.rxArenaOffset, 13, 0, 0], 0);
    expect(b.processBatch(1)).toBe(1);
    expect(Array.from(b.records.slice(0, 4))).toEqual([RecordType.DatagramDropped, 0, DropReason.BadCrc, 0]);
    expect(b.dropCount(DropReason.BadCrc)).toBe(1);
  });
});

describe("host misuse is handled the same by both engines", () => {
  it("a descriptor outside the receive arena is BadLength, an out-of-range slot is UnknownPeer, bad seal arguments throw", async () => {
    const { createEngine } = await import("../src/engine/index.js");
    const { EngineUsageError } = await import("../src/engine/layout.js");
    const config = { protocolId: 7, maxSlots: 2, channels };
    const engines = [createEngine(config, "ts"), createEngine(config, "wasm")];
    // createEngine falls back to TS where WebAssembly is missing: then this would compare TS with itself.
    expect(engines.map((e) => e.kind)).toEqual(["ts", "wasm"]);
    const results = engines.map((e) => {
      e.resetSlot(0, 1);
      const tx = e.layout.txArenaOffset;
      e.sealData(0, tx, 0, PacketType.Keepalive);
      const rx = e.layout.rxArenaOffset;
      e.bytes.copyWithin(rx, tx, tx + 13);
      e.descriptors.set([e.layout.txArenaOffset, 13, 0, 0, rx, 13, 5, 0, rx + e.layout.rxArenaBytes - 4, 13, 0, 0], 0);
      const n = e.processBatch(3);
      expect(() => e.sealData(2, tx, 0, PacketType.Data)).toThrow(EngineUsageError);
      expect(() => e.sealData(0, 0, 0, PacketType.Data)).toThrow(EngineUsageError);
      expect(() => e.sealControl(e.layout.txArenaOffset + e.layout.txArenaBytes - 2, 4)).toThrow(EngineUsageError);
      return Array.from(e.records.slice(0, n * RECORD_INTS));
    });
    expect(results[0]).toEqual(results[1]);
    const types = [];
    for (let i = 0; i < results[0].length; i += RECORD_INTS) types.push([results[0][i], results[0][i + 2]]);
    expect(types).toEqual([
      [RecordType.DatagramDropped, DropReason.BadLength],
      [RecordType.UnknownPeer, 0],
      [RecordType.DatagramDropped, DropReason.BadLength],
    ]);
  });
});
