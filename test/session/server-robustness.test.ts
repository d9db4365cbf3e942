/**
 * A server endpoint and the application code it calls: an accept hook that throws, options no
 * connection could be opened with, and a connection closed from its own "connect" event. None
 * of them may crash the server, lose what other connections sent, or leave the client waiting.
 * Several clients on one server, pumped by hand on a virtual clock (no loss: these are about
 * the server's own behaviour).
 */
import { describe, expect, it } from "vitest";
import { ChannelConfigError } from "../../src/channels/errors.js";
import { CongestionConfigError } from "../../src/congestion/errors.js";
import { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointConfig, EndpointEvent } from "../../src/session/types.js";
import { PROTOCOL_ID, checkPayload, eventsOf, payload, transmitsOf } from "./helpers.js";

const SERVER = "192.0.2.1:7777";

/** One server and any number of clients, datagrams delivered at once, in batches per pump. */
class Room {
  now = 0;
  readonly server: Endpoint;
  readonly clients = new Map<string, Endpoint>();
  readonly serverEvents: EndpointEvent[] = [];
  readonly clientEvents = new Map<string, EndpointEvent[]>();

  constructor(server: Partial<EndpointConfig> = {}) {
    this.server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: 5, engine: "ts", ...server });
  }

  client(address: string): Endpoint {
    const ep = new Endpoint({ protocolId: PROTOCOL_ID, seed: 100 + this.clients.size, engine: "ts" });
    this.clients.set(address, ep);
    this.clientEvents.set(address, []);
    return ep;
  }

  /** Every client's datagrams into the server as one batch, then the server's back; `rounds` times, 5 ms apart. */
  pump(rounds = 1, onServerEvent?: (e: EndpointEvent) => void): void {
    for (let r = 0; r < rounds; r++) {
      this.now += 5;
      for (const [address, ep] of this.clients) {
        ep.handleTimeout(this.now);
        for (const tx of transmitsOf(ep, this.now)) this.server.handleDatagram(this.now, address, tx.bytes.slice());
      }
      this.server.handleTimeout(this.now);
      for (const e of eventsOf(this.server)) {
        this.serverEvents.push(e);
        onServerEvent?.(e);
      }
      for (const tx of transmitsOf(this.server, this.now)) this.clients.get(tx.to)?.handleDatagram(this.now, SERVER, tx.bytes.slice());
      for (const [address, ep] of this.clients) {
        ep.handleTimeout(this.now);
        this.clientEvents.get(address)!.push(...eventsOf(ep));
      }
    }
  }
}

describe("a server endpoint and the application code it calls", () => {
  it("an accept hook that throws refuses that client (counted); other clients' datagrams in the same batch are all processed", () => {
    const room = new Room({
      accept: (request) => {
        if (request.userData[0] === 0xbb) throw new SyntaxError("the application's own bug");
        return true;
      },
    });
    const good = room.client("198.51.100.1:1000");
    const g = good.connect(room.now, SERVER);
    room.pump(4);
    expect(room.clientEvents.get("198.51.100.1:1000")!.some((e) => e.type === "connect")).toBe(true);
    // The good client streams reliable-ordered messages while bad clients' RESPONSEs arrive in
    // the same batches.
    for (let k = 0; k < 3; k++) room.client(`203.0.113.${k + 1}:2000`).connect(room.now, SERVER, { userData: Uint8Array.of(0xbb) });
    let sent = 0;
    for (let round = 0; round < 40; round++) {
      for (let m = 0; m < 5; m++) good.send(g, payload(sent++, 60), { channel: 0 }, room.now);
      expect(() => room.pump(1)).not.toThrow();
    }
    room.pump(40);
    const got = room.serverEvents.filter((e) => e.type === "message").map((e) => checkPayload((e as { data: Uint8Array }).data));
    expect(got).toEqual(Array.from({ length: sent }, (_, i) => i));
    expect(room.server.counters.acceptHookErrors).toBe(3);
    for (let k = 0; k < 3; k++) {
      const ends = room.clientEvents.get(`203.0.113.${k + 1}:2000`)!.filter((e) => e.type === "disconnect");
      expect(ends.map((e) => e.type === "disconnect" && [e.reason, e.deny])).toEqual([["denied", "refused"]]);
    }
    expect(room.server.connectionCount).toBe(1);
  });

  it("an accept hook answering something that is not a decision (undefined, null, user data that is not bytes) refuses that client the same way", () => {
    // A hook written `if (ok) return true;` answers undefined for everyone else.
    const answers: unknown[] = [undefined, null, { accept: true, userData: "hi" }, { accept: "yes" }, 1];
    const room = new Room({ accept: (request) => (request.userData[0] === 0xff ? true : (answers[request.userData[0]!] as never)) });
    const good = room.client("198.51.100.1:1000");
    const g = good.connect(room.now, SERVER, { userData: Uint8Array.of(0xff) });
    room.pump(4);
    answers.forEach((_, k) => room.client(`203.0.113.${k + 1}:2000`).connect(room.now, SERVER, { userData: Uint8Array.of(k) }));
    for (let m = 0; m < 20; m++) good.send(g, payload(m, 60), { channel: 0 }, room.now);
    expect(() => room.pump(40)).not.toThrow();
    expect(room.serverEvents.filter((e) => e.type === "message").map((e) => checkPayload((e as { data: Uint8Array }).data))).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(room.server.counters.acceptHookErrors).toBe(answers.length);
    expect(room.server.connectionCount).toBe(1);
  });

  it("refuses, at construction, channel and congestion options no connection could be opened with", () => {
    const make = (over: Partial<EndpointConfig>) => () => new Endpoint({ protocolId: PROTOCOL_ID, server: true, engine: "ts", ...over });
    expect(make({ channels: [{ mode: "reliable-ordered", redundancy: 1 }] })).toThrow(ChannelConfigError);
    expect(make({ channels: [{ mode: "unreliable", piggyback: 1 }] })).toThrow(ChannelConfigError);
    expect(make({ channels: [{ mode: "reliable-ordered", maxMessageBytes: 2 * 1024 * 1024 }] })).toThrow(ChannelConfigError);
    expect(make({ channels: [{ mode: "latest-state", maxKeys: 0 }] })).toThrow(ChannelConfigError);
    expect(make({ channels: [{ mode: "unreliable", priority: Number.NaN }] })).toThrow(ChannelConfigError);
    expect(make({ congestion: "bogus" })).toThrow(CongestionConfigError);
    // And a valid server still constructs.
    expect(make({ channels: [{ mode: "reliable-ordered", piggyback: 1 }, { mode: "unreliable", redundancy: 2 }] })).not.toThrow();
  });

  for (const reason of ["kicked", { app: 70 }] as const) {
    it(`a connection closed from its own connect event (${JSON.stringify(reason)}): the client connects and then hears why; the server opened it once`, () => {
      const room = new Room();
      const client = room.client("198.51.100.1:1000");
      const c = client.connect(room.now, SERVER);
      room.pump(60, (e) => {
        if (e.type === "connect") room.server.close(e.connection, reason, Uint8Array.of(7), room.now);
      });
      expect(room.serverEvents.filter((e) => e.type === "connect")).toHaveLength(1);
      const events = room.clientEvents.get("198.51.100.1:1000")!;
      expect(events.map((e) => e.type)).toEqual(["connect", "disconnect"]);
      const end = events[1]!;
      expect(end.type === "disconnect" && [end.connection, end.reason, [...(end.userData ?? [])]]).toEqual([c, reason, [7]]);
      expect(room.server.connectionCount).toBe(0);
      expect(client.connectionCount).toBe(0);
    });
  }
});
