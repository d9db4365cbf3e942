// Loads the compiled WASM engine (dist/) on whatever runtime runs this file, round-trips a
// sealed DATA packet through processBatch, and prints one JSON line. Run by runtimes.test.ts
// under Bun and Deno (and Node).
import { createWasmEngine } from "../../dist/src/engine/wasm-engine.js";

const runtime = typeof globalThis.Bun !== "undefined" ? "bun" : typeof globalThis.Deno !== "undefined" ? "deno" : "node";
const build = (globalThis.Deno ? Deno.args : process.argv.slice(2))[0] ?? "release";
const config = { protocolId: 0xc0ffee, maxSlots: 2, channels: [3] };
const a = await createWasmEngine(config, { build });
const b = await createWasmEngine(config, { build });
a.resetSlot(0, 65535);
b.resetSlot(1, 100);

// One ReliableOrdered frame: channel 0, flags 3, messageSeq 0, length 5, "hello".
const tx = a.layout.txArenaOffset;
const frame = [0, 3, 0, 0, 5, 0, ..."hello"].map((c) => (typeof c === "string" ? c.charCodeAt(0) : c));
a.bytes.set(frame, tx + 9);
const seq = a.sealData(0, tx, frame.length, 0);
const length = 13 + frame.length;

const rx = b.layout.rxArenaOffset;
b.bytes.set(a.bytes.subarray(tx, tx + length), rx);
b.descriptors.set([rx, length, 1, 0], 0);
const n = b.processBatch(1);
const records = [];
for (let r = 0; r < n; r++) records.push(Array.from(b.records.subarray(r * 8, r * 8 + 8)));
const message = records.find((r) => r[0] === 5);
const payload = message ? String.fromCharCode(...b.bytes.subarray(message[6], message[6] + message[7])) : null;
console.log(JSON.stringify({ runtime, build, seq, records, payload, memoryBytes: b.bytes.byteLength }));
