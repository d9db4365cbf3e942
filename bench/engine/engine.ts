/**
 * Engine micro-benchmark, one runtime per process (Node, Bun or Deno run the compiled
 * dist/bench/engine/engine.js). The same batches of sealed DATA packets — frames on a
 * reliable-ordered channel, some out of order, acks of the receiver's own packets — go through
 * the WASM engine and the TypeScript reference engine: copy into the receive arena, CRC,
 * header, receive window, ack scan, frame parse, reorder, then one reply sealed per batch.
 * Prints one JSON line: {"runtime", "100": {wasm, ts, ratio}, "1200": {...}}.
 *
 *   node dist/bench/engine/engine.js [--quick]
 */
import { DeliveryKind, DESCRIPTOR_INTS, MAX_DATAGRAM_BYTES, PacketType, RECORD_INTS, type Engine, type EngineConfig } from "../../src/engine/abi.js";
import { TsEngine } from "../../src/engine/ts-engine.js";
import { createWasmEngine } from "../../src/engine/wasm-engine.js";

declare const console: { log(...args: unknown[]): void };
declare const performance: { now(): number };
interface RuntimeGlobals {
  Bun?: unknown;
  Deno?: { args: string[] };
  process?: { argv: string[] };
}
const g = globalThis as unknown as RuntimeGlobals;
const runtime = g.Bun !== undefined ? "bun" : g.Deno !== undefined ? "deno" : "node";
const args = g.Deno ? g.Deno.args : (g.process?.argv.slice(2) ?? []);
const quick = args.includes("--quick");

const BATCH = 64;
const BATCHES = 32; // 2048 packets per pass
const SENDER_START = 65000; // crosses the 65535 -> 0 wrap during a pass
const RECEIVER_START = 40000;
const CONFIG: EngineConfig = {
  protocolId: 0x5eed,
  maxSlots: 4,
  channels: [DeliveryKind.ReliableOrdered, DeliveryKind.Unreliable],
};

/** Pre-build the traffic (with the TS engine on both ends) for `packetBytes`-byte packets. */
function buildStream(packetBytes: number): Uint8Array[][] {
  const sender = new TsEngine(CONFIG);
  const receiver = new TsEngine(CONFIG);
  sender.resetSlot(0, SENDER_START);
  receiver.resetSlot(0, RECEIVER_START);
  const framesPerPacket = packetBytes >= 600 ? 4 : 1;
  const payload = Math.floor((packetBytes - 13) / framesPerPacket) - 6;
  let messageSeq = 0;
  const batches: Uint8Array[][] = [];
  for (let b = 0; b < BATCHES; b++) {
    const batch: Uint8Array[] = [];
    for (let k = 0; k < BATCH; k++) {
      const tx = sender.layout.txArenaOffset;
      let p = tx + 9;
      for (let f = 0; f < framesPerPacket; f++) {
        // Every 8th pair of messages is swapped: a Hold then a Message + Release.
        let seq = messageSeq++;
        if (seq % 16 === 6) seq++;
        else if (seq % 16 === 7) seq--;
        const bytes = sender.bytes;
        bytes[p] = 0;
        bytes[p + 1] = DeliveryKind.ReliableOrdered;
        bytes[p + 2] = seq & 0xff;
        bytes[p + 3] = (seq >> 8) & 0xff;
        bytes[p + 4] = payload & 0xff;
        bytes[p + 5] = payload >> 8;
        for (let i = 0; i < payload; i++) bytes[p + 6 + i] = (seq + i) & 0xff;
        p += 6 + payload;
      }
      sender.sealData(0, tx, p - tx - 9, PacketType.Data);
      batch.push(sender.bytes.slice(tx, p + 4));
    }
    // The receiver answers each batch; the sender's next packets ack that answer.
    feed(receiver, batch);
    const reply = receiver.layout.txArenaOffset;
    receiver.sealData(0, reply, 0, PacketType.Keepalive);
    const rx = sender.layout.rxArenaOffset;
    sender.bytes.set(receiver.bytes.subarray(reply, reply + 13), rx);
    sender.descriptors.set([rx, 13, 0, 0], 0);
    sender.processBatch(1);
    batches.push(batch);
  }
  return batches;
}

/** Copy a batch into the receive arena, process it, read every record. Returns records seen. */
function feed(engine: Engine, batch: Uint8Array[]): number {
  const { bytes, descriptors, records } = engine;
  const rx = engine.layout.rxArenaOffset;
  for (let i = 0; i < batch.length; i++) {
    const at = rx + i * MAX_DATAGRAM_BYTES;
    bytes.set(batch[i], at);
    const d = i * DESCRIPTOR_INTS;
    descriptors[d] = at;
    descriptors[d + 1] = batch[i].length;
    descriptors[d + 2] = 0;
  }
  const n = engine.processBatch(batch.length);
  let check = 0;
  for (let r = 0; r < n; r++) check += records[r * RECORD_INTS];
  return check;
}

/** One pass over the stream: a fresh slot, every batch, one reply sealed per batch. */
function pass(engine: Engine, stream: Uint8Array[][]): number {
  engine.resetSlot(0, RECEIVER_START);
  let check = 0;
  const reply = engine.layout.txArenaOffset;
  for (const batch of stream) {
    check += feed(engine, batch);
    engine.sealData(0, reply, 0, PacketType.Keepalive);
  }
  return check;
}

/** Packets per second over repeated passes for about `ms` milliseconds. */
function measure(engine: Engine, stream: Uint8Array[][], ms: number): number {
  const packets = BATCH * stream.length;
  let passes = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms && passes < 1_000_000) {
    pass(engine, stream);
    passes++;
    now = performance.now();
  }
  return (passes * packets) / ((now - start) / 1000);
}

async function main(): Promise<void> {
  const wasm = await createWasmEngine(CONFIG, { build: "release" });
  const ts = new TsEngine(CONFIG);
  const out: Record<string, unknown> = { runtime };
  const rounds = quick ? 3 : 5;
  const slice = quick ? 300 : 1000;
  for (const size of [100, 1200]) {
    const stream = buildStream(size);
    // Both engines must see the same work: compare their record checksums once.
    const a = pass(wasm, stream);
    const b = pass(ts, stream);
    if (a !== b) throw new Error(`engines disagree on the bench stream (${a} != ${b})`);
    // Warm up, then alternate engines and keep each one's best slice.
    measure(wasm, stream, slice / 2);
    measure(ts, stream, slice / 2);
    let bestWasm = 0;
    let bestTs = 0;
    for (let r = 0; r < rounds; r++) {
      bestWasm = Math.max(bestWasm, measure(wasm, stream, slice));
      bestTs = Math.max(bestTs, measure(ts, stream, slice));
    }
    out[String(size)] = { wasm: Math.round(bestWasm), ts: Math.round(bestTs), ratio: Math.round((bestWasm / bestTs) * 100) / 100 };
  }
  console.log(JSON.stringify(out));
}

await main();
