/**
 * A secure connection on the simulator (seeded, virtual clock): two ordinary Endpoints behind the
 * secure layer's nodes (src/secure/nodes.ts), under loss, duplication, reordering and
 * corruption. Every reliable message arrives once and in order both ways, no datagram on the
 * wire carries a payload in the clear, and an attacker who records the client's datagrams and
 * sends them again (from its own address) gets nothing delivered and moves nothing.
 */
import { describe, expect, it } from "vitest";
import { SecureClientNode, SecureServerNode } from "../../src/secure/nodes.js";
import { createConnectToken, parseConnectToken } from "../../src/secure/token.js";
import { SECURE_OVERHEAD } from "../../src/secure/wire.js";
import type { Endpoint } from "../../src/session/endpoint.js";
import { WrappingNode, type Address, type SansIoNode, type Transmit } from "../../src/session/sans-io.js";
import type { EndpointEvent } from "../../src/session/types.js";
import type { LinkConfig } from "../../src/sim/link.js";
import { Network } from "../../src/sim/network.js";
import { endpoint } from "../game/helpers.js";
import { checkPayload, Injector, payload } from "../session/helpers.js";

const SERVER = "10.0.0.1:7777";
const CLIENT = "10.0.0.2:40000";
const ATTACKER = "10.0.0.66:6666";
const PROTOCOL = 0x77; // test/game/helpers.ts's endpoint() protocol id is checked below
const KEY = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);
const NOW = 1_800_000_000;

/** Records (copies of) everything the client's node sends, for the attacker to replay. */
class Recording<E> extends WrappingNode<E> {
  readonly sent: Uint8Array[] = [];
  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    this.inner.handleDatagram(now, from, bytes);
  }
  pollTransmit(now: number): Transmit | undefined {
    const tx = this.inner.pollTransmit(now);
    if (tx !== undefined && this.sent.length < 5000) this.sent.push(tx.bytes.slice());
    return tx;
  }
}

function setup(seed: number, link: LinkConfig) {
  const net = new Network<EndpointEvent>({ seed, defaultLink: link });
  const serverEndpoint = endpoint(seed * 2 + 1, { server: true, protocolId: PROTOCOL, mtu: 1200 - SECURE_OVERHEAD, maxMtu: 1452 - SECURE_OVERHEAD });
  const clientEndpoint = endpoint(seed * 2 + 2, { protocolId: PROTOCOL, mtu: 1200 - SECURE_OVERHEAD, maxMtu: 1452 - SECURE_OVERHEAD });
  const server = net.addNode(
    SERVER,
    new SecureServerNode<EndpointEvent>(serverEndpoint, { serverKey: KEY, protocolId: PROTOCOL, addresses: [SERVER], maxAssociations: 8, idleTimeoutMs: 30_000, unixSeconds: () => NOW + 1 }),
  );
  const token = parseConnectToken(createConnectToken({ serverKey: KEY, protocolId: PROTOCOL, clientId: 7, serverAddresses: [SERVER], nowSeconds: NOW }), PROTOCOL, NOW);
  const client = net.addNode(CLIENT, new Recording<EndpointEvent>(new SecureClientNode<EndpointEvent>(clientEndpoint, SERVER, token)));
  const attacker = net.addNode(ATTACKER, new Injector() as SansIoNode<EndpointEvent>) as unknown as Injector;
  net.link(ATTACKER, SERVER, {});
  return { net, server, client, attacker, serverEndpoint, clientEndpoint };
}

/** Whether `needle` occurs in `hay`. */
function contains(hay: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

for (const [seed, link] of [
  [1, { latencyMs: 20 }],
  [2, { latencyMs: 20, jitterMs: 5, lossRate: 0.05 }],
  [3, { latencyMs: 15, jitterMs: 5, lossRate: 0.2, duplicateRate: 0.05 }],
  [4, { latencyMs: 15, jitterMs: 10, lossRate: 0.05, reorderRate: 0.1, corruptRate: 0.05, duplicateRate: 0.05 }],
] as const) {
  describe(`secure connection, seed ${seed}: ${JSON.stringify(link)}`, () => {
    it("connects, every reliable message arrives once and in order both ways, nothing is in the clear, replays go nowhere", () => {
      const { net, server, client, attacker, serverEndpoint, clientEndpoint } = setup(seed, link);
      try {
        const c = clientEndpoint.connect(net.now, SERVER);
        let s = -1;
        let up = false;
        for (let i = 0; i < 400 && (s < 0 || !up); i++) {
          net.drive({ maxTimeMs: 50 });
          for (const ev of net.takeEvents(SERVER)) if (ev.type === "connect") s = ev.connection;
          for (const ev of net.takeEvents(CLIENT)) if (ev.type === "connect" && ev.connection === c) up = true;
        }
        expect(up && s >= 0).toBe(true);
        expect(server.security.identityOf(CLIENT)?.clientId).toBe(7n);

        const COUNT = 300;
        const got = { server: [] as number[], client: [] as number[] };
        const marker = payload(123_456, 300);
        for (let i = 0; i < COUNT; i++) {
          clientEndpoint.send(c, i === 5 ? marker : payload(i, 40 + (i % 400)), { channel: 0 });
          serverEndpoint.send(s, payload(100_000 + i, 40 + (i % 150)), { channel: 0 });
          if (i % 10 === 9) net.drive({ maxTimeMs: 33 });
        }
        for (let i = 0; i < 600 && (got.server.length < COUNT || got.client.length < COUNT); i++) {
          net.drive({ maxTimeMs: 50 });
          for (const ev of net.takeEvents(SERVER)) if (ev.type === "message") got.server.push(checkPayload(ev.data));
          for (const ev of net.takeEvents(CLIENT)) if (ev.type === "message") got.client.push(checkPayload(ev.data));
        }
        expect(got.server).toEqual(Array.from({ length: COUNT }, (_, i) => (i === 5 ? 123_456 : i)));
        expect(got.client).toEqual(Array.from({ length: COUNT }, (_, i) => 100_000 + i));
        // The marker message's bytes never crossed the wire in the clear.
        expect(client.sent.length).toBeGreaterThan(30);
        expect(client.sent.some((d) => contains(d, marker.subarray(0, 64)))).toBe(false);

        // The attacker sends every datagram the client sent so far again, from its own address,
        // once all of them have arrived or been lost.
        const recorded = client.sent.slice();
        net.drive({ maxTimeMs: 1000 });
        const counters = server.security.counters;
        const before = { ...counters };
        const firstPass = { ...net.linkStats(CLIENT, SERVER) };
        // The client's own later datagrams no longer reach the server: every change in the
        // server's counters from here on is the attacker's doing.
        net.link(CLIENT, SERVER, { lossRate: 1 });
        for (const d of recorded) attacker.queue.push({ to: SERVER, bytes: d });
        const messagesBefore = got.server.length;
        net.drive({ maxTimeMs: 500 });
        for (const ev of net.takeEvents(SERVER)) if (ev.type === "message") got.server.push(checkPayload(ev.data));
        expect(got.server.length).toBe(messagesBefore);
        // Each was dropped: as a replay (same number), for HELLOs as a token used elsewhere, and
        // those the link lost or corrupted the first time (authentic, and new to the server's
        // window) as coming late from an address the client does not hold. None was handed in.
        const delta = (k: keyof typeof counters) => counters[k] - before[k];
        expect(delta("replayed") + delta("tokenUsed") + delta("migrationRefused")).toBe(recorded.length);
        expect(delta("accepted")).toBe(0);
        expect(delta("migrationRefused")).toBeLessThanOrEqual(firstPass.lost + firstPass.corrupted);
        if (!("lossRate" in link)) expect(delta("migrationRefused")).toBe(0);
        expect(counters.migrated).toBe(0);
        expect(server.security.identityOf(ATTACKER)).toBeUndefined();
        expect(attacker.received).toBe(0);
        // Corrupted datagrams (seed 4) were caught by the tag, not delivered.
        if ("corruptRate" in link) expect(counters.badTag).toBeGreaterThan(0);
      } catch (error) {
        throw new Error(`seed ${seed}: ${(error as Error).message}`, { cause: error });
      }
    });
  });
}

describe("a client without the secure layer", () => {
  it("gets nothing from a secure server: its datagrams are counted plain and never answered", () => {
    const net = new Network<EndpointEvent>({ seed: 5, defaultLink: { latencyMs: 10 } });
    const server = net.addNode(
      SERVER,
      new SecureServerNode<EndpointEvent>(endpoint(11, { server: true, protocolId: PROTOCOL }), { serverKey: KEY, protocolId: PROTOCOL, addresses: [], maxAssociations: 8, idleTimeoutMs: 30_000 }),
    );
    const plain = endpoint(12, { protocolId: PROTOCOL }) as Endpoint;
    net.addNode(CLIENT, plain);
    plain.connect(net.now, SERVER);
    net.drive({ maxTimeMs: 3000 });
    expect(server.security.counters.plain).toBeGreaterThan(0);
    expect(server.security.size).toBe(0);
    expect(net.linkStats(SERVER, CLIENT).sent).toBe(0);
  });
});
