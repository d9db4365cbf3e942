// CRC32C per call on the WASM engine (the release build), for the sizes a datagram has: a pure
// ack (13 B), a small game packet (122 B) and a full 1000 B message's datagram (1020 B). Best of
// 5 runs of 200,000 calls each: the CRC's share of the per-message budget of the e2e goals.
//   node|bun|deno dist/bench/engine/crc-per-call.js
import { createWasmEngine } from "../../src/engine/wasm-engine.js";
import { DeliveryKind } from "../../src/engine/abi.js";
import { g } from "../lib/host.js";

const engine = await createWasmEngine({ protocolId: 1, maxSlots: 1, channels: [DeliveryKind.Unreliable] });
const at = engine.layout.txArenaOffset;
for (let i = 0; i < 1100; i++) engine.bytes[at + i] = (i * 7) & 0xff;
const result: Record<string, number> = {};
let sink = 0;
for (const length of [13, 122, 1020]) {
  let best = Infinity;
  for (let run = 0; run < 5; run++) {
    const calls = 200_000;
    const t0 = g.performance.now();
    for (let i = 0; i < calls; i++) sink ^= engine.crc32c(at, length);
    best = Math.min(best, ((g.performance.now() - t0) * 1e6) / calls);
  }
  result[`ns${length}`] = +best.toFixed(1);
}
g.console.log(JSON.stringify({ ...result, sink: sink & 1 }));
