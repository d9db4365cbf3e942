// Shared test helpers: engines, frame writing, moving datagrams between two engines.
import {
  DATA_HEADER_BYTES,
  DESCRIPTOR_INTS,
  DeliveryKind,
  FRAME_FLAG_FRAGMENT,
  MAX_DATAGRAM_BYTES,
  DatagramDroppedRecord,
  PacketType,
  RECORD_INTS,
  RecordHeader,
  RecordType,
  type Engine,
  type EngineConfig,
} from "../../src/engine/abi.js";
import { TsEngine } from "../../src/engine/ts-engine.js";
import { createWasmEngine, type WasmBuild } from "../../src/engine/wasm-engine.js";

export const PROTOCOL_ID = 0x1234abcd;

/** Where datagram-level records keep their datagram index. */
const DATAGRAM_FIELD = DatagramDroppedRecord.Datagram;

/** One channel of every kind, plus a second ReliableOrdered channel. */
export const ALL_KINDS: DeliveryKind[] = [
  DeliveryKind.Unreliable,
  DeliveryKind.UnreliableSequenced,
  DeliveryKind.ReliableUnordered,
  DeliveryKind.ReliableOrdered,
  DeliveryKind.ReliableSequenced,
  DeliveryKind.LatestState,
  DeliveryKind.ReliableOrdered,
];

export function config(overrides: Partial<EngineConfig> = {}): EngineConfig {
  return { protocolId: PROTOCOL_ID, maxSlots: 4, channels: ALL_KINDS, ...overrides };
}

export async function wasmEngine(cfg: EngineConfig = config(), build: WasmBuild = "debug"): Promise<Engine> {
  return createWasmEngine(cfg, { build });
}

export function tsEngine(cfg: EngineConfig = config()): Engine {
  return new TsEngine(cfg);
}

export interface FrameSpec {
  channel: number;
  kind: DeliveryKind;
  seq: number;
  fragment?: [index: number, count: number];
  key?: number;
  payload: Uint8Array;
  /** Extra frame flag bits (a GAP frame's FRAME_FLAG_GAP). */
  flags?: number;
}

/** Write one frame at `at` (PROTOCOL §3); returns the offset after it. */
export function writeFrame(bytes: Uint8Array, at: number, f: FrameSpec): number {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  bytes[at] = f.channel;
  bytes[at + 1] = f.kind | (f.fragment ? FRAME_FLAG_FRAGMENT : 0) | (f.flags ?? 0);
  v.setUint16(at + 2, f.seq & 0xffff, true);
  let p = at + 4;
  if (f.fragment) {
    v.setUint16(p, f.fragment[0], true);
    v.setUint16(p + 2, f.fragment[1], true);
    p += 4;
  }
  if (f.kind === DeliveryKind.LatestState) {
    v.setUint32(p, (f.key ?? 0) >>> 0, true);
    p += 4;
  }
  v.setUint16(p, f.payload.length, true);
  bytes.set(f.payload, p + 2);
  return p + 2 + f.payload.length;
}

export function frameBytes(f: FrameSpec): number {
  return 6 + (f.fragment ? 4 : 0) + (f.kind === DeliveryKind.LatestState ? 4 : 0) + f.payload.length;
}

/** Seal a DATA (or KEEPALIVE when `frames` is empty and `keepalive`) packet; returns a copy. */
export function sealPacket(engine: Engine, slot: number, frames: FrameSpec[], keepalive = false): { seq: number; bytes: Uint8Array } {
  const at = engine.layout.txArenaOffset;
  let p = at + DATA_HEADER_BYTES;
  for (const f of frames) p = writeFrame(engine.bytes, p, f);
  const framesLength = p - at - DATA_HEADER_BYTES;
  const seq = engine.sealData(slot, at, framesLength, keepalive ? PacketType.Keepalive : PacketType.Data);
  return { seq, bytes: engine.bytes.slice(at, at + framesLength + 13) };
}

/** Seal a control packet from its type byte + body; returns a copy with the CRC. */
export function sealControlPacket(engine: Engine, typeAndBody: Uint8Array): Uint8Array {
  const at = engine.layout.txArenaOffset;
  engine.bytes.set(typeAndBody, at);
  const n = engine.sealControl(at, typeAndBody.length);
  return engine.bytes.slice(at, at + n);
}

export type Rec = number[];

/** Feed datagrams (up to the batch size each call) and collect every record, in order. */
export function deliver(engine: Engine, datagrams: { bytes: Uint8Array; slot: number }[], batch = 64): Rec[] {
  const out: Rec[] = [];
  let next = 0;
  let guard = 0;
  while (next < datagrams.length && guard++ < datagrams.length + 10) {
    const n = Math.min(batch, datagrams.length - next);
    for (let i = 0; i < n; i++) {
      const d = datagrams[next + i];
      const at = engine.layout.rxArenaOffset + i * MAX_DATAGRAM_BYTES;
      const len = Math.min(d.bytes.length, MAX_DATAGRAM_BYTES);
      engine.bytes.set(d.bytes.subarray(0, len), at);
      engine.descriptors[i * DESCRIPTOR_INTS] = at;
      engine.descriptors[i * DESCRIPTOR_INTS + 1] = len;
      engine.descriptors[i * DESCRIPTOR_INTS + 2] = d.slot;
      engine.descriptors[i * DESCRIPTOR_INTS + 3] = 0;
    }
    const count = engine.processBatch(n);
    for (let r = 0; r < count; r++) {
      const rec = Array.from(engine.records.subarray(r * RECORD_INTS, (r + 1) * RECORD_INTS));
      // The datagram index of datagram-level records is relative to the batch: make it global.
      // All four keep it at the same position (DATAGRAM_FIELD).
      const type = rec[RecordHeader.Type];
      if (
        type === RecordType.DatagramDropped ||
        type === RecordType.PacketReceived ||
        type === RecordType.Control ||
        type === RecordType.UnknownPeer
      )
        rec[DATAGRAM_FIELD] += next;
      out.push(rec);
    }
    next += engine.consumed();
  }
  return out;
}

/** Deterministic PRNG (mulberry32) for test data; tests print their seed on failure. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
