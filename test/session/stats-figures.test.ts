/**
 * Figures of ConnectionStats on the deterministic simulator: the transmission ping of a resent
 * message runs from its first send to its ack, the 10% moving-average RTT
 * beside the smoothed one, and the final stats a disconnect carries.
 */
import { describe, expect, it } from "vitest";
import type { PingWindow } from "../../src/congestion/ping.js";
import type { Endpoint } from "../../src/session/endpoint.js";
import { connectPair, eventsOf, makePair, payload, transmitsOf } from "./helpers.js";

/** The connection's ping windows (white box: the stats report only the configured best 50 %). */
function pingOf(endpoint: Endpoint, id: number): { link: PingWindow; transmission: PingWindow } {
  return (endpoint as unknown as { byId: Map<number, { ping: { link: PingWindow; transmission: PingWindow } }> }).byId.get(id)!.ping;
}

/** The largest sample a window holds: the sum of all less the sum of all but the largest. */
function largest(w: PingWindow): number {
  const n = w.size;
  if (n === 1) return w.averageBest(100);
  return w.averageBest(100) * n - w.averageBest(((n - 1) / n) * 100 - 1e-9) * (n - 1);
}

describe("transmission ping", () => {
  for (const engine of ["ts", "wasm"] as const) {
    it(`${engine}: a message whose first send is lost is sampled from that first send to its ack`, () => {
      const pair = makePair(41, { server: { engine }, client: { engine }, pair: { link: { latencyMs: 25 } } });
      const [c] = connectPair(pair);
      for (let i = 0; i < 20; i++) {
        pair.client.send(c, payload(i, 100), { channel: 0 });
        pair.network.flush();
        pair.drive({ until: pair.now + 50, maxSteps: 100_000 });
      }
      const { link, transmission } = pingOf(pair.client, c);
      const linkMs = link.averageBest(100);
      expect(linkMs).toBeGreaterThan(45);
      expect(largest(transmission)).toBeLessThan(linkMs + 20);
      // Lose exactly the datagram that carries the next message's first send.
      pair.network.link(pair.clientAddress, pair.serverAddress, { latencyMs: 25, lossRate: 1 });
      const sentAt = pair.now;
      const receipt = pair.client.send(c, payload(99, 100), { channel: 0, receipt: true }, pair.now) as number;
      pair.network.flush();
      pair.network.link(pair.clientAddress, pair.serverAddress, { latencyMs: 25 });
      let ackedAt = NaN;
      for (let step = 0; step < 200 && Number.isNaN(ackedAt); step++) {
        pair.drive({ until: pair.now + 5, maxSteps: 100_000 });
        for (const ev of pair.clientEvents()) if (ev.type === "receipt" && ev.receipt === receipt && ev.delivered) ackedAt = pair.now;
      }
      expect(ackedAt).toBeGreaterThan(sentAt);
      const waited = largest(transmission);
      // The resend delay is in it: well above a round trip (a loss is detected after one).
      expect(waited).toBeGreaterThan(linkMs + 25);
      // And it is the message's whole wait, not the resend's own round trip.
      expect(waited).toBeGreaterThan(ackedAt - sentAt - 5.01);
      // (The first send is kept in whole ms: up to 1 ms more.)
      expect(waited).toBeLessThanOrEqual(ackedAt - sentAt + 1);
      expect(largest(link)).toBeLessThan(linkMs + 20);
    });
  }

  it("at 30 % loss on a 50 ms path the transmission ping exceeds the link ping by the resend delays", () => {
    const pair = makePair(7, { pair: { link: { latencyMs: 25, lossRate: 0.3 } } });
    const [c] = connectPair(pair, undefined, 30_000);
    for (let i = 0; i < 300; i++) {
      pair.client.send(c, payload(i, 100), { channel: 0 });
      pair.network.flush();
      pair.drive({ until: pair.now + 33, maxSteps: 100_000 });
      pair.serverEvents();
      pair.clientEvents();
    }
    const { link, transmission } = pingOf(pair.client, c);
    const stats = pair.client.stats(c);
    expect(stats.resends).toBeGreaterThan(30);
    // Every sample of the link window is one clean round trip; the transmission window also
    // holds the resent messages' waits, each at least a round trip more.
    expect(transmission.averageBest(100)).toBeGreaterThan(link.averageBest(100) + 15);
    expect(largest(transmission)).toBeGreaterThan(2 * link.averageBest(100));
    expect(stats.transmissionPingMs).toBeGreaterThanOrEqual(stats.linkPingMs);
  });
});

describe("rttEwmaMs", () => {
  it("is the 10 % moving average: equal to the first sample, then slower than SRTT after a step", () => {
    const pair = makePair(3, { pair: { link: { latencyMs: 10 } } });
    const [c] = connectPair(pair);
    const first = pair.client.stats(c);
    expect(first.rttEwmaMs).toBeGreaterThan(15);
    expect(first.rttEwmaMs).toBe(first.rttMs);
    pair.network.link(pair.clientAddress, pair.serverAddress, { latencyMs: 60 });
    pair.network.link(pair.serverAddress, pair.clientAddress, { latencyMs: 60 });
    for (let i = 0; i < 6; i++) {
      pair.client.send(c, payload(i, 100), { channel: 0 });
      pair.network.flush();
      pair.drive({ until: pair.now + 150, maxSteps: 100_000 });
    }
    const after = pair.client.stats(c);
    // Both moved toward ~120 ms; the 10 % average lags SRTT's 1/8 gain.
    expect(after.rttMs).toBeGreaterThan(first.rttMs + 20);
    expect(after.rttEwmaMs).toBeGreaterThan(first.rttEwmaMs + 10);
    expect(after.rttEwmaMs).toBeLessThan(after.rttMs);
  });
});

describe("final stats", () => {
  it("the disconnect event carries them, and stats() answers with them until it is polled", () => {
    const pair = makePair(5, { pair: { link: { latencyMs: 5 } } });
    const [c, s] = connectPair(pair);
    for (let i = 0; i < 10; i++) pair.client.send(c, payload(i, 200), { channel: 0 });
    pair.network.flush();
    pair.drive({ until: pair.now + 200, maxSteps: 100_000 });
    pair.serverEvents();
    // From here the datagrams are moved by hand, so that nothing polls the client's events.
    let now = pair.now;
    pair.client.close(c, "normal", undefined, now);
    let removed = false;
    for (let round = 0; round < 20 && !removed; round++) {
      now += 5;
      for (const tx of transmitsOf(pair.client, now)) pair.server.handleDatagram(now, pair.clientAddress, tx.bytes);
      pair.server.handleTimeout(now);
      for (const tx of transmitsOf(pair.server, now)) pair.client.handleDatagram(now, pair.serverAddress, tx.bytes);
      pair.client.handleTimeout(now);
      removed = !pair.client.connections().includes(c);
    }
    expect(removed).toBe(true);
    // Gone from the endpoint, its "disconnect" not yet polled: stats() gives the final figures.
    const queued = pair.client.stats(c);
    expect(queued.messagesSent[0]).toBe(10);
    const disconnect = [...eventsOf(pair.client)].find((ev) => ev.type === "disconnect");
    expect(disconnect).toMatchObject({ type: "disconnect", reason: "normal" });
    const final = disconnect?.type === "disconnect" ? disconnect.stats : undefined;
    expect(final).toBe(queued);
    expect(final!.bytesSent).toBeGreaterThan(2000);
    expect(() => pair.client.stats(c)).toThrow();
    const serverEnd = [...eventsOf(pair.server)].find((ev) => ev.type === "disconnect" && ev.connection === s);
    expect(serverEnd?.type === "disconnect" ? serverEnd.stats?.messagesReceived[0] : undefined).toBe(10);
  });
});
