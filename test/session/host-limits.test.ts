/**
 * One host holding many connections (docs/SESSION.md, "One host, many ports"): a host that
 * completes handshakes from fresh source ports is one host to the handshake rate limit and to
 * maxConnectionsPerHost, while honest hosts connect. Seeded simulator, virtual clock.
 *
 * The harness (one client Endpoint behind a port multiplexer): bench/sim/one-host-sim.ts.
 */
import { describe, expect, it } from "vitest";
import { attack } from "../../bench/sim/one-host-sim.js";

describe("one host, many source ports", () => {
  it("with maxConnectionsPerHost, a host opening 1,000 connections from fresh ports holds at most its share, and honest hosts connect", () => {
    // A rate high enough not to slow the attacker: the cap alone holds it.
    const run = attack(7, 1000, { maxConnectionsPerHost: 8, handshakeRatePerAddress: 1000 });
    expect(run.attackerConnected).toBe(8);
    expect(run.honestConnected).toBe(run.honestTotal);
    expect(run.counters.hostFull).toBeGreaterThan(900);
    // Without the cap, the same attack takes every slot and no honest host connects.
    const open = attack(7, 1000, { handshakeRatePerAddress: 1000 });
    expect(open.attackerConnected).toBe(64);
    expect(open.honestConnected).toBe(0);
  });

  it("without a per-host cap, the per-host handshake rate still bounds how fast one host takes slots", () => {
    // 10 handshake packets a second for the host, two per handshake: about 5 connections a
    // second whatever its ports, so in 30 s it holds at most ~160 (burst 10 included); with a
    // per-port key it takes every slot within seconds.
    const run = attack(8, 1000, { maxConnections: 256 });
    expect(run.attackerConnected).toBeLessThanOrEqual(5 * 30 + 10);
    expect(run.honestConnected).toBe(run.honestTotal);
    expect(run.counters.handshakeRateLimited).toBeGreaterThan(1000);
    expect(run.counters.hostFull).toBe(0);
  });
});
