/**
 * Two endpoints with no direct path (their direct links drop everything, as between two
 * symmetric NATs) connect through a relay on the simulator, seeded, on the virtual clock:
 * src/relay/nodes.ts (RelayNode, RelayedNode) around ordinary Endpoints. Every reliable message
 * arrives once and in order both ways under loss, the relay never sends more than it receives,
 * and an attacker's datagrams to the relay go nowhere.
 */
import { describe, expect, it } from "vitest";
import { RelayedNode, RelayNode } from "../../src/relay/nodes.js";
import { RELAY_CONTROL_BYTES, RELAY_TOKEN_BYTES } from "../../src/relay/wire.js";
import type { Endpoint } from "../../src/session/endpoint.js";
import type { SansIoNode } from "../../src/session/sans-io.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { Network } from "../../src/sim/network.js";
import { endpoint } from "../game/helpers.js";
import { checkPayload, Injector, payload } from "../session/helpers.js";

const HOST = "10.1.0.2:7777";
const JOINER = "10.2.0.2:40000";
const RELAY = "192.0.2.1:9001";
const ATTACKER = "203.0.113.66:5555";

function setup(seed: number, lossRate: number) {
  const net = new Network<EndpointEvent>({ seed, defaultLink: { latencyMs: 15, jitterMs: 3, lossRate } });
  const relay = net.addNode(RELAY, new RelayNode({ random: () => Uint8Array.from({ length: 16 }, (_, i) => (seed * 37 + i * 11) & 0xff) }));
  const host = net.addNode(HOST, new RelayedNode<EndpointEvent>(endpoint(seed * 2 + 1, { server: true })));
  const joiner = net.addNode(JOINER, new RelayedNode<EndpointEvent>(endpoint(seed * 2 + 2, { server: true })));
  const attacker = net.addNode(ATTACKER, new Injector() as SansIoNode<EndpointEvent>) as unknown as Injector;
  // No direct path, either way.
  net.link(HOST, JOINER, { lossRate: 1 });
  net.link(JOINER, HOST, { lossRate: 1 });
  // The attacker's own link is perfect, so every forged datagram reaches the relay.
  net.link(ATTACKER, RELAY, {});
  const { tokens } = relay.forwarder.allocate(net.now)!;
  const hostSeesJoinerAt = host.addRoute(RELAY, tokens[0]);
  const joinerSeesHostAt = joiner.addRoute(RELAY, tokens[1]);
  return { net, relay, host, joiner, attacker, tokens, hostSeesJoinerAt, joinerSeesHostAt };
}

const hostEndpoint = (n: RelayedNode<EndpointEvent>): Endpoint => n.inner as Endpoint;

for (const [seed, lossRate] of [
  [1, 0],
  [2, 0.05],
  [3, 0.2],
] as const) {
  describe(`through a relay, seed ${seed}, ${lossRate * 100}% loss on every link`, () => {
    it("connects, and every reliable message arrives once and in order both ways", () => {
      const { net, relay, host, joiner, attacker, tokens, hostSeesJoinerAt, joinerSeesHostAt } = setup(seed, lossRate);
      try {
        net.drive({ maxTimeMs: 100 });
        const j = hostEndpoint(joiner).connect(net.now, joinerSeesHostAt);
        let h = -1;
        let up = false;
        let joinerSeenAt = "";
        for (let i = 0; i < 200 && (h < 0 || !up); i++) {
          net.drive({ maxTimeMs: 50 });
          for (const ev of net.takeEvents(HOST)) {
            if (ev.type === "connect") {
              h = ev.connection;
              joinerSeenAt = ev.address;
            }
          }
          for (const ev of net.takeEvents(JOINER)) if (ev.type === "connect" && ev.connection === j) up = true;
        }
        expect(up && h >= 0).toBe(true);
        // The host sees the joiner at its virtual address (100::/64), not at the relay or the joiner's own.
        expect(joinerSeenAt).toBe(hostSeesJoinerAt);
        expect(joinerSeenAt).toMatch(/^\[100::[0-9a-f:]+\]:9001$/);

        // An attacker who knows the relay sends datagrams with one bit of a real token
        // flipped: none of it goes anywhere.
        for (let k = 0; k < 50; k++) {
          const forged = new Uint8Array(40).fill(k);
          forged.set(tokens[k % 2]!, 0);
          forged[k % RELAY_TOKEN_BYTES]! ^= 1 << (k % 8);
          attacker.queue.push({ to: RELAY, bytes: forged });
        }
        const forwardedBefore = relay.forwarder.counters.forwarded;

        const COUNT = 300;
        const got = { host: [] as number[], joiner: [] as number[] };
        for (let i = 0; i < COUNT; i++) {
          hostEndpoint(joiner).send(j, payload(i, 40 + (i % 200)), { channel: 0 });
          hostEndpoint(host).send(h, payload(100_000 + i, 40 + (i % 150)), { channel: 0 });
          if (i % 10 === 9) net.drive({ maxTimeMs: 33 });
        }
        for (let i = 0; i < 400 && (got.host.length < COUNT || got.joiner.length < COUNT); i++) {
          net.drive({ maxTimeMs: 50 });
          for (const ev of net.takeEvents(HOST)) if (ev.type === "message") got.host.push(checkPayload(ev.data));
          for (const ev of net.takeEvents(JOINER)) if (ev.type === "message") got.joiner.push(checkPayload(ev.data));
        }
        expect(got.host).toEqual(Array.from({ length: COUNT }, (_, i) => i));
        expect(got.joiner).toEqual(Array.from({ length: COUNT }, (_, i) => 100_000 + i));

        const c = relay.forwarder.counters;
        // Every forged datagram was dropped as an unknown token; none reached a peer.
        expect(c.unknownToken).toBe(50);
        expect(attacker.received).toBe(0);
        expect(c.forwarded).toBeGreaterThan(forwardedBefore);
        // Same bytes out as in, for every forwarded datagram: the relay is no amplifier. Besides
        // those it sent only its CHALLENGEs (17 bytes, one per BIND or move; PROTOCOL §8).
        const stats = (from: string, to: string) => net.linkStats(from, to);
        const fromRelay = [stats(RELAY, HOST), stats(RELAY, JOINER)];
        expect(c.challenges).toBeGreaterThanOrEqual(2);
        expect(c.confirmed).toBeGreaterThanOrEqual(2);
        expect(c.confirmed).toBeLessThanOrEqual(c.challenges);
        expect(fromRelay[0]!.sent + fromRelay[1]!.sent).toBe(c.forwarded + c.challenges);
        expect(fromRelay[0]!.sentBytes + fromRelay[1]!.sentBytes).toBe(c.forwardedBytes + RELAY_CONTROL_BYTES * c.challenges);
        const peersToRelay = stats(HOST, RELAY).deliveredBytes + stats(JOINER, RELAY).deliveredBytes;
        expect(c.forwardedBytes).toBeLessThanOrEqual(peersToRelay);
        // Nothing went straight between the peers (those links drop all), and both used only the relay.
        expect(net.linkStats(HOST, JOINER).sent + net.linkStats(JOINER, HOST).sent).toBe(0);
        expect(host.routes.counters.dropped + joiner.routes.counters.dropped).toBe(0);
      } catch (error) {
        throw new Error(`seed ${seed}: ${(error as Error).message}`, { cause: error });
      }
    });
  });
}

describe("RelayedNode's drops", () => {
  it("drops a transmit to a virtual address without a route and a datagram that really comes from 100::/64", () => {
    const inner = new Injector() as SansIoNode<EndpointEvent> & Injector;
    const node = new RelayedNode<EndpointEvent>(inner);
    inner.queue.push({ to: "[100::9]:9001", bytes: Uint8Array.of(1) }, { to: "10.0.0.1:1", bytes: Uint8Array.of(2) });
    expect(node.pollTransmit(0)).toEqual({ to: "10.0.0.1:1", bytes: Uint8Array.of(2) });
    expect(node.pollTransmit(0)).toBeUndefined();
    node.handleDatagram(0, "[100::5]:1", Uint8Array.of(3));
    node.handleDatagram(0, "10.0.0.1:1", Uint8Array.of(4));
    expect(inner.received).toBe(1);
    expect(node.dropped).toEqual({ unrouted: 1, fromVirtual: 1 });
  });
});
