/**
 * EndpointConfig.carrier: a carrier under the datagrams (a WebRTC data channel) that adds bytes
 * to each one is counted by the congestion controller and in bytesSent/bytesReceived, and a
 * carrier that sets the datagram size turns path MTU discovery off for its peers.
 */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import { SessionConfigError } from "../../src/session/errors.js";
import type { DatagramCarrier, EndpointConfig } from "../../src/session/types.js";
import { CLIENT, PROTOCOL_ID, SERVER, connectPair, makePair, payload, pollEvents, run } from "./helpers.js";

const OVERHEAD = 65;
const DATA_CHANNEL: DatagramCarrier = { overheadBytes: OVERHEAD, maxDatagramBytes: 1200 };

/** A directly wired pair, connected and settled (nothing in flight); the client's config extended by `client`. */
function wired(client: Partial<EndpointConfig>): { server: Endpoint; client: Endpoint; c: number; s: number; now: number } {
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: 11, engine: "ts" });
  const ep = new Endpoint({ protocolId: PROTOCOL_ID, seed: 12, engine: "ts", ...client });
  const c = ep.connect(0, SERVER);
  const r = run(server, ep, 0, 500);
  const s = r.server.find((e) => e.type === "connect")?.connection;
  if (s === undefined || !r.client.some((e) => e.type === "connect")) throw new Error("no handshake");
  return { server, client: ep, c, s, now: r.now };
}

/** Hands every datagram `from` has due to `to`; returns their count and total length. */
function pumpCounted(from: Endpoint, fromAddress: string, to: Endpoint | undefined, now: number): { count: number; bytes: number; sizes: number[] } {
  const out = { count: 0, bytes: 0, sizes: [] as number[] };
  for (let t = from.pollTransmit(now); t !== undefined && out.count < 10_000; t = from.pollTransmit(now)) {
    out.count++;
    out.bytes += t.bytes.length;
    out.sizes.push(t.bytes.length);
    to?.handleDatagram(now, fromAddress, t.bytes);
  }
  return out;
}

describe("a carrier's per-datagram overhead", () => {
  for (const carrier of [undefined, DATA_CHANNEL]) {
    const overhead = carrier?.overheadBytes ?? 0;
    it(`bytesSent and bytesReceived count ${overhead} bytes on each datagram (${carrier ? "data channel" : "UDP"})`, () => {
      // From the first datagram on: the handshake's count too.
      const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: 11, engine: "ts" });
      const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: 12, engine: "ts", carrier: carrier && (() => carrier) });
      const c = client.connect(0, SERVER);
      const sent = { count: 0, bytes: 0 };
      const received = { count: 0, bytes: 0 };
      for (let now = 0; now < 600; now++) {
        for (const ep of [client, server]) {
          const due = ep.pollTimeout();
          if (due !== undefined && due <= now) ep.handleTimeout(now);
        }
        if (now >= 300 && now < 400) client.send(c, payload(now, 40 + (now % 7) * 90), { channel: 0 });
        const up = pumpCounted(client, CLIENT, server, now);
        sent.count += up.count;
        sent.bytes += up.bytes;
        pollEvents(server);
        const down = pumpCounted(server, SERVER, client, now);
        received.count += down.count;
        received.bytes += down.bytes;
        pollEvents(client);
      }
      expect(sent.count).toBeGreaterThan(100);
      const st = client.stats(c);
      expect(st.bytesSent).toBe(sent.bytes + overhead * sent.count);
      expect(st.bytesReceived).toBe(received.bytes + overhead * received.count);
    });
  }

  it("the congestion controller counts it: a fixed window holds fewer datagrams", () => {
    // A 24,000-byte window: 20 datagrams of about 1170 bytes fill it by about 650 bytes more
    // with 65 on each, so at least one fewer goes out.
    const fixed = { congestion: "fixed" as const, congestionOptions: { fixed: { rateBps: 1e9, windowBytes: 24_000, burstBytes: 1e6 } } };
    const burst = (carrier: DatagramCarrier | undefined): number[] => {
      const w = wired({ ...fixed, carrier: carrier && (() => carrier) });
      for (let i = 0; i < 40; i++) w.client.send(w.c, payload(i, 1150), { channel: 0 });
      // Nothing comes back: whatever goes out stays in flight.
      return pumpCounted(w.client, CLIENT, undefined, w.now).sizes.filter((n) => n > 1000);
    };
    const udp = burst(undefined);
    const channel = burst(DATA_CHANNEL);
    expect(udp.length).toBeGreaterThanOrEqual(18);
    expect(udp.length).toBeLessThanOrEqual(20);
    expect(channel.length).toBeLessThan(udp.length);
    // In path bytes both fill the same window.
    const sum = (sizes: number[], per: number) => sizes.reduce((a, n) => a + n + per, 0);
    expect(sum(channel, OVERHEAD)).toBeLessThanOrEqual(24_000);
    expect(sum(channel, OVERHEAD) + 1200 + OVERHEAD).toBeGreaterThan(24_000 - 1200);
  });

  it("the default controller's window and rate are in path bytes: its first window holds fewer datagrams", () => {
    const burst = (carrier: DatagramCarrier | undefined): number => {
      const w = wired({ carrier: carrier && (() => carrier) });
      for (let i = 0; i < 40; i++) w.client.send(w.c, payload(i, 1150), { channel: 0 });
      let large = 0;
      // A few ms of sends with no acks: the initial window (in packets of mtu + overhead) and the pacer bound them.
      for (let t = 0; t < 3; t++) large += pumpCounted(w.client, CLIENT, undefined, w.now + t).sizes.filter((n) => n > 1000).length;
      return large;
    };
    const udp = burst(undefined);
    const channel = burst({ overheadBytes: 600, maxDatagramBytes: 1200 });
    expect(udp).toBeGreaterThan(0);
    expect(channel).toBeGreaterThan(0);
    expect(channel).toBeLessThan(udp);
  });

  it("a carrier that sets the datagram size turns path MTU discovery off for its peers only", () => {
    const after = (carrier: DatagramCarrier | undefined): { largest: number; pathMtu: number } => {
      const seed = 907;
      const pair = makePair(seed, { client: { carrier: carrier && (() => carrier) } });
      const [c] = connectPair(pair);
      for (let i = 0; i < 300; i++) {
        pair.client.send(c, payload(i, 100), { channel: 0 });
        if (i % 10 === 9) pair.drive({ maxTimeMs: 20 });
      }
      pair.drive({ maxTimeMs: 3000 });
      // A burst of small messages fills datagrams to the size in use.
      for (let i = 300; i < 600; i++) pair.client.send(c, payload(i, 100), { channel: 0 });
      let largest = 0;
      for (let t = pair.client.pollTransmit(pair.now); t !== undefined; t = pair.client.pollTransmit(pair.now)) largest = Math.max(largest, t.bytes.length);
      return { largest, pathMtu: pair.client.stats(c).pathMtu };
    };
    // The same client over UDP finds the simulated path's larger MTU.
    const udp = after(undefined);
    expect(udp.pathMtu).toBeGreaterThan(1200);
    expect(udp.largest).toBeGreaterThan(1200);
    const channel = after(DATA_CHANNEL);
    expect(channel.pathMtu).toBe(1200);
    expect(channel.largest).toBeLessThanOrEqual(1200);
    expect(channel.largest).toBeGreaterThan(1100);
  });

  it("is checked: a carrier that is not a function is a SessionConfigError; figures out of range count as none", () => {
    expect(() => new Endpoint({ protocolId: PROTOCOL_ID, engine: "ts", carrier: 65 as unknown as EndpointConfig["carrier"] })).toThrow(SessionConfigError);
    const odd = { overheadBytes: -5, maxDatagramBytes: Number.NaN };
    const w = wired({ carrier: () => odd });
    const before = w.client.stats(w.c).bytesSent;
    w.client.send(w.c, payload(1, 500), { channel: 0 });
    const out = pumpCounted(w.client, CLIENT, w.server, w.now);
    expect(out.count).toBeGreaterThan(0);
    expect(w.client.stats(w.c).bytesSent - before).toBe(out.bytes);
  });
});
