/** Many peers closing at the same moment: DISCONNECT resends back off with jitter (no lockstep)
 *  and every close reaches the server as "normal" despite heavy loss toward it. */
import { describe, expect, it } from "vitest";
import { Network } from "../../src/sim/network.js";
import { Endpoint } from "../../src/session/endpoint.js";
import type { Address, SansIoNode, Transmit } from "../../src/session/sans-io.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { PROTOCOL_ID } from "./helpers.js";

const DISCONNECT = 6;

/** Wraps an endpoint and records when it sends DISCONNECT packets. */
class Recording implements SansIoNode<EndpointEvent> {
  readonly disconnectTimes: number[] = [];
  constructor(readonly endpoint: Endpoint) {}
  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    this.endpoint.handleDatagram(now, from, bytes);
  }
  handleTimeout(now: number): void {
    this.endpoint.handleTimeout(now);
  }
  pollTransmit(now: number): Transmit | undefined {
    const t = this.endpoint.pollTransmit(now);
    if (t !== undefined && (t.bytes[0] & 0x0f) === DISCONNECT) this.disconnectTimes.push(now);
    return t;
  }
  pollTimeout(): number | undefined {
    return this.endpoint.pollTimeout();
  }
  pollEvent(): EndpointEvent | undefined {
    return this.endpoint.pollEvent();
  }
}

describe("close storm", () => {
  it("40 clients closing at once through 40% loss toward the server all end 'normal'; resends are desynchronized and back off", () => {
    const seed = 901;
    const clients = 40;
    const network = new Network<EndpointEvent>({ seed });
    const serverAddress = "10.0.0.1:7777";
    const server = network.addNode(serverAddress, new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed, engine: "ts", maxConnections: 64 }));
    const nodes: Recording[] = [];
    const ids: number[] = [];
    for (let i = 0; i < clients; i++) {
      const address = `10.0.1.${i + 1}:5000`;
      const node = network.addNode(address, new Recording(new Endpoint({ protocolId: PROTOCOL_ID, seed: seed * 100 + i, engine: "ts" })));
      network.link(address, serverAddress, { latencyMs: 5 });
      network.link(serverAddress, address, { latencyMs: 5 });
      nodes.push(node);
      ids.push(node.endpoint.connect(network.now, serverAddress));
    }
    network.flush();
    network.drive({ maxTimeMs: 2000 });
    const connected = network.events(serverAddress).filter((e) => e.type === "connect").length;
    expect(connected, `seed ${seed}`).toBe(clients);

    // Now the path toward the server loses 40%: every client closes at the same instant.
    for (let i = 0; i < clients; i++) network.link(`10.0.1.${i + 1}:5000`, serverAddress, { latencyMs: 5, lossRate: 0.4 });
    const closedAt = network.now;
    nodes.forEach((n, i) => n.endpoint.close(ids[i], "normal", undefined, closedAt));
    network.flush();
    network.drive({ maxTimeMs: 6000 });

    const reasons = network.events(serverAddress).filter((e) => e.type === "disconnect").map((e) => (e.type === "disconnect" ? e.reason : ""));
    expect(reasons.length, `seed ${seed}`).toBe(clients);
    expect(new Set(reasons), `seed ${seed}`).toEqual(new Set(["normal"]));
    expect(server.connections(), `seed ${seed}`).toEqual([]);

    // No lockstep: the second DISCONNECT of the clients that needed one leaves at many different times.
    const seconds = nodes.filter((n) => n.disconnectTimes.length >= 2).map((n) => n.disconnectTimes[1]);
    expect(seconds.length, `seed ${seed}: clients that resent`).toBeGreaterThan(8);
    expect(new Set(seconds).size, `seed ${seed}`).toBeGreaterThan(seconds.length * 0.8);
    // Backoff: across all resends, the average gap grows from the first to the later ones.
    const gaps = (k: number) => nodes.filter((n) => n.disconnectTimes.length > k + 1).map((n) => n.disconnectTimes[k + 1] - n.disconnectTimes[k]);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(gaps(0).length).toBeGreaterThan(5);
    expect(gaps(1).length).toBeGreaterThan(2);
    expect(mean(gaps(1)), `seed ${seed}`).toBeGreaterThan(mean(gaps(0)));
  });
});
