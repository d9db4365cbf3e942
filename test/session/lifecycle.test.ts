/** Connection lifecycle: keepalive, unresponsive, timeout, disconnect, NO_CONNECTION, reconnect, denies. */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { connectPair, makePair, PROTOCOL_ID } from "./helpers.js";

function byType(events: EndpointEvent[], type: EndpointEvent["type"]) {
  return events.filter((e) => e.type === type);
}

describe("lifecycle", () => {
  it("keepalives hold an idle connection open well past the timeout", () => {
    const seed = 201;
    const pair = makePair(seed, { server: { timeoutMs: 2000 }, client: { timeoutMs: 2000 } });
    const [c] = connectPair(pair);
    pair.drive({ maxTimeMs: 10_000 });
    expect(byType(pair.clientEvents(), "disconnect"), `seed ${seed}`).toHaveLength(0);
    expect(byType(pair.serverEvents(), "disconnect"), `seed ${seed}`).toHaveLength(0);
    // Traffic was only keepalives/acks/clock sync, and it kept flowing.
    expect(pair.client.stats(c).packets.received, `seed ${seed}`).toBeGreaterThan(5);
  });

  it("silence -> unresponsive, then responsive when traffic resumes, then timeout", () => {
    const seed = 202;
    const pair = makePair(seed, { server: { timeoutMs: 4000, keepaliveMs: 250 }, client: { timeoutMs: 4000, unresponsiveMs: 1000 } });
    const [c] = connectPair(pair);
    pair.network.link(pair.serverAddress, pair.clientAddress, { lossRate: 1 });
    pair.drive({ maxTimeMs: 1500 });
    const un = byType(pair.clientEvents(), "unresponsive");
    expect(un, `seed ${seed}`).toHaveLength(1);
    pair.network.link(pair.serverAddress, pair.clientAddress, {});
    pair.drive({ maxTimeMs: 1500 });
    expect(byType(pair.clientEvents(), "responsive"), `seed ${seed}`).toHaveLength(1);
    pair.network.link(pair.serverAddress, pair.clientAddress, { lossRate: 1 });
    pair.drive({ maxTimeMs: 5000 });
    const d = byType(pair.clientEvents(), "disconnect");
    expect(d, `seed ${seed}`).toHaveLength(1);
    expect(d[0].type === "disconnect" && d[0].reason, `seed ${seed}`).toBe("timeout");
    expect(pair.client.connections()).not.toContain(c);
  });

  it("graceful disconnect carries reason and user data, acknowledged", () => {
    const seed = 203;
    const pair = makePair(seed, { pair: { link: { lossRate: 0.3 } } });
    const [c] = connectPair(pair);
    pair.client.close(c, { app: 77 }, new Uint8Array([9, 8, 7]));
    pair.drive({ maxTimeMs: 3000 });
    const s = byType(pair.serverEvents(), "disconnect");
    expect(s, `seed ${seed}`).toHaveLength(1);
    if (s[0].type !== "disconnect") return;
    expect(s[0].reason).toEqual({ app: 77 });
    expect([...(s[0].userData ?? [])]).toEqual([9, 8, 7]);
    const cl = byType(pair.clientEvents(), "disconnect");
    expect(cl, `seed ${seed}`).toHaveLength(1);
    expect(pair.client.connections()).toHaveLength(0);
    expect(pair.server.connections()).toHaveLength(0);
    expect(() => pair.client.send(c, new Uint8Array(1), { channel: 0 })).toThrow(expect.objectContaining({ code: "ERR_UNKNOWN_CONNECTION" }));
  });

  it("a closing side that keeps receiving data never has a timer due that it cannot clear", () => {
    const seed = 208;
    const pair = makePair(seed, { pair: { link: { latencyMs: 20, lossRate: 0.2 } } });
    const [c, s] = connectPair(pair);
    // The server closes while the client, not yet told, sends a burst of 40 packets: the server,
    // now Disconnecting, receives more than the 8 that make a connected side ack at once.
    pair.server.close(s);
    for (let i = 0; i < 40; i++) pair.client.send(c, new Uint8Array(1100), { channel: 3 });
    const r = pair.drive({ maxTimeMs: 5000, maxSteps: 20_000 });
    expect(r.stop, `seed ${seed}: ${r.steps} steps to ${r.now} ms`).not.toBe("steps");
    expect(pair.server.connections(), `seed ${seed}`).toHaveLength(0);
    expect(byType(pair.clientEvents(), "disconnect"), `seed ${seed}`).toHaveLength(1);
  });

  it("a peer the server timed out gets NO_CONNECTION at once and reconnects", () => {
    const seed = 204;
    const pair = makePair(seed, { server: { timeoutMs: 1000 }, client: { timeoutMs: 60_000, keepaliveMs: 60_000 } });
    const [c] = connectPair(pair);
    // Cut client -> server long enough for the server (1 s timeout) to drop the client.
    pair.network.link(pair.clientAddress, pair.serverAddress, { lossRate: 1 });
    pair.drive({ maxTimeMs: 2000 });
    expect(byType(pair.serverEvents(), "disconnect"), `seed ${seed}`).toHaveLength(1);
    pair.network.link(pair.clientAddress, pair.serverAddress, {});
    const before = pair.now;
    pair.client.send(c, new Uint8Array([1]), { channel: 0 });
    pair.drive({ maxTimeMs: 500 });
    const d = byType(pair.clientEvents(), "disconnect");
    expect(d, `seed ${seed}`).toHaveLength(1);
    expect(d[0].type === "disconnect" && d[0].reason).toBe("no-connection");
    expect(pair.now - before).toBeLessThanOrEqual(500);
    expect(pair.server.counters.noConnectionSent).toBeGreaterThan(0);
    // Reconnect to the same server works.
    const [c2] = connectPair(pair);
    expect(c2).not.toBe(c);
    pair.client.send(c2, new Uint8Array([42]), { channel: 0 });
    pair.drive({ maxTimeMs: 500 });
    const m = byType(pair.serverEvents(), "message");
    expect(m.length).toBe(1);
  });

  it("denies: server full, version mismatch, accept hook with user data", () => {
    const seed = 205;
    const denyOf = (events: EndpointEvent[]) => {
      const d = byType(events, "disconnect")[0];
      return d?.type === "disconnect" ? d : undefined;
    };
    // Full.
    let pair = makePair(seed, { server: { maxConnections: 0 } });
    pair.client.connect(0, pair.serverAddress);
    pair.drive({ maxTimeMs: 1000 });
    expect(denyOf(pair.clientEvents())?.deny, `seed ${seed}`).toBe("server-full");
    // Version mismatch.
    pair = makePair(seed, { server: { appVersion: 2 }, client: { appVersion: 1 } });
    pair.client.connect(0, pair.serverAddress);
    pair.drive({ maxTimeMs: 1000 });
    expect(denyOf(pair.clientEvents())?.deny, `seed ${seed}`).toBe("version-mismatch");
    // Channel mismatch.
    pair = makePair(seed, { client: { channels: [{ mode: "unreliable" }] } });
    pair.client.connect(0, pair.serverAddress);
    pair.drive({ maxTimeMs: 1000 });
    expect(denyOf(pair.clientEvents())?.deny, `seed ${seed}`).toBe("channel-mismatch");
    // Accept hook sees the user data and refuses with its own.
    let seen: number[] = [];
    pair = makePair(seed, {
      server: {
        accept: (req) => {
          seen = [...req.userData];
          return { accept: false, userData: new TextEncoder().encode("banned") };
        },
      },
    });
    pair.client.connect(0, pair.serverAddress, { userData: new Uint8Array([5, 6]) });
    pair.drive({ maxTimeMs: 1000 });
    const d = denyOf(pair.clientEvents());
    expect(seen).toEqual([5, 6]);
    expect(d?.reason).toBe("denied");
    expect(d?.deny).toBe("refused");
    expect(new TextDecoder().decode(d?.userData)).toBe("banned");
    expect(pair.server.connectionCount).toBe(0);
  });

  it("connect timeout when nobody answers", () => {
    const seed = 206;
    const pair = makePair(seed);
    pair.network.link(pair.clientAddress, pair.serverAddress, { lossRate: 1 });
    pair.client.connect(0, pair.serverAddress);
    pair.drive({ maxTimeMs: 10_000 });
    const d = byType(pair.clientEvents(), "disconnect")[0];
    expect(d?.type === "disconnect" && d.reason, `seed ${seed}`).toBe("connect-timeout");
  });

  it("a handshake given a longer timeoutMs waits that long, not the default 5 s", () => {
    const pair = makePair(207);
    pair.network.link(pair.clientAddress, pair.serverAddress, { lossRate: 1 });
    pair.client.connect(0, pair.serverAddress, { timeoutMs: 12_000 });
    pair.drive({ maxTimeMs: 11_900 });
    expect(byType(pair.clientEvents(), "disconnect")).toEqual([]);
    pair.drive({ maxTimeMs: 200 });
    const d = byType(pair.clientEvents(), "disconnect")[0];
    expect(d?.type === "disconnect" && d.reason).toBe("connect-timeout");
    expect(pair.now).toBeGreaterThanOrEqual(12_000);
    expect(() => pair.client.connect(0, "10.0.0.9:1", { timeoutMs: 0 })).toThrow(expect.objectContaining({ code: "ERR_SESSION_CONFIG" }));
  });

  it("typed errors for misuse", () => {
    const e = new Endpoint({ protocolId: PROTOCOL_ID, engine: "ts" });
    expect(() => e.connect(0, "nonsense")).toThrow(expect.objectContaining({ code: "ERR_INVALID_ADDRESS" }));
    const c = e.connect(0, "10.0.0.9:1");
    expect(() => e.send(c, new Uint8Array(1), { channel: 0 })).toThrow(expect.objectContaining({ code: "ERR_CONNECTION_CLOSED" }));
    expect(() => e.connect(0, "10.0.0.9:1")).toThrow(expect.objectContaining({ code: "ERR_ALREADY_CONNECTED" }));
    const pair = makePair(207);
    const [cc] = connectPair(pair);
    expect(() => pair.client.send(cc, new Uint8Array(1), { channel: 99 })).toThrow(expect.objectContaining({ code: "ERR_UNKNOWN_CHANNEL" }));
    expect(() => pair.client.send(cc, new Uint8Array(70_000), { channel: 2 })).toThrow(expect.objectContaining({ code: "ERR_MESSAGE_TOO_LARGE" }));
  });
});
