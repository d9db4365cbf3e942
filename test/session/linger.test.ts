/**
 * close() with `linger` (Endpoint.close's last argument; the API's default): what was sent before
 * the close is delivered first, then the DISCONNECT goes. Without it the close drops what is
 * queued (as ENet's disconnect does; linger is its disconnect_later). Both stay bounded by
 * closeTimeoutMs from the call. On the simulator's virtual clock, fixed seeds.
 */
import { describe, expect, it } from "vitest";
import type { LinkConfig } from "../../src/sim/link.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { ConnectionClosedError } from "../../src/session/errors.js";
import { checkPayload, connectPair, makePair, payload } from "./helpers.js";

type Pair = ReturnType<typeof makePair>;

function messagesOf(events: EndpointEvent[]): number[] {
  return events.filter((e) => e.type === "message").map((e) => checkPayload((e as { data: Uint8Array }).data));
}

/** Runs the pair for `ms`, collecting both sides' events. */
function run(pair: Pair, ms: number): { server: EndpointEvent[]; client: EndpointEvent[] } {
  const server: EndpointEvent[] = [];
  const client: EndpointEvent[] = [];
  for (let t = 0; t < ms; t += 10) {
    pair.advance(10);
    server.push(...pair.serverEvents());
    client.push(...pair.clientEvents());
  }
  return { server, client };
}

/** Closes the client's connection `c` with linger now, then runs until `side` reports its
 *  disconnect (at most `limitMs`); returns how long that took (-1: never). */
function closeAndTime(pair: Pair, c: number, side: "server" | "client", limitMs: number): number {
  const closedAt = pair.now;
  pair.client.close(c, "normal", new Uint8Array(0), pair.now, true);
  for (let t = 0; t < limitMs; t += 10) {
    pair.advance(10);
    const events = side === "server" ? pair.serverEvents() : pair.clientEvents();
    if (events.some((e) => e.type === "disconnect")) return pair.now - closedAt;
  }
  return -1;
}

describe("close with linger", () => {
  for (const loss of [0, 0.1]) {
    it(`delivers every message sent before the close, then disconnects with the reason (${loss * 100} % loss)`, () => {
      const seed = 41 + loss * 100;
      const pair = makePair(seed, { pair: { link: { lossRate: loss, latencyMs: 20 } } });
      const [c] = connectPair(pair);
      const receipts: number[] = [];
      for (let i = 0; i < 500; i++) {
        const r = pair.client.send(c, payload(i, 300), { channel: 0, receipt: i % 50 === 0 }, pair.now);
        if (i % 50 === 0) receipts.push(r);
      }
      pair.client.close(c, { app: 77 }, Uint8Array.of(9), pair.now, true);
      // Sends after the close are refused, as without linger.
      expect(() => pair.client.send(c, payload(999, 10), { channel: 0 }, pair.now), `seed ${seed}`).toThrow(ConnectionClosedError);
      const { server, client } = run(pair, 3000);
      expect(messagesOf(server), `seed ${seed}`).toEqual(Array.from({ length: 500 }, (_, i) => i));
      const end = server.find((e) => e.type === "disconnect");
      expect(end?.type === "disconnect" && [end.reason, [...(end.userData ?? [])]], `seed ${seed}`).toEqual([{ app: 77 }, [9]]);
      // The server saw every message before the goodbye.
      expect(server.findIndex((e) => e.type === "disconnect"), `seed ${seed}`).toBe(server.length - 1);
      // Every receipt says delivered (in the order the acks came: a resent message's comes later).
      const settled = client.filter((e) => e.type === "receipt").map((e) => (e.type === "receipt" ? [e.receipt, e.delivered] : []));
      expect(settled.sort((a, b) => (a[0] as number) - (b[0] as number)), `seed ${seed}`).toEqual(receipts.map((r) => [r, true]));
      expect(client.filter((e) => e.type === "disconnect").map((e) => e.type === "disconnect" && e.reason), `seed ${seed}`).toEqual([{ app: 77 }]);
      expect(pair.client.connectionCount, `seed ${seed}`).toBe(0);
    });
  }

  it("does not wait for packets that carry no message (a client's clock-sync requests, every 100 ms at first): on a 200 ms round trip the goodbye follows the data's ack", () => {
    const pair = makePair(46, { pair: { link: { latencyMs: 100 } } });
    const [c] = connectPair(pair);
    for (let i = 0; i < 10; i++) pair.client.send(c, payload(i, 300), { channel: 0 }, pair.now);
    const took = closeAndTime(pair, c, "server", 3000);
    // Data out and its ack back (200 ms), then the DISCONNECT's way (100 ms): not the Linger
    // timer's 1.5 s (a review measured 1600 ms before).
    expect(took).toBeGreaterThan(0);
    expect(took).toBeLessThanOrEqual(400);
  });

  it("without linger, what is queued is dropped (the receipts say so) and the goodbye goes at once", () => {
    const pair = makePair(43, { pair: { link: { latencyMs: 20 } } });
    const [c] = connectPair(pair);
    const receipt = pair.client.send(c, payload(0, 300), { channel: 0, receipt: true }, pair.now);
    for (let i = 1; i < 500; i++) pair.client.send(c, payload(i, 300), { channel: 0 }, pair.now);
    pair.client.close(c, "normal", new Uint8Array(0), pair.now);
    const { server, client } = run(pair, 1000);
    expect(messagesOf(server).length).toBeLessThan(500);
    expect(client.filter((e) => e.type === "receipt").map((e) => e.type === "receipt" && [e.receipt, e.delivered])).toEqual([[receipt, false]]);
    expect(server.some((e) => e.type === "disconnect" && e.reason === "normal")).toBe(true);
  });

  it("a peer that went silent: the close still ends within closeTimeoutMs (half lingering, half saying goodbye)", () => {
    const pair = makePair(44, { client: { closeTimeoutMs: 2000 }, pair: { link: { latencyMs: 20 } } });
    const [c] = connectPair(pair);
    // Nothing gets through either way from here.
    for (const link of [pair.toServer, pair.toClient]) (link.config as LinkConfig).lossRate = 1;
    for (let i = 0; i < 50; i++) pair.client.send(c, payload(i, 300), { channel: 0 }, pair.now);
    const took = closeAndTime(pair, c, "client", 4000);
    expect(took).toBeGreaterThanOrEqual(2000 - 1);
    expect(took).toBeLessThanOrEqual(2000 + 20);
  });

  it("closing again with linger while lingering changes nothing", () => {
    const pair = makePair(47, { pair: { link: { latencyMs: 20 } } });
    const [c] = connectPair(pair);
    for (let i = 0; i < 500; i++) pair.client.send(c, payload(i, 300), { channel: 0 }, pair.now);
    pair.client.close(c, "normal", new Uint8Array(0), pair.now, true);
    pair.client.close(c, "kicked", new Uint8Array(0), pair.now, true);
    const { server } = run(pair, 2000);
    expect(messagesOf(server)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    expect(server.filter((e) => e.type === "disconnect").map((e) => e.type === "disconnect" && e.reason)).toEqual(["normal"]);
  });

  it("closing again while lingering closes at once", () => {
    const pair = makePair(45, { pair: { link: { latencyMs: 20 } } });
    const [c] = connectPair(pair);
    for (let i = 0; i < 500; i++) pair.client.send(c, payload(i, 300), { channel: 0 }, pair.now);
    pair.client.close(c, "normal", new Uint8Array(0), pair.now, true);
    pair.client.close(c, "kicked", new Uint8Array(0), pair.now);
    const { server } = run(pair, 1000);
    expect(messagesOf(server).length).toBeLessThan(500);
    expect(server.filter((e) => e.type === "disconnect").map((e) => e.type === "disconnect" && e.reason)).toEqual(["kicked"]);
  });
});
