/** Seed 004's copies through real Endpoints on the simulator: an unreliable-sequenced stream
 *  with redundancy loses far fewer states at 10% loss, and never delivers older after newer. */
import { describe, expect, it } from "vitest";
import type { ChannelConfig } from "../../src/session/types.js";
import { checkPayload, connectPair, makePair, payload } from "./helpers.js";

interface Run {
  arrived: number;
  sent: number;
  regressions: number;
  corrupt: number;
  /** The sender's and the receiver's connection stats at the end. */
  copiesSent: number;
  copyBytes: number;
  resends: number;
  copiesDropped: number;
}

function run(redundancy: number, seed: number): Run {
  const channels: ChannelConfig[] = [{ mode: "unreliable-sequenced", redundancy }];
  const pair = makePair(seed, { server: { channels }, client: { channels }, pair: { link: { lossRate: 0.1, latencyMs: 20 } } });
  const [c, s] = connectPair(pair);
  const sent = 600;
  let arrived = 0;
  let regressions = 0;
  let corrupt = 0;
  let newest = -1;
  for (let i = 0; i < sent; i++) {
    pair.client.send(c, payload(i, 32), { channel: 0 }, pair.now);
    pair.advance(33); // 30 Hz
    for (const ev of pair.serverEvents()) {
      if (ev.type !== "message") continue;
      const index = checkPayload(ev.data);
      if (index < 0) corrupt++;
      else {
        if (index <= newest) regressions++;
        newest = Math.max(newest, index);
        arrived++;
      }
    }
  }
  const sender = pair.client.stats(c);
  const receiver = pair.server.stats(s);
  return { arrived, sent, regressions, corrupt, copiesSent: sender.copiesSent, copyBytes: sender.copyBytes, resends: sender.resends, copiesDropped: receiver.copiesDropped };
}

describe("redundancy through the session", () => {
  it("unreliable-sequenced at 10% loss: redundancy 2 loses under 2% of states (vs ~10% without), never older after newer", () => {
    const seed = 611;
    const off = run(0, seed);
    const on = run(2, seed);
    const lostOff = 1 - off.arrived / off.sent;
    const lostOn = 1 - on.arrived / on.sent;
    expect(lostOff, `seed ${seed}: without copies`).toBeGreaterThan(0.05);
    expect(lostOn, `seed ${seed}: with 2 copies`).toBeLessThan(0.02);
    for (const r of [off, on]) {
      expect(r.regressions, `seed ${seed}`).toBe(0);
      expect(r.corrupt, `seed ${seed}`).toBe(0);
    }
    // The connection's stats show the copies: two per message sent (after the first two), never
    // as resends; and the receiver discarded the ones whose original had arrived.
    expect(off.copiesSent + off.copyBytes + off.copiesDropped, `seed ${seed}`).toBe(0);
    expect(on.copiesSent, `seed ${seed}`).toBeGreaterThanOrEqual(2 * (on.sent - 2));
    expect(on.copyBytes, `seed ${seed}`).toBeGreaterThanOrEqual(32 * on.copiesSent);
    expect(on.resends, `seed ${seed}`).toBe(0);
    expect(on.copiesDropped, `seed ${seed}`).toBeGreaterThan(on.sent);
  });
});
