/**
 * A connect token is good for one connection (PROTOCOL §9): a token holder running K client
 * Endpoints on K source ports of its host, all sealing with one ClientSecurity (one token, one
 * association), held K live server connections, filled maxConnections and locked honest
 * players out (found by a hostile review). Now each new connection on an association ends the
 * one before it.
 */
import { describe, expect, it } from "vitest";
import { ClientSecurity } from "../../src/secure/client-security.js";
import { SecureServerNode } from "../../src/secure/nodes.js";
import { createConnectToken, parseConnectToken } from "../../src/secure/token.js";
import { SECURE_OVERHEAD } from "../../src/secure/wire.js";
import { WrappingNode, type Address, type SansIoNode, type Transmit } from "../../src/session/sans-io.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { Network } from "../../src/sim/network.js";
import { endpoint } from "../game/helpers.js";

const SERVER = "10.0.0.1:7777";
const PROTOCOL = 0x77;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);
const NOW = 1_800_000_000;

class SharedSecureClient<E> extends WrappingNode<E> {
  constructor(inner: SansIoNode<E>, readonly security: ClientSecurity) { super(inner); }
  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    if (from !== SERVER) return;
    const inner = this.security.open(bytes.slice());
    if (inner !== undefined) this.inner.handleDatagram(now, from, inner);
  }
  pollTransmit(now: number): Transmit | undefined {
    for (let tx = this.inner.pollTransmit(now); tx !== undefined; tx = this.inner.pollTransmit(now)) {
      const sealed = this.security.seal(tx.bytes);
      if (sealed !== undefined) return { to: tx.to, bytes: sealed.slice() };
    }
    return undefined;
  }
}

/** A secure server (32 connection slots) on a simulated network, and one token's client half
 *  for every client Endpoint of the token holder to seal with. */
function secureServer() {
  const net = new Network<EndpointEvent>({ seed: 1, defaultLink: { latencyMs: 10 } });
  // The handshake rate limit is per host (all of 10.0.0.2's ports share one): raised here so
  // that what is measured is the slots, not the rate.
  const serverEndpoint = endpoint(11, { server: true, protocolId: PROTOCOL, mtu: 1200 - SECURE_OVERHEAD, maxMtu: 1452 - SECURE_OVERHEAD, timeoutMs: 10_000, maxConnections: 32, handshakeRatePerAddress: 1000 });
  const server = net.addNode(SERVER, new SecureServerNode<EndpointEvent>(serverEndpoint, { serverKey: KEY, protocolId: PROTOCOL, addresses: [SERVER], maxAssociations: 64, idleTimeoutMs: 30_000, unixSeconds: () => NOW + 1 }));
  const token = parseConnectToken(createConnectToken({ serverKey: KEY, protocolId: PROTOCOL, clientId: 7, serverAddresses: [SERVER], nowSeconds: NOW }), PROTOCOL, NOW);
  return { net, serverEndpoint, server, shared: new ClientSecurity(token) };
}

describe("one connect token", () => {
  it("holds one live server connection however many source ports complete a handshake with it", () => {
    const K = 6;
    const { net, serverEndpoint, server, shared } = secureServer();
    const clients = [];
    for (let k = 0; k < K; k++) {
      const addr = `10.0.0.2:${40000 + k}`;
      const ep = endpoint(100 + k, { protocolId: PROTOCOL, mtu: 1200 - SECURE_OVERHEAD, maxMtu: 1452 - SECURE_OVERHEAD, timeoutMs: 3_600_000, keepaliveMs: 1000, unresponsiveMs: 3_600_000 });
      net.addNode(addr, new SharedSecureClient<EndpointEvent>(ep, shared));
      clients.push({ addr, ep });
    }
    const serverConns = new Map<number, string>();
    const ended: string[] = [];
    for (const { ep } of clients) {
      ep.connect(net.now, SERVER);
      for (let i = 0; i < 30; i++) {
        net.drive({ maxTimeMs: 20 });
        for (const ev of net.takeEvents(SERVER)) {
          if (ev.type === "connect") serverConns.set(ev.connection, ev.address);
          if (ev.type === "disconnect") { ended.push(String(ev.connection)); serverConns.delete(ev.connection); }
        }
      }
    }
    // Each new connection replaced the one before (closed, gone once its close completes).
    expect(server.security.counters.connectionsReplaced, "after the handshakes").toBe(K - 1);
    // Keep going 30 s of virtual time (3x timeoutMs): the hostile clients just run normally.
    for (let i = 0; i < 1500; i++) {
      net.drive({ maxTimeMs: 20 });
      for (const ev of net.takeEvents(SERVER)) {
        if (ev.type === "connect") serverConns.set(ev.connection, ev.address);
        if (ev.type === "disconnect") { ended.push(`${ev.connection}:${(ev as { reason?: string }).reason}`); serverConns.delete(ev.connection); }
      }
      for (const c of clients) net.takeEvents(c.addr);
    }
    expect(serverConns.size, `after 30 s; ended ${ended.join(" ")}`).toBeLessThanOrEqual(1);
    expect(server.security.counters.opened).toBe(1);

    // An honest player with a token of its own now tries to join.
    const honestToken = parseConnectToken(createConnectToken({ serverKey: KEY, protocolId: PROTOCOL, clientId: 8, serverAddresses: [SERVER], nowSeconds: NOW }), PROTOCOL, NOW);
    const honest = endpoint(999, { protocolId: PROTOCOL, mtu: 1200 - SECURE_OVERHEAD, maxMtu: 1452 - SECURE_OVERHEAD });
    net.addNode("10.0.0.9:5000", new SharedSecureClient<EndpointEvent>(honest, new ClientSecurity(honestToken)));
    honest.connect(net.now, SERVER);
    const honestEvents: string[] = [];
    for (let i = 0; i < 300; i++) {
      net.drive({ maxTimeMs: 20 });
      for (const ev of net.takeEvents("10.0.0.9:5000")) honestEvents.push(`${ev.type}:${(ev as { reason?: string; denyReason?: string }).reason ?? ""}:${(ev as { denyReason?: string }).denyReason ?? ""}`);
      net.takeEvents(SERVER);
    }
    expect(honestEvents, "the honest player").toContain("connect::");
  });

  it("a replaced connection frees its slot at once: 60 handshakes from new ports in a row hold one (found by a review: closed ones held slots through the close timeout, and filled maxConnections)", () => {
    const K = 60;
    const { net, serverEndpoint, server, shared } = secureServer();
    const honestToken = parseConnectToken(createConnectToken({ serverKey: KEY, protocolId: PROTOCOL, clientId: 8, serverAddresses: [SERVER], nowSeconds: NOW }), PROTOCOL, NOW);
    const honest = endpoint(999, { protocolId: PROTOCOL, mtu: 1200 - SECURE_OVERHEAD, maxMtu: 1452 - SECURE_OVERHEAD });
    net.addNode("10.0.0.9:5000", new SharedSecureClient<EndpointEvent>(honest, new ClientSecurity(honestToken)));
    let maxHeld = 0;
    let live = 0;
    const honestEvents: string[] = [];
    for (let k = 0; k < K; k++) {
      const addr = `10.0.0.2:${40000 + k}`;
      const ep = endpoint(100 + k, { protocolId: PROTOCOL, mtu: 1200 - SECURE_OVERHEAD, maxMtu: 1452 - SECURE_OVERHEAD, timeoutMs: 3_600_000, unresponsiveMs: 3_600_000 });
      net.addNode(addr, new SharedSecureClient<EndpointEvent>(ep, shared));
      ep.connect(net.now, SERVER);
      let connected = false;
      for (let i = 0; i < 50 && !connected; i++) {
        net.drive({ maxTimeMs: 5 });
        for (const ev of net.takeEvents(addr)) if (ev.type === "connect") connected = true;
        net.takeEvents(SERVER);
        maxHeld = Math.max(maxHeld, serverEndpoint.connectionCount);
      }
      if (connected) live++;
      for (const ev of net.takeEvents("10.0.0.9:5000")) honestEvents.push(`${ev.type}:${(ev as { reason?: string }).reason ?? ""}:${(ev as { denyReason?: string }).denyReason ?? ""}`);
    }
    honest.connect(net.now, SERVER);
    for (let i = 0; i < 50; i++) {
      net.drive({ maxTimeMs: 20 });
      for (const ev of net.takeEvents("10.0.0.9:5000")) honestEvents.push(`${ev.type}:${(ev as { reason?: string }).reason ?? ""}:${(ev as { denyReason?: string }).denyReason ?? ""}`);
      net.takeEvents(SERVER);
    }
    const why = JSON.stringify({ live, replaced: server.security.counters.connectionsReplaced, maxHeld, honestEvents });
    expect(live, why).toBe(K);
    expect(server.security.counters.connectionsReplaced, why).toBe(K - 1);
    expect(maxHeld, why).toBeLessThanOrEqual(2);
    expect(honestEvents, why).toContain("connect::");
  });
});
