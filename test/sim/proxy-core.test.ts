import { describe, expect, it } from "vitest";
import { ProxyCore, ProxyError, type ProxyTransmit } from "../../src/sim/proxy.js";

const UP = "127.0.0.1:7777";

function drain(core: ProxyCore, now: number): ProxyTransmit[] {
  const out: ProxyTransmit[] = [];
  for (let tx = core.pollTransmit(now); tx; tx = core.pollTransmit(now)) out.push(tx);
  return out;
}

/** Run the core on a virtual clock until nothing is due; returns every transmit with its time. */
function runUntilIdle(core: ProxyCore, limitMs: number): { at: number; tx: ProxyTransmit }[] {
  const out: { at: number; tx: ProxyTransmit }[] = [];
  for (let guard = 0; guard < 100_000; guard++) {
    const t = core.pollTimeout();
    if (t === undefined || t > limitMs) break;
    core.handleTimeout(t);
    for (const tx of drain(core, t)) out.push({ at: t, tx });
  }
  return out;
}

describe("ProxyCore", () => {
  it("maps each client to a flow and routes replies back to the right client", () => {
    const core = new ProxyCore({ upstream: UP, toUpstream: { latencyMs: 10 }, toClient: { latencyMs: 20 } });
    core.handleFromClient(0, "10.0.0.5:1000", Uint8Array.of(1));
    core.handleFromClient(1, "[::1]:2000", Uint8Array.of(2));
    expect(core.pollEvent()).toEqual({ type: "flowOpened", client: "10.0.0.5:1000", flow: 0 });
    expect(core.pollEvent()).toEqual({ type: "flowOpened", client: "[::1]:2000", flow: 1 });
    expect(drain(core, 9.9)).toEqual([]);
    expect(core.pollTimeout()).toBe(10);
    const up = drain(core, 11);
    expect(up.map((t) => [t.direction, t.client, t.to, [...t.bytes]])).toEqual([
      ["toUpstream", "10.0.0.5:1000", UP, [1]],
      ["toUpstream", "[::1]:2000", UP, [2]],
    ]);
    core.handleFromUpstream(12, "[::1]:2000", Uint8Array.of(22));
    core.handleFromUpstream(12, "10.0.0.5:1000", Uint8Array.of(11));
    expect(drain(core, 31.9)).toEqual([]);
    const down = drain(core, 32);
    expect(down.map((t) => [t.direction, t.to, [...t.bytes]]).sort()).toEqual([
      ["toClient", "10.0.0.5:1000", [11]],
      ["toClient", "[::1]:2000", [22]],
    ]);
    const s = core.stats();
    expect(s.toUpstream.delivered).toBe(2);
    expect(s.toClient.delivered).toBe(2);
    expect(s.flowsOpen).toBe(2);
  });

  it("is reproducible for the same seed and arrival order, and seed-dependent", () => {
    const traceFor = (seed: number): string => {
      const core = new ProxyCore({
        upstream: UP,
        seed,
        toUpstream: { lossRate: 0.3, latencyMs: 5, jitterMs: 5 },
        toClient: { lossRate: 0.3, latencyMs: 5, jitterMs: 5 },
      });
      for (let i = 0; i < 300; i++) {
        core.handleFromClient(i, `10.0.0.${1 + (i % 3)}:5000`, Uint8Array.of(i & 0xff));
        core.handleFromUpstream(i, `10.0.0.${1 + (i % 3)}:5000`, Uint8Array.of(i & 0xff, 1));
      }
      return runUntilIdle(core, 10_000)
        .map(({ at, tx }) => `${at.toFixed(6)} ${tx.direction} ${tx.client} ${[...tx.bytes]}`)
        .join("\n");
    };
    const a = traceFor(1);
    expect(traceFor(1)).toBe(a);
    expect(traceFor(2)).not.toBe(a);
  });

  it("uses separate random streams per direction and per flow", () => {
    const core = new ProxyCore({ upstream: UP, seed: 7, toUpstream: { lossRate: 0.5 }, toClient: { lossRate: 0.5 } });
    for (let i = 0; i < 200; i++) {
      core.handleFromClient(i, "a:1", Uint8Array.of(i));
      core.handleFromUpstream(i, "a:1", Uint8Array.of(i));
      core.handleFromClient(i, "b:1", Uint8Array.of(i));
    }
    const got = runUntilIdle(core, 1000);
    const pattern = (dir: string, client: string): string =>
      got.filter((g) => g.tx.direction === dir && g.tx.client === client).map((g) => g.tx.bytes[0]).join(",");
    expect(pattern("toUpstream", "a:1")).not.toBe(pattern("toClient", "a:1"));
    expect(pattern("toUpstream", "a:1")).not.toBe(pattern("toUpstream", "b:1"));
  });

  it("closes idle flows, keeps their counters, and counts strays", () => {
    const core = new ProxyCore({ upstream: UP, idleTimeoutMs: 1000, toUpstream: { latencyMs: 5 } });
    core.handleFromClient(0, "a:1", Uint8Array.of(1));
    core.pollEvent();
    expect(drain(core, 5)).toHaveLength(1);
    expect(core.pollTimeout()).toBe(1000);
    core.handleTimeout(999);
    expect(core.hasFlow("a:1")).toBe(true);
    core.handleTimeout(1000);
    expect(core.hasFlow("a:1")).toBe(false);
    expect(core.pollEvent()).toEqual({ type: "flowClosed", client: "a:1", flow: 0, reason: "idle" });
    expect(core.pollTimeout()).toBeUndefined();
    core.handleFromUpstream(1001, "a:1", Uint8Array.of(9));
    const s = core.stats();
    expect(s.unknownFlow).toBe(1);
    expect(s.flowsClosed).toBe(1);
    expect(s.toUpstream.delivered).toBe(1);
  });

  it("rejects new clients beyond maxFlows", () => {
    const core = new ProxyCore({ upstream: UP, maxFlows: 2 });
    core.handleFromClient(0, "a:1", Uint8Array.of(1));
    core.handleFromClient(0, "b:1", Uint8Array.of(1));
    core.handleFromClient(0, "c:1", Uint8Array.of(1));
    core.handleFromClient(0, "a:1", Uint8Array.of(2));
    expect(core.stats().flowsRejected).toBe(1);
    expect(drain(core, 0).map((t) => t.client)).toEqual(["a:1", "a:1", "b:1"]);
  });

  it("records bottleneck queueing delay across flows", () => {
    const core = new ProxyCore({ upstream: UP, toUpstream: { bandwidthBps: 1_000_000 } });
    for (let k = 0; k < 20; k++) core.handleFromClient(0, "a:1", new Uint8Array(1000));
    const q = core.stats().queueDelay;
    expect(q.count).toBe(20);
    expect(q.p95).toBe(144);
  });

  it("rejects bad options with typed errors", () => {
    expect(() => new ProxyCore({ upstream: "" })).toThrow(ProxyError);
    expect(() => new ProxyCore({ upstream: UP, idleTimeoutMs: 0 })).toThrow(/idleTimeoutMs/);
    expect(() => new ProxyCore({ upstream: UP, maxFlows: 0 })).toThrow(/maxFlows/);
    expect(() => new ProxyCore({ upstream: UP, toClient: { corruptRate: 3 } })).toThrow(/corruptRate/);
  });
});
