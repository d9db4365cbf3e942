/**
 * After a bulk transfer a game goes back to its light 30 Hz stream: the reported bandwidth
 * estimate (stats().bandwidthEstimateBps, the "bandwidth" event) must stay at what the path
 * carried, not fall to the stream's own rate (found by a game-developer review: 2 Mbit/s during
 * a level download, ~80 kbit/s a second after it, so a game sizing its next download or its
 * snapshot rate by it would pick 80 kbit/s). The controller's model of a light flow follows the
 * flow's own rate on purpose (docs/CONGESTION.md, networkLimited()); the report keeps what the
 * model said when the network last limited the flow, until a new such spell measures again:
 * lower here, after the path slows down.
 */
import { describe, expect, it } from "vitest";
import { DefaultController } from "../../src/congestion/default.js";
import { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointEvent } from "../../src/session/types.js";
import type { LinkConfig } from "../../src/sim/link.js";
import { Pair } from "../../src/sim/network.js";

const PROTOCOL_ID = 0x0a9e1111;

function bulkThenLight(seed: number, lightSeconds = 6, slowDown = true): { duringBulkBps: number; afterBps: number[]; events: number[]; slowerBps: number; estimates: number[] } {
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: seed * 2 + 1 });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: seed * 2 + 2 });
  const events: number[] = [];
  let s = -1;
  const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, {
    seed,
    toServer: { latencyMs: 20 },
    toClient: { latencyMs: 20, bandwidthBps: 2_000_000, queuePackets: 40 },
    onEvent: (address, ev) => {
      if (address !== pair.serverAddress) return;
      if (ev.type === "bandwidth") events.push(ev.bitsPerSecond);
      if (ev.type === "connect") s = ev.connection;
    },
  });
  client.connect(pair.now, pair.serverAddress);
  for (let i = 0; i < 400 && s < 0; i++) pair.drive({ maxTimeMs: 10, maxSteps: 10_000 });
  expect(s).toBeGreaterThanOrEqual(0);
  const start = pair.now;
  const big = new Uint8Array(1000);
  const small = new Uint8Array(200);
  let duringBulkBps = 0;
  const afterBps: number[] = [];
  let slowerBps = 0;
  const total = slowDown ? 20 : 6 + lightSeconds;
  const estimates: number[] = [];
  for (let tick = 0; tick < total * 30; tick++) {
    pair.drive({ until: start + (tick * 1000) / 30, maxSteps: 200_000 });
    // At 12 s the path slows to 500 kbit/s, and a second download starts.
    if (slowDown && tick === 12 * 30) (pair.toClient.config as LinkConfig).bandwidthBps = 500_000;
    if (tick < 6 * 30 || (slowDown && tick >= 12 * 30)) {
      // Bulk: keep ~64 KB queued on the reliable channel (the level download).
      while (server.stats(s).queuedBytes < 64_000) server.send(s, big, { channel: 6 }, pair.now);
      if (tick === 6 * 30 - 1) duringBulkBps = server.stats(s).bandwidthEstimateBps;
    }
    // The game's snapshot stream, all along.
    server.send(s, small, { channel: 1 }, pair.now);
    pair.network.flush();
    if (tick >= 7 * 30 && tick < 12 * 30 && tick % 15 === 0) afterBps.push(server.stats(s).bandwidthEstimateBps);
    if (tick % 30 === 29) estimates.push(server.stats(s).bandwidthEstimateBps);
  }
  slowerBps = server.stats(s).bandwidthEstimateBps;
  return { duringBulkBps, afterBps, events, slowerBps, estimates };
}

describe("the bandwidth estimate once a transfer ends (simulator, 2 Mbit/s, 40 ms RTT)", () => {
  for (const seed of [1, 2]) {
    it(`stays at what the path carried while only a light stream flows, until a transfer measures again (seed ${seed})`, () => {
      const r = bulkThenLight(seed);
      const why = JSON.stringify({ duringBulkBps: r.duringBulkBps, afterBps: r.afterBps, slowerBps: r.slowerBps, events: r.events.slice(-5) });
      expect(r.duringBulkBps, why).toBeGreaterThan(1_600_000);
      expect(Math.min(...r.afterBps), why).toBeGreaterThan(0.75 * r.duringBulkBps);
      // A download on the slower path measures it again: the old figure does not stay.
      expect(r.slowerBps, why).toBeGreaterThan(400_000);
      expect(r.slowerBps, why).toBeLessThan(650_000);
    });
  }

  it("forgets the measured figure 30 s after it was measured, if nothing measured again (a path may slow under a light flow)", () => {
    const r = bulkThenLight(3, 40, false);
    const why = JSON.stringify(r.estimates.map((x) => Math.round(x / 1000)));
    // Kept through the 30 s that follow the download (6 s), then the light stream's own figure.
    expect(r.estimates[30]!, why).toBeGreaterThan(1_600_000);
    expect(r.estimates[44]!, why).toBeLessThan(200_000);
  });

  it("forgets it at once when the connection moves to another address", () => {
    const cc = new DefaultController({});
    (cc as unknown as { pathBw: number }).pathBw = 250; // bytes per ms: 2 Mbit/s
    expect(cc.bandwidthEstimateBps()).toBe(2_000_000);
    cc.onPathChange(0);
    expect(cc.bandwidthEstimateBps()).toBe(0);
  });
});
