/**
 * Paths whose round trip is longer than the RTO's 2 s maximum (geostationary links with deep
 * buffers, bufferbloat): found by an extreme-network review. With no RTT sample (the handshake's
 * packets were resent before their answers came, so Karn's rule gave none), every packet was
 * declared lost before its ack arrived, every later packet carried resent data (no sample
 * either), and the RTO never grew past 2 s: a 1 MiB transfer stuck at 10 KiB for ever, a 30 Hz
 * reliable stream delivered 110 of 1202, and the connection stayed "connected" throughout.
 */
import { describe, expect, it } from "vitest";
import { makePair, payload, checkPayload } from "./helpers.js";

describe("a round trip longer than the RTO's maximum", () => {
  for (const rttMs of [2500, 4000]) {
    it(`${rttMs} ms, 0 % loss: a 1 MiB transfer completes, with few resends`, () => {
      const seed = 901;
      const link = { latencyMs: rttMs / 2, bandwidthBps: 2_000_000, queuePackets: 400 };
      const pair = makePair(seed, { client: { timeoutMs: 30_000 }, server: { timeoutMs: 30_000 }, pair: { link } });
      // The handshake is two round trips: more than the default 5 s connect timeout here.
      const c = pair.client.connect(pair.now, pair.serverAddress, { timeoutMs: 30_000 });
      let connected = false;
      while (!connected && pair.now < 30_000) {
        pair.drive({ maxTimeMs: 100, maxSteps: 100_000 });
        for (const ev of pair.clientEvents()) if (ev.type === "connect") connected = true;
      }
      expect(connected, `seed ${seed}: no connect`).toBe(true);
      const big = payload(7, 1 << 20);
      pair.client.send(c, big, { channel: 6 });
      let got: Uint8Array | undefined;
      const start = pair.now;
      while (got === undefined && pair.now - start < 60_000) {
        pair.drive({ maxTimeMs: 500, maxSteps: 200_000 });
        for (const ev of pair.serverEvents()) if (ev.type === "message" && ev.channel === 6) got = ev.data;
      }
      expect(got?.length, `seed ${seed}: not delivered in 60 s`).toBe(1 << 20);
      expect(checkPayload(got!)).toBe(7);
      const st = pair.client.stats(c);
      expect(st.rttMs, `seed ${seed}`).toBeGreaterThan(rttMs * 0.9);
      // 1 MiB is ~900 packets; the first flight may go before any sample (the RTO starts at 1 s).
      expect(st.resends, `seed ${seed}`).toBeLessThan(200);
    });
  }

  it("an established connection whose round trip grows from 100 ms to 3 s (bufferbloat) keeps delivering", () => {
    const seed = 902;
    const pair = makePair(seed, { client: { timeoutMs: 30_000 }, server: { timeoutMs: 30_000 }, pair: { link: { latencyMs: 50, bandwidthBps: 2_000_000, queuePackets: 400 } } });
    const c = pair.client.connect(pair.now, pair.serverAddress);
    pair.drive({ maxTimeMs: 2000, maxSteps: 100_000 });
    pair.client.send(c, payload(1, 20_000), { channel: 0 });
    pair.drive({ maxTimeMs: 2000, maxSteps: 100_000 });
    expect(pair.client.stats(c).rttMs, `seed ${seed}`).toBeLessThan(200);
    pair.network.link(pair.clientAddress, pair.serverAddress, { latencyMs: 1500, bandwidthBps: 2_000_000, queuePackets: 400 });
    pair.network.link(pair.serverAddress, pair.clientAddress, { latencyMs: 1500, bandwidthBps: 2_000_000, queuePackets: 400 });
    pair.serverEvents();
    for (let i = 0; i < 100; i++) pair.client.send(c, payload(100 + i, 2000), { channel: 0 });
    let got = 0;
    const start = pair.now;
    while (got < 100 && pair.now - start < 40_000) {
      pair.drive({ maxTimeMs: 500, maxSteps: 200_000 });
      for (const ev of pair.serverEvents()) if (ev.type === "message" && ev.channel === 0 && checkPayload(ev.data) >= 100) got++;
    }
    expect(got, `seed ${seed}`).toBe(100);
    expect(pair.client.stats(c).rttMs, `seed ${seed}`).toBeGreaterThan(2500);
  });

  it("an idle lossy connection takes no late ack of an older packet for its round trip (found by a review)", () => {
    // Keepalives 2.5 s apart on a 50 ms path with 10-30 % loss: one whose ack was lost is acked
    // by the next datagram, ~2.5 s later, beyond maxRtoMs. Taken as a sample, it put rttMs at
    // 270-430 ms and the RTO at 2-3 s; it must be the newest ack of its datagram, twice in a row.
    for (const [seed, lossRate] of [[1, 0.1], [2, 0.1], [1, 0.3], [2, 0.3]] as const) {
      const pair = makePair(seed, { pair: { link: { latencyMs: 25, lossRate } } });
      const c = pair.client.connect(pair.now, pair.serverAddress);
      pair.drive({ maxTimeMs: 1000, maxSteps: 100_000 });
      let maxRtt = 0;
      const start = pair.now;
      for (let t = 0; t < 60_000; t += 100) {
        pair.drive({ until: start + t, maxSteps: 100_000 });
        pair.clientEvents();
        pair.serverEvents();
        const rtt = pair.client.stats(c).rttMs;
        if (rtt === rtt) maxRtt = Math.max(maxRtt, rtt);
      }
      expect(maxRtt, `seed ${seed}, ${lossRate * 100} % loss`).toBeLessThan(120);
    }
  });
});
