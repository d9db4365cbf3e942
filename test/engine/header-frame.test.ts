// Header and frame round trips through seal -> processBatch, length rules per packet type,
// strict frame parsing, and parity recovery, on the WASM engine (debug build).
import { describe, expect, it } from "vitest";
import { DeliveryKind, DropReason, PacketType, RecordType } from "../../src/engine/abi.js";
import { config, deliver, sealControlPacket, sealPacket, tsEngine, wasmEngine, ALL_KINDS } from "./helpers.js";

describe("DATA header and frames", () => {
  it("round-trips every frame shape: channel, kind, messageSeq, fragment, key, payload", async () => {
    const a = await wasmEngine();
    const b = await wasmEngine();
    a.resetSlot(0, 500);
    b.resetSlot(0, 9);
    const frames = [
      { channel: 0, kind: DeliveryKind.Unreliable, seq: 7, payload: new Uint8Array([1, 2, 3]) },
      { channel: 5, kind: DeliveryKind.LatestState, seq: 0, key: 0xdeadbeef, payload: new Uint8Array([9]) },
      { channel: 2, kind: DeliveryKind.ReliableUnordered, seq: 0, fragment: [0, 3] as [number, number], payload: new Uint8Array(0) },
      { channel: 255, kind: DeliveryKind.Unreliable, seq: 0, payload: new Uint8Array([1, 0, 0, 0, 0]) },
    ];
    const { seq, bytes } = sealPacket(a, 0, frames);
    expect(seq).toBe(500);
    expect(bytes.length).toBe(13 + 9 + 11 + 10 + 11);
    expect(bytes[0]).toBe(PacketType.Data); // nothing received yet: ACKS_VALID clear
    const recs = deliver(b, [{ bytes, slot: 0 }]);
    expect(recs[0].slice(0, 5)).toEqual([RecordType.PacketReceived, 0, 500, 0, PacketType.Data]);
    const msgs = recs.filter((r) => r[0] === RecordType.Message);
    expect(msgs.map((r) => r.slice(2, 6))).toEqual([
      [0, 7, 0, 0],
      [5, 0, 0, 0xdeadbeef | 0],
      [2, 0, (0 << 16) | 3, 0],
      [255, 0, 0, 0],
    ]);
    expect([...b.bytes.subarray(msgs[0][6], msgs[0][6] + msgs[0][7])]).toEqual([1, 2, 3]);
    // The reply carries ACKS_VALID and acks 500.
    const reply = sealPacket(b, 0, [], true);
    expect(reply.bytes[0]).toBe(PacketType.Keepalive | 0x10);
    expect(new DataView(reply.bytes.buffer).getUint16(3, true)).toBe(500);
    const back = deliver(a, [{ bytes: reply.bytes, slot: 0 }]);
    expect(back.map((r) => r[0])).toEqual([RecordType.PacketReceived, RecordType.Settled]);
    expect(back[1][2]).toBe(500);
  });

  it.each([
    ["channel >= channelCount", [ALL_KINDS.length, DeliveryKind.Unreliable]],
    ["kind differs from the channel's", [0, DeliveryKind.ReliableOrdered]],
    ["reserved flag bit", [0, 0x10]],
    ["system channel with a reliable kind", [255, DeliveryKind.ReliableOrdered]],
  ])("drops the whole datagram on a malformed frame: %s", async (_label, [channel, flags]) => {
    const a = await wasmEngine();
    const b = await wasmEngine();
    a.resetSlot(0, 1);
    b.resetSlot(0, 1);
    const good = { channel: 0, kind: DeliveryKind.Unreliable, seq: 1, payload: new Uint8Array([1]) };
    const { bytes } = sealPacket(a, 0, [good, good]);
    const intact = bytes.slice();
    // Corrupt the second frame, then re-seal so the CRC is valid around it.
    bytes[9 + 7] = channel;
    bytes[9 + 7 + 1] = flags;
    const resealed = sealControlPacket(a, bytes.subarray(0, bytes.length - 4));
    const recs = deliver(b, [{ bytes: resealed, slot: 0 }]);
    expect(recs).toEqual([[RecordType.DatagramDropped, 0, DropReason.MalformedFrame, 0, 0, 0, 0, 0]]);
    // Not recorded as received: the same sequence is accepted once it arrives intact.
    const again = deliver(b, [{ bytes: intact, slot: 0 }]);
    expect(again.map((r) => r[0])).toEqual([RecordType.PacketReceived, RecordType.Message, RecordType.Message]);
  });

  it("frame lengths past the end, and fragment rules, are MalformedFrame", async () => {
    const a = await wasmEngine();
    const b = await wasmEngine();
    a.resetSlot(0, 1);
    b.resetSlot(0, 1);
    const body = (frame: number[]) => sealControlPacket(a, new Uint8Array([0, 1, 0, 0, 0, 0, 0, 0, 0, ...frame]));
    const cases = [
      [0, 0, 0, 0, 5, 0, 1, 2], // length 5, 2 bytes present
      [0, 0, 0, 0], // header cut short
      [2, 0x08 | 2, 0, 0, 0, 0, 1, 0, 0, 0], // fragCount 1
      [2, 0x08 | 2, 0, 0, 3, 0, 3, 0, 0, 0], // fragIndex == fragCount
      [2, 0x08 | 2, 0, 0, 0, 0, 0x01, 0x04, 0, 0], // fragCount 1025 > 1024
    ];
    for (const frame of cases) {
      const recs = deliver(b, [{ bytes: body(frame), slot: 0 }]);
      expect(recs[0].slice(0, 3), JSON.stringify(frame)).toEqual([RecordType.DatagramDropped, 0, DropReason.MalformedFrame]);
    }
  });
});

describe("a pure ack's ack delay (PROTOCOL §2, version 6)", () => {
  for (const engineKind of ["wasm", "ts"] as const) {
    it(`a 2-byte frames area is no frame: received, acks scanned, nothing delivered (${engineKind})`, async () => {
      const make = () => (engineKind === "wasm" ? wasmEngine() : Promise.resolve(tsEngine()));
      const a = await make();
      const b = await make();
      a.resetSlot(0, 100);
      b.resetSlot(0, 7);
      const first = sealPacket(a, 0, [{ channel: 0, kind: DeliveryKind.Unreliable, seq: 0, payload: new Uint8Array([1]) }]);
      deliver(b, [{ bytes: first.bytes, slot: 0 }]);
      // b's pure ack of 100, reporting 12.3 ms of wait in the two bytes after its header.
      const at = b.layout.txArenaOffset;
      b.bytes[at + 9] = 123;
      b.bytes[at + 10] = 0;
      const seq = b.sealData(0, at, 2, PacketType.Data);
      const ack = b.bytes.slice(at, at + 15);
      expect(ack[0]).toBe(PacketType.Data | 0x10);
      expect([...ack.subarray(9, 11)]).toEqual([123, 0]);
      const recs = deliver(a, [{ bytes: ack, slot: 0 }]);
      expect(recs.map((r) => r.slice(0, 3))).toEqual([
        [RecordType.PacketReceived, 0, seq],
        [RecordType.Settled, 0, 100],
      ]);
      // 1, 3, 4 and 5 bytes are still a frame cut short.
      for (const n of [1, 3, 4, 5]) {
        b.bytes.fill(0, at + 9, at + 9 + n);
        b.sealData(0, at, n, PacketType.Data);
        const bad = deliver(a, [{ bytes: b.bytes.slice(at, at + 13 + n), slot: 0 }]);
        expect(bad.map((r) => r.slice(0, 3)), `${n} bytes`).toEqual([[RecordType.DatagramDropped, 0, DropReason.MalformedFrame]]);
      }
    });
  }
});

describe("packet type and length rules (PROTOCOL §1)", () => {
  const legal: [PacketType, number, number?][] = [
    [PacketType.ConnectRequest, 251],
    [PacketType.Challenge, 20],
    [PacketType.ConnectResponse, 36, 35],
    [PacketType.Accept, 10, 9],
    [PacketType.Deny, 7, 6],
    [PacketType.Disconnect, 7, 6],
    [PacketType.DisconnectAck, 4],
    [PacketType.NoConnection, 6],
    [PacketType.RebindRequest, 16],
    [PacketType.RebindChallenge, 16],
    [PacketType.RebindResponse, 16],
    [PacketType.NatPunch, 8],
  ];
  it.each(legal)("type %i: legal length gives Control, +-1 gives BadLength", async (type, fixed, udlAt) => {
    const e = await wasmEngine();
    const make = (bodyLength: number, udl = 0) => {
      const b = new Uint8Array(1 + bodyLength);
      b[0] = type;
      if (udlAt !== undefined && udlAt + 2 <= b.length) b[udlAt] = udl;
      return { bytes: sealControlPacket(e, b), slot: -1 };
    };
    const udl = udlAt !== undefined ? 3 : 0;
    const ok = deliver(e, [make(fixed + udl, udl)]);
    expect(ok[0].slice(0, 3)).toEqual([RecordType.Control, -1, type]);
    expect(ok[0][7]).toBe(fixed + udl);
    for (const delta of [-1, 1]) {
      if (fixed + udl + delta < 0) continue;
      const bad = deliver(e, [make(fixed + udl + delta, udl)]);
      expect(bad[0].slice(0, 3)).toEqual([RecordType.DatagramDropped, -1, DropReason.BadLength]);
    }
  });

  it("unknown types, reserved bits and ACKS_VALID on control types are UnknownType", async () => {
    const e = await wasmEngine();
    for (const typeByte of [14, 15, 0x20, 0x80, 0x11, 0x18, 0x1a]) {
      const recs = deliver(e, [{ bytes: sealControlPacket(e, new Uint8Array([typeByte, 0, 0, 0, 0])), slot: 0 }]);
      expect(recs[0].slice(0, 3), `type byte ${typeByte}`).toEqual([RecordType.DatagramDropped, 0, DropReason.UnknownType]);
    }
    expect(deliver(e, [{ bytes: new Uint8Array([0, 0, 0, 0]), slot: 0 }])[0][2]).toBe(DropReason.TooShort);
  });

  it("DATA from no slot is UnknownPeer; stale and duplicate packets are dropped", async () => {
    const a = await wasmEngine(config());
    const b = await wasmEngine(config());
    a.resetSlot(0, 65400);
    b.resetSlot(0, 0);
    const first = sealPacket(a, 0, []);
    expect(deliver(b, [{ bytes: first.bytes, slot: -1 }])[0].slice(0, 4)).toEqual([RecordType.UnknownPeer, -1, 0, 0]);
    expect(b.dropCount(DropReason.UnknownPeer)).toBe(1);
    deliver(b, [{ bytes: first.bytes, slot: 0 }]);
    expect(deliver(b, [{ bytes: first.bytes, slot: 0 }])[0][2]).toBe(DropReason.DuplicatePacket);
    for (let i = 0; i < 256; i++) deliver(b, [{ bytes: sealPacket(a, 0, []).bytes, slot: 0 }]); // newest = 65400+256 (wrapped)
    expect(deliver(b, [{ bytes: first.bytes, slot: 0 }])[0][2]).toBe(DropReason.StalePacket);
  });
});

describe("parity", () => {
  it("XOR of a group recovers any one missing packet", async () => {
    const e = await wasmEngine();
    const base = e.layout.txArenaOffset;
    const len = 37;
    const blocks = [0, 1, 2, 3].map((k) => base + k * 64);
    blocks.forEach((at, k) => {
      for (let i = 0; i < len; i++) e.bytes[at + i] = (i * 31 + k * 7 + 1) & 0xff;
    });
    const parityAt = base + 512;
    e.parity(parityAt, blocks, len);
    const lost = e.bytes.slice(blocks[2], blocks[2] + len);
    e.bytes.fill(0, blocks[2], blocks[2] + len);
    const recoveredAt = base + 1024;
    e.parity(recoveredAt, [blocks[0], blocks[1], blocks[3], parityAt], len);
    expect(e.bytes.slice(recoveredAt, recoveredAt + len)).toEqual(lost);
  });
});
