/**
 * What an authenticated peer (it completed a handshake, so it holds the connection's key) can
 * make the other side hold or compute: found by a hostile-peer review, each case failing on the
 * code before its fix.
 */
import { describe, expect, it } from "vitest";
import type { Endpoint } from "../../src/session/endpoint.js";
import { connectPair, makePair, payload } from "./helpers.js";

interface ConnInternals {
  channels: { receiveBufferedBytes(): number };
  clock?: { accepted: number; rejected: number };
  onSystemMessage(now: number, arena: Uint8Array, offset: number, length: number): void;
}
function connectionOf(ep: Endpoint, id: number): ConnInternals | undefined {
  return (ep as unknown as { byId: Map<number, ConnInternals> }).byId.get(id);
}

describe("a hostile peer", () => {
  it("cannot make a closing connection hold its data (the receive bound did not apply while disconnecting)", () => {
    const seed = 811;
    const bound = 16_384;
    const channels = [{ mode: "reliable-unordered" as const }];
    // The client stands in for a peer that ignores the server: no congestion control, so it
    // keeps sending without acks.
    const pair = makePair(seed, { server: { maxReceiveBufferBytes: bound, channels }, client: { channels, congestion: "none" }, pair: { link: { latencyMs: 5 } } });
    const [c, s] = connectPair(pair);
    // The server closes; its DISCONNECTs never reach the client, which keeps sending large
    // fragmented messages. A tenth of its datagrams are lost on the way, so most messages miss
    // a fragment and the server would hold the rest.
    pair.network.link(pair.serverAddress, pair.clientAddress, { latencyMs: 5, lossRate: 1 });
    pair.network.link(pair.clientAddress, pair.serverAddress, { latencyMs: 5, lossRate: 0.1 });
    pair.server.close(s, "normal", undefined, { linger: false });
    let peak = 0;
    for (let i = 0; i < 60 && pair.client.connections().includes(c); i++) {
      pair.client.send(c, payload(i, 40_000), { channel: 0 });
      pair.drive({ maxTimeMs: 20 });
      const conn = connectionOf(pair.server, s);
      if (conn === undefined) break;
      peak = Math.max(peak, conn.channels.receiveBufferedBytes());
    }
    expect(peak, `seed ${seed}`).toBeLessThanOrEqual(bound);
  });

  it("cannot feed a client clock replies it never asked for (each cost a sort of up to 256 samples)", () => {
    const seed = 812;
    const pair = makePair(seed, { pair: { link: { latencyMs: 10 } } });
    const [c] = connectPair(pair);
    pair.drive({ maxTimeMs: 500 });
    const conn = connectionOf(pair.client, c)!;
    const clock = conn.clock!;
    const accepted = clock.accepted;
    expect(accepted, `seed ${seed}`).toBeGreaterThan(0);
    const invalidBefore = pair.client.stats(c).invalid;
    // CLOCK_REPLY (type 2): u32 echo of a request's send time, f64 server time.
    const arena = new Uint8Array(13);
    const view = new DataView(arena.buffer);
    arena[0] = 2;
    for (let k = 0; k < 100; k++) {
      view.setUint32(1, (Math.floor(pair.now) - 3 - k) >>> 0, true);
      view.setFloat64(5, pair.now + 1e6, true);
      conn.onSystemMessage(pair.now, arena, 0, 13);
    }
    expect(clock.accepted, `seed ${seed}`).toBe(accepted);
    expect(pair.client.stats(c).invalid - invalidBefore, `seed ${seed}`).toBe(100);
    // Real replies still count, once each.
    pair.drive({ maxTimeMs: 1000 });
    expect(clock.accepted, `seed ${seed}`).toBeGreaterThan(accepted);
    expect(Math.abs(pair.client.stats(c).clockOffsetMs as number), `seed ${seed}`).toBeLessThan(20);
  });
});
