/**
 * The ACK_DELAY system frame (PROTOCOL §3): an ack that waited for the receiver's next data
 * packet reports how long it waited, and the sender subtracts that from its RTT sample
 * (RFC 9002 §5.3). Two 30 Hz streams out of phase on a 20 ms RTT path: each side's acks wait
 * ~18-28 ms for its own next send, so uncorrected samples would read ~40-48 ms.
 */
import { describe, expect, it } from "vitest";
import { connectPair, makePair, payload } from "./helpers.js";

function outOfPhaseStreams(seed: number, engine: "ts" | "wasm", lossRate: number) {
  const pair = makePair(seed, {
    server: { engine, ackPiggybackMs: 30 },
    client: { engine, ackPiggybackMs: 30 },
    pair: { link: { latencyMs: 10, lossRate } },
  });
  const [c, s] = connectPair(pair);
  const period = 1000 / 30;
  const start = pair.now;
  let delivered = 0;
  for (let i = 0; i < 150; i++) {
    // Client at t, server at t + 5 ms: a client packet reaches the server at t + 10, ~28 ms
    // before the server's next send; a server packet reaches the client ~18 ms before its next.
    pair.drive({ until: start + i * period, maxSteps: 100_000 });
    pair.client.send(c, payload(i, 100), { channel: 0 }, pair.now);
    pair.network.flush();
    pair.drive({ until: start + i * period + 5, maxSteps: 100_000 });
    pair.server.send(s, payload(i, 100), { channel: 0 }, pair.now);
    pair.network.flush();
    for (const ev of pair.serverEvents()) if (ev.type === "message") delivered++;
    pair.clientEvents();
  }
  return { client: pair.client.stats(c), server: pair.server.stats(s), delivered };
}

/**
 * A one-way 30 Hz stream from the client on a 20 ms RTT path: the server has nothing to send,
 * so every ack it owes leaves as a pure ack after its ack delay (5 ms). The pure ack carries that
 * wait (PROTOCOL §2, version 6), so the client's samples read the path, not the path plus 5 ms.
 */
function oneWayStream(seed: number, engine: "ts" | "wasm") {
  const pair = makePair(seed, { server: { engine }, client: { engine }, pair: { link: { latencyMs: 10 } } });
  const [c] = connectPair(pair);
  const period = 1000 / 30;
  const start = pair.now;
  let delivered = 0;
  for (let i = 0; i < 90; i++) {
    pair.drive({ until: start + i * period, maxSteps: 100_000 });
    pair.client.send(c, payload(i, 100), { channel: 0 }, pair.now);
    pair.network.flush();
    for (const ev of pair.serverEvents()) if (ev.type === "message") delivered++;
    pair.clientEvents();
  }
  const client = pair.client.stats(c);
  pair.drive({ until: pair.now + 2500, maxSteps: 100_000 });
  for (const ev of pair.serverEvents()) if (ev.type === "message") delivered++;
  // Idle from here but for keepalives (the clock sync's first rounds are over). A pure ack that
  // carries a delay is no more ack-eliciting than one without: were it, each keepalive's ack
  // would draw an ack back, and so on, ~60 datagrams in these 1.5 s.
  const sentBefore = pair.toServer.stats.sent + pair.toClient.stats.sent;
  pair.drive({ until: pair.now + 1500, maxSteps: 100_000 });
  const quietDatagrams = pair.toServer.stats.sent + pair.toClient.stats.sent - sentBefore;
  return { client, delivered, quietDatagrams };
}

describe("ack delay on the wire", () => {
  for (const [seed, engine] of [[44, "ts"], [45, "wasm"]] as const) {
    it(`a one-way stream's sender sees the path RTT, its pure acks report their wait (seed ${seed}, ${engine})`, () => {
      const r = oneWayStream(seed, engine);
      const why = `seed ${seed}: client rtt ${r.client.rttMs.toFixed(2)} min ${r.client.minRttMs.toFixed(2)} ping ${r.client.linkPingMs.toFixed(2)}, quiet datagrams ${r.quietDatagrams}`;
      expect(r.delivered, why).toBe(90);
      expect(r.client.rttMs, why).toBeGreaterThanOrEqual(19.5);
      expect(r.client.rttMs, why).toBeLessThan(21.5);
      expect(r.client.linkPingMs, why).toBeLessThan(21.5);
      expect(r.quietDatagrams, why).toBeLessThanOrEqual(6);
    });
  }

  for (const [seed, engine] of [[41, "ts"], [42, "wasm"]] as const) {
    it(`RTT estimates stay at the path RTT when acks wait for data (seed ${seed}, ${engine})`, () => {
      const r = outOfPhaseStreams(seed, engine, 0);
      const why = `seed ${seed}: client rtt ${r.client.rttMs.toFixed(2)} ping ${r.client.linkPingMs.toFixed(2)}, server rtt ${r.server.rttMs.toFixed(2)} ping ${r.server.linkPingMs.toFixed(2)}`;
      expect(r.delivered, why).toBeGreaterThan(140);
      for (const st of [r.client, r.server]) {
        expect(st.rttMs, why).toBeGreaterThanOrEqual(19.5);
        expect(st.rttMs, why).toBeLessThan(23);
        expect(st.linkPingMs, why).toBeLessThan(23);
        expect(st.minRttMs, why).toBeGreaterThanOrEqual(19.5);
      }
    });
  }

  it("under 10% loss the corrected samples still never go below the path RTT (seed 43)", () => {
    const r = outOfPhaseStreams(43, "ts", 0.1);
    const why = `client rtt ${r.client.rttMs.toFixed(2)} min ${r.client.minRttMs.toFixed(2)}, server rtt ${r.server.rttMs.toFixed(2)} min ${r.server.minRttMs.toFixed(2)}`;
    for (const st of [r.client, r.server]) {
      expect(st.minRttMs, why).toBeGreaterThanOrEqual(19.5);
      expect(st.rttMs, why).toBeLessThan(30);
    }
  });
});
