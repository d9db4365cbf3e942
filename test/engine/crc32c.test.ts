// CRC-32C known answers (RFC 3720 §B.4) and the protocol-id prefix, on both engines.
import { describe, expect, it } from "vitest";
import { DropReason, PacketType, RecordType, type Engine } from "../../src/engine/abi.js";
import { config, deliver, sealControlPacket, sealPacket, tsEngine, wasmEngine, PROTOCOL_ID } from "./helpers.js";

const rfc3720ReadPdu = [
  0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
  0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

const vectors: [string, number[], number][] = [
  ["123456789", [..."123456789"].map((c) => c.charCodeAt(0)), 0xe3069283],
  ["32 bytes of zeros", new Array(32).fill(0), 0x8a9136aa],
  ["32 bytes of 0xFF", new Array(32).fill(0xff), 0x62a8ab43],
  ["32 incrementing bytes", Array.from({ length: 32 }, (_, i) => i), 0x46dd794e],
  ["32 decrementing bytes", Array.from({ length: 32 }, (_, i) => 31 - i), 0x113fdb5c],
  ["iSCSI SCSI Read(10) command PDU", rfc3720ReadPdu, 0xd9963a56],
  ["empty", [], 0],
];

function crcOf(engine: Engine, data: number[], misalign = 0): number {
  const at = engine.layout.txArenaOffset + misalign;
  engine.bytes.set(data, at);
  return engine.crc32c(at, data.length);
}

describe.each([
  ["wasm (debug)", () => wasmEngine()],
  ["wasm (release)", () => wasmEngine(config(), "release")],
  ["ts", async () => tsEngine()],
])("CRC-32C on the %s engine", (_name, make) => {
  it.each(vectors)("%s", async (_label, data, expected) => {
    const engine = await make();
    expect(crcOf(engine, data)).toBe(expected);
    expect(crcOf(engine, data, 3)).toBe(expected); // unaligned start
  });

  it("matches a bitwise reference on every length 0..80", async () => {
    const engine = await make();
    const data = Array.from({ length: 80 }, (_, i) => (i * 37 + 11) & 0xff);
    for (let n = 0; n <= 80; n++) expect(crcOf(engine, data.slice(0, n))).toBe(bitwiseCrc32c(data.slice(0, n)));
  });

  it("covers the protocol prefix: another protocolId gives BadCrc", async () => {
    const sender = await make();
    const other = tsEngine(config({ protocolId: PROTOCOL_ID ^ 1 }));
    const same = tsEngine();
    sender.resetSlot(0, 100);
    other.resetSlot(0, 0);
    same.resetSlot(0, 0);
    const { bytes } = sealPacket(sender, 0, []);
    // Prefix = "ackw" || protocolId, never sent: CRC over prefix + datagram.
    const prefixed = [0x61, 0x63, 0x6b, 0x77, PROTOCOL_ID & 0xff, (PROTOCOL_ID >>> 8) & 0xff, (PROTOCOL_ID >>> 16) & 0xff, PROTOCOL_ID >>> 24];
    const body = [...bytes.subarray(0, bytes.length - 4)];
    const crc = new DataView(bytes.buffer).getUint32(bytes.length - 4, true);
    expect(crc).toBe(bitwiseCrc32c([...prefixed, ...body]));
    expect(deliver(other, [{ bytes, slot: 0 }])[0].slice(0, 3)).toEqual([RecordType.DatagramDropped, 0, DropReason.BadCrc]);
    expect(other.dropCount(DropReason.BadCrc)).toBe(1);
    expect(deliver(same, [{ bytes, slot: 0 }])[0][0]).toBe(RecordType.PacketReceived);
  });
});

describe.each([
  ["wasm (debug)", () => wasmEngine()],
  ["wasm (release)", () => wasmEngine(config(), "release")],
  ["ts", async () => tsEngine()],
])("connection keys on the %s engine", (_name, make) => {
  const key = Uint8Array.from({ length: 24 }, (_, i) => (i * 29 + 5) & 0xff);
  const prefix = [0x61, 0x63, 0x6b, 0x77, PROTOCOL_ID & 0xff, (PROTOCOL_ID >>> 8) & 0xff, (PROTOCOL_ID >>> 16) & 0xff, PROTOCOL_ID >>> 24];

  it("a keyed slot's DATA carries CRC(prefix || key || datagram), remembered per sequence", async () => {
    const sender = await make();
    sender.resetSlot(3, 65534);
    sender.keySlot(3, key);
    for (let i = 0; i < 300; i++) {
      const { seq, bytes } = sealPacket(sender, 3, [{ channel: 0, kind: 0, seq: i, payload: Uint8Array.of(i & 0xff, 7) }]);
      const crc = new DataView(bytes.buffer).getUint32(bytes.length - 4, true);
      if (i < 3 || i > 296) expect(crc).toBe(bitwiseCrc32c([...prefix, ...key, ...bytes.subarray(0, bytes.length - 4)]));
      expect(sender.sentCrc(3, seq)).toBe(crc);
    }
    // Another slot, unkeyed: the protocol prefix alone.
    sender.resetSlot(2, 9);
    const plain = sealPacket(sender, 2, []);
    expect(new DataView(plain.bytes.buffer).getUint32(plain.bytes.length - 4, true)).toBe(bitwiseCrc32c([...prefix, ...plain.bytes.subarray(0, plain.bytes.length - 4)]));
  });

  it("only a slot with the same key accepts it; without a slot it is UnknownPeer with its sequence and CRC", async () => {
    const sender = await make();
    sender.resetSlot(0, 500);
    sender.keySlot(0, key);
    const { seq, bytes } = sealPacket(sender, 0, [{ channel: 0, kind: 0, seq: 0, payload: Uint8Array.of(1, 2, 3) }]);
    const crc = new DataView(bytes.buffer).getInt32(bytes.length - 4, true);
    const receiver = await make();
    receiver.resetSlot(0, 0);
    receiver.resetSlot(1, 0);
    receiver.keySlot(1, key.map((b, i) => (i === 23 ? b ^ 1 : b)));
    receiver.resetSlot(2, 0);
    receiver.keySlot(2, key);
    expect(deliver(receiver, [{ bytes, slot: 0 }])[0].slice(0, 3)).toEqual([RecordType.DatagramDropped, 0, DropReason.BadCrc]);
    expect(deliver(receiver, [{ bytes, slot: 1 }])[0].slice(0, 3)).toEqual([RecordType.DatagramDropped, 1, DropReason.BadCrc]);
    expect(deliver(receiver, [{ bytes, slot: 2 }])[0].slice(0, 3)).toEqual([RecordType.PacketReceived, 2, seq]);
    expect(receiver.dropCount(DropReason.BadCrc)).toBe(2);
    const unknown = deliver(receiver, [{ bytes, slot: -1 }])[0];
    expect([unknown[0], unknown[1], unknown[4], unknown[5]]).toEqual([RecordType.UnknownPeer, -1, seq, crc]);
    // Control packets keep the protocol prefix whatever the slot's key.
    const control = sealControlPacket(sender, Uint8Array.of(PacketType.NoConnection, 1, 2, 3, 4, 5, 6));
    expect(deliver(receiver, [{ bytes: control, slot: 2 }])[0].slice(0, 3)).toEqual([RecordType.Control, 2, PacketType.NoConnection]);
  });
});

/** Bit-at-a-time CRC-32C, straight from the definition (reflected poly 0x82F63B78). */
function bitwiseCrc32c(data: number[]): number {
  let crc = 0xffffffff;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}
