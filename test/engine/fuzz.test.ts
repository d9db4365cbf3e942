// Fuzz: over a million random and mutated datagrams through the WASM engine (release build):
// no trap, memory never grows, and every datagram ends as exactly one datagram-level record
// (PacketReceived, Control, UnknownPeer or DatagramDropped). Between batches the host side of
// the sent ring is driven with wild arguments: the ring's counters stay true to its entries.
import { describe, expect, it } from "vitest";
import { DESCRIPTOR_INTS, MAX_DATAGRAM_BYTES, PACKET_WINDOW, RECORD_INTS, RecordType, SlotField, WINDOW_ENTRY_PRESENT, type Engine } from "../../src/engine/abi.js";
import { oldestEliciting } from "../../src/recovery/sent-ring.js";
import { config, tsEngine, wasmEngine, rng } from "./helpers.js";
import { HostileStream } from "./streams.js";

const TOTAL = 1_000_000;
const SEED = 0xac1e;

describe("fuzz the WASM engine", () => {
  it(`${TOTAL} datagrams through the release build: no trap, no growth, all accounted (seed ${SEED})`, async () => {
    await fuzz("release", TOTAL);
  }, 180_000);
  it(`100000 datagrams through the debug build, assertions on (seed ${SEED})`, async () => {
    await fuzz("debug", 100_000);
  }, 180_000);
});

async function fuzz(build: "release" | "debug", total: number): Promise<void> {
  const TOTAL = total;
  const rand = rng(SEED);
  const cfg = config({ maxSlots: 2 });
  const engine = await wasmEngine(cfg, build);
  const memoryBytes = engine.bytes.buffer.byteLength;
  const peer = tsEngine(cfg);
  peer.resetSlot(0, 65530);
  engine.resetSlot(0, 3);
  // A pool of seeds: hostile-stream datagrams (valid, malformed, control, garbage with CRC).
  const stream = new HostileStream(peer, cfg.channels, rand);
  const pool = Array.from({ length: 4096 }, () => stream.next().bytes);
  const batch = 64;
  const { bytes, descriptors, records } = engine;
  const rx = engine.layout.rxArenaOffset;
  let accounted = 0;
  let done = 0;
  const deadline = Date.now() + 120_000; // bound by time as well as count
  while (done < TOTAL && Date.now() < deadline) {
    for (let i = 0; i < batch; i++) {
      const at = rx + i * MAX_DATAGRAM_BYTES;
      const src = pool[(rand() * pool.length) | 0];
      let len = src.length;
      const mode = (rand() * 8) | 0;
      if (mode < 3) {
        bytes.set(src, at);
        // Overwrite 1-3 random bytes: mostly BadCrc; replays below reach the parsers.
        for (let k = 0; k <= mode; k++) bytes[at + ((rand() * len) | 0)] = (rand() * 256) | 0;
      } else if (mode < 5) {
        bytes.set(src, at); // replay verbatim: duplicates, stale, valid garbage behind a good CRC
      } else if (mode < 6) {
        len = (rand() * src.length) | 0; // truncated
        bytes.set(src.subarray(0, len), at);
      } else {
        len = (rand() * MAX_DATAGRAM_BYTES) | 0; // random bytes, random length (to 1500)
        for (let k = 0; k < len; k += 4) {
          const r = (rand() * 0x100000000) >>> 0;
          bytes[at + k] = r;
          bytes[at + k + 1] = r >>> 8;
          bytes[at + k + 2] = r >>> 16;
          bytes[at + k + 3] = r >>> 24;
        }
      }
      descriptors[i * DESCRIPTOR_INTS] = at;
      descriptors[i * DESCRIPTOR_INTS + 1] = len;
      descriptors[i * DESCRIPTOR_INTS + 2] = rand() < 0.02 ? -1 : 0;
    }
    let offset = 0;
    while (offset < batch) {
      // processBatch always starts at descriptor 0: shift the unconsumed rest down.
      const n = engine.processBatch(batch - offset);
      for (let r = 0; r < n; r++) {
        const type = records[r * RECORD_INTS];
        if (type === RecordType.PacketReceived || type === RecordType.Control || type === RecordType.UnknownPeer || type === RecordType.DatagramDropped)
          accounted++;
      }
      const c = engine.consumed();
      expect(c).toBeGreaterThan(0);
      descriptors.copyWithin(0, c * DESCRIPTOR_INTS, (batch - offset) * DESCRIPTOR_INTS);
      offset += c;
    }
    done += batch;
    driveSentRing(engine, rand);
    expect(engine.bytes.buffer.byteLength).toBe(memoryBytes);
  }
  expect(done).toBeGreaterThanOrEqual(TOTAL);
  expect(accounted).toBe(done);
  expect(engine.bytes.buffer.byteLength).toBe(memoryBytes);
}

const WILD_TIMES = [NaN, Infinity, -Infinity, -1, 0, 1e300, 5, 1e-9];

function wildTime(rand: () => number): number {
  return rand() < 0.3 ? WILD_TIMES[(rand() * WILD_TIMES.length) | 0] : rand() * 10_000;
}

/** Seal, lose and acknowledge on slot 0 with hostile arguments; check the ring's counters. */
function driveSentRing(engine: Engine, rand: () => number): void {
  const at = engine.layout.txArenaOffset;
  for (let k = (rand() * 8) | 0; k > 0; k--) {
    if (rand() < 0.5) engine.evictNext(0);
    engine.sealData(0, at, (rand() * 1400) | 0, 0, wildTime(rand), rand() < 0.7);
  }
  const n = engine.detectLosses(0, wildTime(rand), wildTime(rand), wildTime(rand), 1 + ((rand() * (rand() < 0.5 ? 4 : 1e9)) | 0));
  expect(n).toBeGreaterThanOrEqual(0);
  expect(n).toBeLessThanOrEqual(PACKET_WINDOW);
  engine.acknowledge(0, (rand() * 65536) | 0);
  const base = engine.layout.slotOffset >> 2;
  const oldest = oldestEliciting(engine.u32, base, base + (SlotField.SentWindow >> 2));
  expect(oldest).toBeGreaterThanOrEqual(-1);
  // dropAll's call (SentRing): everything in flight lost.
  if (rand() < 0.01) expect(engine.detectLosses(0, 0, -Infinity, Infinity, 1)).toBeLessThanOrEqual(PACKET_WINDOW);
  let present = 0;
  let bytes = 0;
  for (let i = 0; i < PACKET_WINDOW; i++) {
    const e = engine.u32[base + (SlotField.SentWindow >> 2) + i];
    if (e & WINDOW_ENTRY_PRESENT) {
      present++;
      bytes += (e >>> 19) & 0x7ff;
    }
  }
  expect(engine.u32[base + (SlotField.InFlight >> 2)]).toBe(present);
  expect(engine.u32[base + (SlotField.BytesInFlight >> 2)]).toBe(bytes);
}
