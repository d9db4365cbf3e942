/**
 * Binary mode (seed 002) and the bandwidth estimate, observed through the real stack: the
 * server endpoint streams bulk data to a client over simulator Links whose delay or rate the
 * test changes mid-run. What is observed is what leaves the server (data datagrams per second)
 * and what `stats()` reports.
 */
import { describe, expect, it } from "vitest";
import { BulkSender, Scene, SERVER, WIRE_OVERHEAD_BYTES, clientAddress } from "../../bench/sim/harness.js";

/** Data-bearing datagrams (bigger than a pure ack/keepalive) the server sent per second in [from, to). */
function rateBetween(times: number[], from: number, to: number): number {
  return (times.filter((t) => t >= from && t < to).length * 1000) / (to - from);
}

function bulkScene(seed: number, congestion: string, link: { latencyMs: number; bandwidthBps?: number }) {
  const scene = new Scene(seed, { server: { congestion } });
  scene.addClient({ congestion });
  const c = clientAddress(0);
  const cfg = { ...link, ...(link.bandwidthBps ? { queuePackets: 50, overheadBytes: WIRE_OVERHEAD_BYTES } : {}) };
  scene.world.route(SERVER, c, scene.link("down", cfg));
  scene.world.route(c, SERVER, scene.link("up", cfg));
  const dataSends: number[] = [];
  scene.transmitHandlers.push((from, _to, bytes, now) => {
    if (from === SERVER && bytes.length > 100) dataSends.push(now);
  });
  const [, serverConn] = scene.connect(0);
  const bulk = new BulkSender(scene, scene.server, serverConn, c);
  bulk.start();
  return { scene, c, dataSends, serverConn, t0: scene.world.now };
}

describe("binary mode through the session (seed 002: good 30/s, bad 10/s, bad when RTT > 250 ms)", () => {
  it("stays in good mode (30 packets/s) on a 200 ms RTT path", () => {
    const { scene, dataSends, t0 } = bulkScene(11, "binary", { latencyMs: 100 });
    scene.world.runUntil(t0 + 6000);
    const r = rateBetween(dataSends, t0 + 1000, t0 + 6000);
    expect(r, `seed 11, ${r}/s`).toBeGreaterThanOrEqual(29);
    expect(r, `seed 11, ${r}/s`).toBeLessThanOrEqual(31);
  });

  it("drops to bad (10 packets/s) at once on a 300 ms RTT path, and returns to good after the path recovers", () => {
    const { scene, c, dataSends, t0 } = bulkScene(12, "binary", { latencyMs: 150 });
    scene.world.runUntil(t0 + 5000);
    // The first RTT samples (~300 ms) arrive ~0.3 s after the start; from 1 s on: bad.
    const bad = rateBetween(dataSends, t0 + 1000, t0 + 5000);
    expect(bad, `seed 12, bad-mode rate ${bad}/s`).toBeGreaterThanOrEqual(9);
    expect(bad, `seed 12, bad-mode rate ${bad}/s`).toBeLessThanOrEqual(11);
    // The path drops to 100 ms RTT. The RTT average (10% per sample) falls under 250 ms after
    // a few samples, then good conditions must hold for t (1 s) before good mode.
    scene.world.route(SERVER, c, scene.link("down2", { latencyMs: 50 }));
    scene.world.route(c, SERVER, scene.link("up2", { latencyMs: 50 }));
    scene.world.runUntil(t0 + 12_000);
    const good = rateBetween(dataSends, t0 + 9000, t0 + 12_000);
    expect(good, `seed 12, recovered rate ${good}/s`).toBeGreaterThanOrEqual(29);
    expect(good, `seed 12, recovered rate ${good}/s`).toBeLessThanOrEqual(31);
  });
});

describe("bandwidth estimate in stats() through the session", () => {
  const payloadRate = (bps: number) => bps * (1200 / (1200 + WIRE_OVERHEAD_BYTES));

  it("follows the bottleneck when it halves and when it doubles back (default controller)", () => {
    const seed = 21;
    const { scene, c, serverConn, t0 } = bulkScene(seed, "default", { latencyMs: 30, bandwidthBps: 2e6 });
    const estimate = () => scene.server.stats(serverConn).bandwidthEstimateBps;
    scene.world.runUntil(t0 + 4000);
    const at2 = estimate();
    expect(at2, `seed ${seed}`).toBeGreaterThan(payloadRate(2e6) / 1.2);
    expect(at2, `seed ${seed}`).toBeLessThan(payloadRate(2e6) * 1.2);

    const slow = { latencyMs: 30, bandwidthBps: 1e6, queuePackets: 50, overheadBytes: WIRE_OVERHEAD_BYTES };
    scene.world.route(SERVER, c, scene.link("down-1mbit", slow));
    scene.world.runUntil(t0 + 8000);
    const at1 = estimate();
    expect(at1, `seed ${seed}: after 2 -> 1 Mbit/s`).toBeGreaterThan(payloadRate(1e6) / 1.2);
    expect(at1, `seed ${seed}: after 2 -> 1 Mbit/s`).toBeLessThan(payloadRate(1e6) * 1.2);

    scene.world.route(SERVER, c, scene.link("down-2mbit", { ...slow, bandwidthBps: 2e6 }));
    scene.world.runUntil(t0 + 14_000);
    const back = estimate();
    expect(back, `seed ${seed}: after 1 -> 2 Mbit/s`).toBeGreaterThan(payloadRate(2e6) / 1.2);
    expect(back, `seed ${seed}: after 1 -> 2 Mbit/s`).toBeLessThan(payloadRate(2e6) * 1.2);
  });
});
