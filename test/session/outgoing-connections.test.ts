/**
 * A server endpoint that also opens connections of its own (the API's server.connect()): they
 * count against maxConnections like its clients', so neither side can take the other's slots.
 */
import { describe, expect, it } from "vitest";
import type { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { endpoint } from "../game/helpers.js";

/** Endpoints by address, every datagram delivered at once; 10 ms steps until `until` or `steps`. */
function network(nodes: Record<string, Endpoint>) {
  const log: Record<string, EndpointEvent[]> = Object.fromEntries(Object.keys(nodes).map((a) => [a, []]));
  let now = 0;
  const run = (steps: number, until?: () => boolean) => {
    for (let i = 0; i < steps && !(until?.() ?? false); i++, now += 10) {
      for (const [address, node] of Object.entries(nodes)) {
        node.handleTimeout(now);
        for (let t = node.pollTransmit(now); t !== undefined; t = node.pollTransmit(now)) nodes[t.to]?.handleDatagram(now, address, t.bytes.slice());
        for (let ev = node.pollEvent(); ev !== undefined; ev = node.pollEvent()) log[address]!.push(ev);
      }
    }
    return now;
  };
  return { log, run, now: () => now };
}

const connected = (events: EndpointEvent[], id: number) => events.some((e) => e.type === "connect" && e.connection === id);

describe("a server's own connections and its clients share maxConnections", () => {
  it("an attempt still handshaking counts: a client arriving meanwhile finds the server full", () => {
    const hub = endpoint(37, { server: true, maxConnections: 1, maxPendingHandshakes: 2 });
    const client = endpoint(38);
    // The peer does not exist (yet): the hub's attempt stays pending.
    const net = network({ "10.0.0.1:1": hub, "10.0.0.2:1": client });
    hub.connect(0, "10.0.0.9:1");
    const c = client.connect(0, "10.0.0.1:1");
    net.run(200, () => net.log["10.0.0.2:1"]!.some((e) => e.connection === c && e.type === "disconnect"));
    expect(net.log["10.0.0.2:1"]!.find((e) => e.connection === c)).toMatchObject({ type: "disconnect", reason: "denied", deny: "server-full" });
  });

  it("outgoing connections count: past the limit connect() throws, and a client is denied server-full", () => {
    const hub = endpoint(30, { server: true, maxConnections: 2, maxPendingHandshakes: 3 });
    const peers = { "10.0.0.2:1": endpoint(31, { server: true }), "10.0.0.3:1": endpoint(32, { server: true }) };
    const client = endpoint(33);
    const net = network({ "10.0.0.1:1": hub, ...peers, "10.0.0.4:1": client });
    const a = hub.connect(net.now(), "10.0.0.2:1");
    const b = hub.connect(net.now(), "10.0.0.3:1");
    // Two attempts already take both connections: a third is refused at once, typed.
    expect(() => hub.connect(net.now(), "10.0.0.4:1")).toThrow(expect.objectContaining({ code: "ERR_TOO_MANY_CONNECTIONS" }));
    net.run(200, () => connected(net.log["10.0.0.1:1"]!, a) && connected(net.log["10.0.0.1:1"]!, b));
    expect(connected(net.log["10.0.0.1:1"]!, a) && connected(net.log["10.0.0.1:1"]!, b)).toBe(true);

    const c = client.connect(net.now(), "10.0.0.1:1");
    net.run(200, () => net.log["10.0.0.4:1"]!.some((e) => e.connection === c && e.type === "disconnect"));
    expect(net.log["10.0.0.4:1"]!.find((e) => e.connection === c)).toMatchObject({ type: "disconnect", reason: "denied", deny: "server-full" });

    // One outgoing connection closed: the client gets in.
    hub.close(a);
    net.run(100);
    const again = client.connect(net.now(), "10.0.0.1:1");
    net.run(200, () => connected(net.log["10.0.0.4:1"]!, again));
    expect(connected(net.log["10.0.0.4:1"]!, again)).toBe(true);
  });

  it("clients count too: a full server cannot connect out", () => {
    const hub = endpoint(34, { server: true, maxConnections: 1, maxPendingHandshakes: 2 });
    const client = endpoint(35);
    const net = network({ "10.0.0.1:1": hub, "10.0.0.2:1": client, "10.0.0.3:1": endpoint(36, { server: true }) });
    const c = client.connect(0, "10.0.0.1:1");
    net.run(200, () => connected(net.log["10.0.0.2:1"]!, c));
    expect(connected(net.log["10.0.0.2:1"]!, c)).toBe(true);
    expect(() => hub.connect(net.now(), "10.0.0.3:1")).toThrow(expect.objectContaining({ code: "ERR_TOO_MANY_CONNECTIONS" }));
  });
});
