/** Caller-facing contract details: disconnect reason codes, `now` on send, closed-but-unpolled ids. */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import { connectPair, makePair, PROTOCOL_ID } from "./helpers.js";

describe("endpoint API contract", () => {
  it("close() with an application code outside 64..255 throws ERR_INVALID_REASON", () => {
    const seed = 31;
    const pair = makePair(seed);
    const [c] = connectPair(pair);
    for (const app of [0, 63, 256, 64.5, -1, Number.NaN]) {
      expect(() => pair.client.close(c, { app }), `seed ${seed}, app ${app}`).toThrow(expect.objectContaining({ code: "ERR_INVALID_REASON" }));
    }
    expect(pair.client.connections(), `seed ${seed}`).toEqual([c]); // nothing was closed
    pair.client.close(c, { app: 255 });
    pair.drive({ maxTimeMs: 2000 });
    const ev = pair.serverEvents().find((e) => e.type === "disconnect");
    expect(ev?.type === "disconnect" ? ev.reason : undefined, `seed ${seed}`).toEqual({ app: 255 });
  });

  it("send(..., now) between drives moves the endpoint's clock and its deadline to now", () => {
    const seed = 32;
    const pair = makePair(seed);
    const [c] = connectPair(pair);
    const later = pair.now + 7.5;
    pair.client.send(c, new Uint8Array(10), { channel: 0 }, later);
    expect(pair.client.pollTimeout(), `seed ${seed}`).toBe(later);
    const tx = pair.client.pollTransmit(later);
    expect(tx, `seed ${seed}`).toBeDefined();
  });

  it("a closed connection whose disconnect event is not polled yet: send throws ERR_CONNECTION_CLOSED, then ERR_UNKNOWN_CONNECTION", () => {
    const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: 33, engine: "ts" });
    const c = client.connect(0, "10.0.0.1:7777");
    client.close(c); // still connecting: closes at once, "disconnect" queued
    expect(() => client.send(c, new Uint8Array(1), { channel: 0 })).toThrow(expect.objectContaining({ code: "ERR_CONNECTION_CLOSED" }));
    // stats() answers with the final figures until the event is polled; the event carries them.
    const final = client.stats(c);
    expect(final.packets.inFlight).toBe(0);
    const ev = client.pollEvent();
    expect(ev?.type).toBe("disconnect");
    expect(ev?.type === "disconnect" ? ev.stats : undefined).toBe(final);
    expect(() => client.stats(c)).toThrow(expect.objectContaining({ code: "ERR_UNKNOWN_CONNECTION" }));
    expect(() => client.send(c, new Uint8Array(1), { channel: 0 })).toThrow(expect.objectContaining({ code: "ERR_UNKNOWN_CONNECTION" }));
  });
});
