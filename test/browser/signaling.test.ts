// The signaling endpoint of listen({ webrtc }): one request, bounded and rate limited, CORS as
// configured, a secure server's token checked. Offers come from werift in this process (no
// browser needed); every server binds 127.0.0.1.
import { describe, expect, it } from "vitest";
import { RTCPeerConnection } from "werift";
import { dist } from "./helpers.js";
import type * as Ackwire from "../../src/index.js";
import type * as Sdp from "../../runtimes/webrtc/sdp.js";
import type * as Rate from "../../runtimes/webrtc/rate-limit.js";
import type * as Base64 from "../../src/util/base64url.js";

const PROTOCOL_ID = 0x5eb7d;
const ORIGIN = "http://127.0.0.1:9";
const ackwire = await dist<typeof Ackwire>("src/index.js");
const sdp = await dist<typeof Sdp>("runtimes/webrtc/sdp.js");
const rate = await dist<typeof Rate>("runtimes/webrtc/rate-limit.js");
const base64 = await dist<typeof Base64>("src/util/base64url.js");

/** A data channel offer as a browser would make it (werift's, with its candidates gathered). */
async function makeOffer(): Promise<{ sdp: string; close: () => Promise<void> }> {
  const pc = new RTCPeerConnection({ iceAdditionalHostAddresses: ["127.0.0.1"] });
  pc.createDataChannel("ackwire", { ordered: false, maxRetransmits: 0 });
  await pc.setLocalDescription(await pc.createOffer());
  return { sdp: pc.localDescription!.sdp, close: () => pc.close() };
}

function post(url: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: "POST", headers: { "content-type": "application/sdp", origin: ORIGIN, ...headers }, body });
}

async function withServer(options: Partial<Ackwire.ListenOptions> & { webrtc?: Partial<NonNullable<Ackwire.ListenOptions["webrtc"]>> }, run: (server: Ackwire.Server) => Promise<void>): Promise<void> {
  const server = await ackwire.listen({ protocolId: PROTOCOL_ID, host: "127.0.0.1", port: 0, ...options, webrtc: { port: 0, allowOrigins: [ORIGIN], ...options.webrtc } });
  try {
    await run(server);
  } finally {
    await server.close();
  }
}

describe("listen({ webrtc }) and its endpoint", () => {
  it("tells the endpoint what a browser peer's carrier adds (DTLS, SCTP) and that it sets the datagram size; UDP peers have none", async () => {
    let config: Parameters<Ackwire.EndpointFactory>[0] | undefined;
    await withServer({ createEndpoint: (c) => new ackwire.Endpoint((config = c)) }, async (server) => {
      expect(server.webrtc).toBeDefined();
      expect(config?.carrier?.("webrtc-7:1")).toEqual({ overheadBytes: 65, maxDatagramBytes: 1200 });
      expect(config?.carrier?.("127.0.0.1:40000")).toBeUndefined();
    });
    // Without webrtc: none at all.
    const udp = await ackwire.listen({ protocolId: PROTOCOL_ID, host: "127.0.0.1", port: 0, createEndpoint: (c) => new ackwire.Endpoint((config = c)) });
    await udp.close();
    expect(config?.carrier).toBeUndefined();
  });
});

describe("webrtc signaling endpoint", () => {
  it("answers an offer in one request with only its own addresses as candidates", async () => {
    await withServer({}, async (server) => {
      const offer = await makeOffer();
      const response = await post(server.webrtc!.url, offer.sdp);
      expect(response.status).toBe(201);
      expect(response.headers.get("content-type")).toBe("application/sdp");
      expect(response.headers.get("access-control-allow-origin")).toBe(ORIGIN);
      const answer = await response.text();
      const candidates = answer.split(/\r?\n/).filter((l) => l.startsWith("a=candidate:"));
      expect(candidates.length).toBeGreaterThan(0);
      for (const c of candidates) expect(c.split(" ")[4]).toBe("127.0.0.1");
      expect(server.webrtc!.counters()).toMatchObject({ offersAnswered: 1, pendingPeers: 1, peers: 0 });
      await offer.close();
    });
  });

  it("states CORS: a preflight from an allowed origin, 403 from another", async () => {
    await withServer({}, async (server) => {
      const url = server.webrtc!.url;
      const preflight = await fetch(url, { method: "OPTIONS", headers: { origin: ORIGIN, "access-control-request-method": "POST" } });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get("access-control-allow-methods")).toBe("POST, OPTIONS");
      expect(preflight.headers.get("access-control-allow-headers")).toBe("content-type, authorization");
      const other = await post(url, "v=0", { origin: "http://evil.example" });
      expect(other.status).toBe(403);
      expect(other.headers.get("access-control-allow-origin")).toBe(null);
      expect((await fetch(url.replace("/ackwire", "/other"), { method: "POST" })).status).toBe(404);
      expect((await fetch(url, { headers: { origin: ORIGIN } })).status).toBe(405);
      expect(server.webrtc!.counters().offersRefused.forbidden).toBe(1);
    });
  });

  it("bounds the body, checks its type and refuses what is not an offer", async () => {
    await withServer({ webrtc: { maxOfferBytes: 2000 } }, async (server) => {
      const url = server.webrtc!.url;
      expect((await post(url, "x".repeat(2001))).status).toBe(413);
      expect((await post(url, "v=0", { "content-type": "text/plain" })).status).toBe(415);
      expect((await post(url, "v=0\r\nnot an offer\r\n")).status).toBe(400);
      expect(server.webrtc!.counters().offersRefused).toMatchObject({ tooLarge: 1, badRequest: 2 });
      expect(server.webrtc!.counters().pendingPeers).toBe(0);
    });
  });

  it("rate limits offers per address", async () => {
    await withServer({ webrtc: { offersPerSecond: 1 } }, async (server) => {
      const statuses: number[] = [];
      // A burst of twice the rate passes; the third in the same instant is refused.
      for (let i = 0; i < 3; i++) statuses.push((await post(server.webrtc!.url, "v=0\r\n")).status);
      expect(statuses).toEqual([400, 400, 429]);
      expect(server.webrtc!.counters().offersRefused.rateLimited).toBe(1);
    });
  });

  it("holds a bounded count of unconnected peers, and lets them go after openTimeoutMs", async () => {
    await withServer({ webrtc: { maxPendingPeers: 2, offersPerSecond: 100, openTimeoutMs: 300 } }, async (server) => {
      const offers = await Promise.all([makeOffer(), makeOffer(), makeOffer()]);
      const statuses = [];
      for (const o of offers) statuses.push((await post(server.webrtc!.url, o.sdp)).status);
      expect(statuses).toEqual([201, 201, 503]);
      for (let i = 0; i < 100 && server.webrtc!.counters().pendingPeers > 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(server.webrtc!.counters()).toMatchObject({ pendingPeers: 0, peersTimedOut: 2 });
      expect((await post(server.webrtc!.url, offers[2]!.sdp)).status).toBe(201);
      await Promise.all(offers.map((o) => o.close()));
    });
  });

  it("on a secure server, takes the connect token in the offer request", async () => {
    const serverKey = ackwire.generateServerKey();
    await withServer({ secure: { serverKey } }, async (server) => {
      const url = server.webrtc!.url;
      const offer = await makeOffer();
      expect((await post(url, offer.sdp)).status).toBe(401);
      const forged = ackwire.createConnectToken({ serverKey: ackwire.generateServerKey(), protocolId: PROTOCOL_ID, clientId: 1n, serverAddresses: ["127.0.0.1:1"] });
      expect((await post(url, offer.sdp, { authorization: `Bearer ${base64.toBase64Url(forged)}` })).status).toBe(401);
      const token = ackwire.createConnectToken({ serverKey, protocolId: PROTOCOL_ID, clientId: 2n, serverAddresses: ["127.0.0.1:1"] });
      expect((await post(url, offer.sdp, { authorization: `Bearer ${base64.toBase64Url(token)}` })).status).toBe(201);
      expect(server.webrtc!.counters().offersRefused.unauthorized).toBe(2);
      await offer.close();
    });
  });

  it("refuses options it cannot use, with what to do", async () => {
    await expect(ackwire.listen({ protocolId: 1, port: 0, webrtc: { port: 0 } })).rejects.toThrow(/iceAddresses/);
    await expect(ackwire.listen({ protocolId: 1, host: "127.0.0.1", port: 0, webrtc: { port: 0, allowOrigin: "*" } as never })).rejects.toThrow(/allowOrigins/);
    await expect(ackwire.listen({ protocolId: 1, host: "127.0.0.1", port: 0, mtu: 1400, webrtc: { port: 0 } })).rejects.toThrow(/mtu 1400/);
  });
});

describe("webrtc helpers", () => {
  it("drops every candidate of an offer, and keeps only the given addresses in an answer", () => {
    const text = ["v=0", "a=candidate:1 1 udp 1 abc.local 5000 typ host", "a=candidate:2 1 udp 1 10.0.0.2 5001 typ host", "a=candidate:3 1 udp 1 127.0.0.1 5002 typ host", "a=end-of-candidates", ""].join("\r\n");
    expect(sdp.withoutCandidates(text)).toBe(["v=0", ""].join("\r\n"));
    expect(sdp.onlyCandidates(text, ["127.0.0.1"])).toBe(["v=0", "a=candidate:3 1 udp 1 127.0.0.1 5002 typ host", "a=end-of-candidates", ""].join("\r\n"));
  });

  it("rate limit: a burst of twice the rate, refilled with time, per address", () => {
    const limit = new rate.OfferRateLimit(2);
    const taken = Array.from({ length: 5 }, () => limit.take("a", 0));
    expect(taken).toEqual([true, true, true, true, false]);
    expect(limit.take("b", 0)).toBe(true);
    expect(limit.take("a", 499)).toBe(false);
    expect(limit.take("a", 500)).toBe(true);
  });

  it("base64url round-trips every length", () => {
    for (let n = 0; n < 40; n++) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 37 + n) & 0xff);
      const text = base64.toBase64Url(bytes);
      expect(text).toBe(Buffer.from(bytes).toString("base64url"));
      expect(base64.fromBase64Url(text)).toEqual(bytes);
    }
    expect(base64.fromBase64Url("a+b/")).toBe(undefined);
  });
});
