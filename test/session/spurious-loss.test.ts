/**
 * Spurious loss declarations (the loopback symptom: packets the sender declared lost = packets
 * the receiver got twice). On a lossless link every declared loss is spurious, so the tests
 * count `packets.dropped` at the sender and duplicates at the receiver, both of which must be 0.
 *
 * - Burst: many packets leave in one driver pass, so they share one send time `now`. A
 *   bandwidth cap spreads their arrival; the first acks come back while most of the burst is
 *   still queued. RFC 9002 §6.1.2 declares by time only packets sent BEFORE the largest
 *   acknowledged one (by packet number); a same-`now` packet sent after it must not qualify.
 * - Delay jump: the one-way delay jumps from 0.2 ms to 15 ms in the middle of a steady stream
 *   (a busy process on loopback). The time threshold is 9/8 x max(srtt, latest RTT) of packets
 *   before an acknowledged one; with in-order delivery there are none, so only the RTO can fire.
 */
import { describe, expect, it } from "vitest";
import type { LinkConfig } from "../../src/sim/link.js";
import { connectPair, makePair, payload, checkPayload } from "./helpers.js";

function burst(seed: number, congestion: "none" | "default", engine: "ts" | "wasm") {
  const pair = makePair(seed, {
    server: { engine },
    client: { engine, congestion },
    pair: { link: { latencyMs: 0.2, bandwidthBps: 50e6, queuePackets: 1000 } },
  });
  const [c, s] = connectPair(pair);
  const count = 200;
  let received = 0;
  let corrupt = 0;
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < count; i++) pair.client.send(c, payload(round * count + i, 1000), { channel: 0 });
    pair.network.flush();
    for (let t = 0; t < 500; t += 10) {
      pair.drive({ maxTimeMs: 10, maxSteps: 100_000 });
      for (const ev of pair.serverEvents()) {
        if (ev.type !== "message") continue;
        if (checkPayload(ev.data) < 0) corrupt++;
        received++;
      }
    }
  }
  const sender = pair.client.stats(c);
  return { received, corrupt, declaredLost: sender.packets.dropped, receiverDuplicates: pair.server.stats(s).duplicates, lossRate: sender.lossRate };
}

function delayJump(seed: number, engine: "ts" | "wasm") {
  const pair = makePair(seed, { server: { engine }, client: { engine, congestion: "none" }, pair: { link: { latencyMs: 0.2 } } });
  const [c, s] = connectPair(pair);
  let received = 0;
  let index = 0;
  // 1 ms ticks of 4 messages; after 300 ms the delay jumps to 15 ms for 200 ms, then back.
  for (let tick = 0; tick < 800; tick++) {
    if (tick === 300) (pair.toServer.config as LinkConfig).latencyMs = 15;
    if (tick === 500) (pair.toServer.config as LinkConfig).latencyMs = 0.2;
    for (let k = 0; k < 4; k++) pair.client.send(c, payload(index++, 300), { channel: 0 });
    pair.network.flush();
    pair.drive({ maxTimeMs: 1, maxSteps: 100_000 });
    for (const ev of pair.serverEvents()) if (ev.type === "message") received++;
  }
  pair.drive({ maxTimeMs: 500, maxSteps: 100_000 });
  for (const ev of pair.serverEvents()) if (ev.type === "message") received++;
  const sender = pair.client.stats(c);
  return { sent: index, received, declaredLost: sender.packets.dropped, receiverDuplicates: pair.server.stats(s).duplicates };
}

describe("spurious loss declarations on a lossless link", () => {
  for (const [seed, congestion, engine] of [[901, "none", "ts"], [902, "default", "ts"], [903, "none", "wasm"]] as const) {
    it(`bursts of 200 x 1000 B sharing one send time: no packet declared lost (seed ${seed}, ${congestion}, ${engine})`, () => {
      const r = burst(seed, congestion, engine);
      const info = `seed ${seed}: ${JSON.stringify(r)}`;
      expect(r.received, info).toBe(1000);
      expect(r.corrupt, info).toBe(0);
      expect(r.declaredLost, info).toBe(0);
      expect(r.receiverDuplicates, info).toBe(0);
    });
  }

  for (const [seed, engine] of [[911, "ts"], [912, "wasm"]] as const) {
    it(`one-way delay jumps 0.2 -> 15 ms mid-stream: no packet declared lost (seed ${seed}, ${engine})`, () => {
      const r = delayJump(seed, engine);
      const info = `seed ${seed}: ${JSON.stringify(r)}`;
      expect(r.received, info).toBe(r.sent);
      expect(r.declaredLost, info).toBe(0);
      expect(r.receiverDuplicates, info).toBe(0);
    });
  }
});
