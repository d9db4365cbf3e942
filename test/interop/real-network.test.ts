// ackwire over a real kernel network path instead of the impairment proxy: two network
// namespaces joined by a veth pair (bench/lib/netns.mjs), with the kernel's token bucket
// filter as a bottleneck of 20 Mbit/s in each direction and a real link MTU. The client runs on
// Node, Bun and Deno; the server is the echo peer (test/interop/fixtures/peer.mjs).
//
// What the proxy cannot show: a real queue that fills and tail-drops, a capacity that changes
// under a running transfer, and the kernel's own handling of datagrams larger than the link.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertBuilt, expectPlanDelivered, RUNTIMES, startPeer, type Peer, type PlanResult, type RuntimeName } from "./helpers.js";
import { netnsUnsupported, TwoHosts } from "../../bench/lib/netns.mjs";

const skip = netnsUnsupported();
if (skip !== undefined) console.warn(`real-network tests skipped: ${skip}`);

interface MixedResult {
  ok: boolean;
  bad: number;
  timedOut: boolean;
  error?: { message: string };
  bulk: { sent: number; acked: number; outOfOrder: number; mbitPerSec: number; mbitPerQuarter?: number[] };
  stream: { sent: number; echoed: number; outOfOrder: number; samples: number; rttP50Ms: number; rttP90Ms: number; rttP99Ms: number; rttMaxMs: number; series?: [number, number][] };
  stats: { rttMs: number; lossRate: number; resends: number; pathMtu: number };
}

const RATE_MBIT = 20;
/** 250 KB: ~100 ms of queue at 20 Mbit/s per direction, a typical home router's buffer. */
const QUEUE_BYTES = 250_000;

/**
 * Runs the "mixed" client in the client namespace and returns its report. `onConnected` runs
 * once the client has connected (its own clock's start of the transfer).
 */
async function mixed(runtime: RuntimeName, hosts: TwoHosts, port: number, extra: Record<string, unknown>, onConnected?: () => void): Promise<MixedResult> {
  const client = await startPeer(runtime, "mixed", { target: `${hosts.serverIp}:${port}`, bulkWindow: 4096, warmupMs: 1000, ...extra }, 60_000, hosts.client);
  try {
    await client.waitFor("connected", 15_000);
    onConnected?.();
    const result = (await client.waitFor("ok", 40_000)) as unknown as MixedResult;
    await client.exited();
    return result;
  } finally {
    // A failed run must not leave its upload on the shared link for the next test.
    client.stop();
  }
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function p90(values: number[]): number {
  return quantile(values, 0.9);
}

describe.skipIf(skip !== undefined)("over a real bottleneck: 20 Mbit/s each way, a 250 KB tail-drop queue (netns + tc tbf)", () => {
  let hosts: TwoHosts;
  let server: Peer;
  let port: number;

  beforeAll(async () => {
    assertBuilt();
    hosts = new TwoHosts("bn", 97);
    hosts.shape({ rateMbit: RATE_MBIT, queueBytes: QUEUE_BYTES });
    server = await startPeer("node", "server", { host: hosts.serverIp, sinkChannel: 6, deadlineMs: 180_000 }, 180_000, hosts.server);
    port = Number((await server.waitFor("listening")).listening);
  });

  afterAll(() => {
    server?.stop();
    hosts?.close();
  });

  for (const runtime of RUNTIMES) {
    it(`${runtime} client: a bulk transfer fills the link while a 30 Hz stream on the same connection stays fast`, async () => {
      const r = await mixed(runtime, hosts, port, { durationMs: 4000 });
      const why = `${runtime}: ${JSON.stringify(r)}`;
      expect(r.ok, why).toBe(true);
      expect(r.bulk.acked, why).toBe(r.bulk.sent);
      expect(r.stream.echoed, why).toBe(r.stream.sent);
      // Goodput of 1000 B messages over the 4 s, Startup included: at least 60 % of the link
      // rate (headers take ~5 %). Runs on a quiet host give 15-17 Mbit/s of 20, a host busy
      // with other work less; the steady-state figure is bench/netns's.
      expect(r.bulk.mbitPerSec, why).toBeGreaterThanOrEqual(0.6 * RATE_MBIT);
      // The queue could hold ~100 ms each way, ~200 ms on the stream's round trip (both
      // directions' queues). The congestion controller keeps it short: p99 is typically 6-27 ms
      // (bench/netns). With ~90 samples p99 is nearly the maximum, so the bound is on p90, with
      // room for a busy host's scheduling pauses (a standing queue would put it near 200 ms).
      expect(r.stream.samples, why).toBeGreaterThanOrEqual(70);
      expect(r.stream.rttP90Ms, why).toBeLessThanOrEqual(60);
    }, 90_000);
  }

  it("node client: the capacity drops from 20 to 5 Mbit/s mid-transfer; the queue does not stay full", async () => {
    const changeAfterMs = 2000;
    let timer: NodeJS.Timeout | undefined;
    let changeError: unknown;
    let r: MixedResult;
    try {
      // A smaller application window than the other cases: what is still queued in the sender
      // when the run ends drains at 5 Mbit/s (512 x 1000 B: under a second).
      r = await mixed("node", hosts, port, { durationMs: 7000, bulkWindow: 512, series: true }, () => {
        timer = setTimeout(() => {
          try {
            hosts.shape({ rateMbit: 5, queueBytes: QUEUE_BYTES });
          } catch (error) {
            changeError = error;
          }
        }, changeAfterMs);
      });
    } finally {
      clearTimeout(timer);
      hosts.shape({ rateMbit: RATE_MBIT, queueBytes: QUEUE_BYTES });
    }
    expect(changeError).toBeUndefined();
    const series = r.stream.series ?? [];
    const quarters = r.bulk.mbitPerQuarter ?? [];
    const why = `node: ${JSON.stringify({ ...r, stream: { ...r.stream, series: series.length } })}`;
    expect(r.ok, why).toBe(true);
    expect(r.bulk.acked, why).toBe(r.bulk.sent);
    // The transfer ran at the full rate before the change (1-2 s after the start) and kept
    // using the smaller link after it (the last 3 s).
    expect(Math.max(...quarters.slice(4, 8)), why).toBeGreaterThanOrEqual(15);
    // (Per quarter the figure is quantized by the application's acks, 64 messages each, so the
    // mean of the quarters is checked.)
    const lateQuarters = quarters.slice(16, 28);
    expect(lateQuarters.length, why).toBe(12);
    const lateMean = lateQuarters.reduce((a, b) => a + b, 0) / lateQuarters.length;
    expect(lateMean, why).toBeLessThanOrEqual(5.2);
    expect(lateMean, why).toBeGreaterThanOrEqual(3.5);
    // The stream over the last 3 s (well after the change): at 5 Mbit/s the queue could hold
    // ~400 ms each way.
    const late = series.filter(([sentAt]) => sentAt >= 4000).map(([, rtt]) => rtt);
    expect(late.length, why).toBeGreaterThanOrEqual(60);
    // (p90 on a quiet host: under 40 ms; the bound leaves room for a busy host's pauses.)
    expect(p90(late), why).toBeLessThanOrEqual(80);
  }, 90_000);

  it("node client on a 1 Mbit/s link: the stream does not wait behind the upload's window floor (ack frequency)", async () => {
    hosts.shape({ rateMbit: 1, queueBytes: QUEUE_BYTES });
    let r: MixedResult;
    try {
      // 256 x 1000 B: the application window of ~2 s of this link (bench/netns does the same).
      r = await mixed("node", hosts, port, { durationMs: 6000, bulkWindow: 256, series: true });
    } finally {
      hosts.shape({ rateMbit: RATE_MBIT, queueBytes: QUEUE_BYTES });
    }
    const series = r.stream.series ?? [];
    const why = `node: ${JSON.stringify({ ...r, stream: { ...r.stream, series: series.length } })}`;
    expect(r.ok, why).toBe(true);
    expect(r.bulk.acked, why).toBe(r.bulk.sent);
    expect(r.bulk.mbitPerSec, why).toBeGreaterThanOrEqual(0.8);
    // The queue could hold ~2 s each way. Behind a window floor of 10 packets (the peer acking
    // every 8) the stream's round trip sat at ~100 ms (p50 98 ms in bench/netns); with the
    // sender asking for an ack every packet or two it reads ~40 ms (a 1000 B packet ahead of the
    // stream's in each direction is 8 ms of the link). The median is checked, not the tail: a
    // busy host's scheduling delays add to the tail, while behind the floor the median itself
    // is ~100 ms.
    const late = series.filter(([sentAt]) => sentAt >= 2000).map(([, rtt]) => rtt);
    expect(late.length, why).toBeGreaterThanOrEqual(90);
    expect(quantile(late, 0.5), why).toBeLessThanOrEqual(75);
  }, 90_000);

  it("node client: a 12 KB queue tail-drops at start-up; every message still arrives once, in order", async () => {
    hosts.shape({ rateMbit: RATE_MBIT, queueBytes: 12_000 });
    const before = hosts.queueStats(hosts.client).dropped + hosts.queueStats(hosts.server).dropped;
    let r: MixedResult;
    try {
      r = await mixed("node", hosts, port, { durationMs: 2500 });
    } finally {
      hosts.shape({ rateMbit: RATE_MBIT, queueBytes: QUEUE_BYTES });
    }
    const dropped = hosts.queueStats(hosts.client).dropped + hosts.queueStats(hosts.server).dropped - before;
    const why = `node, ${dropped} dropped by the queues: ${JSON.stringify(r)}`;
    expect(dropped, why).toBeGreaterThan(0);
    expect(r.ok, why).toBe(true);
    expect(r.bulk.acked, why).toBe(r.bulk.sent);
    expect(r.stream.echoed, why).toBe(r.stream.sent);
    expect(r.stats.resends, why).toBeGreaterThan(0);
    expect(r.bulk.mbitPerSec, why).toBeGreaterThanOrEqual(0.6 * RATE_MBIT);
  }, 90_000);
});

describe.skipIf(skip !== undefined)("path MTU discovery over a real 1280-byte link (netns)", () => {
  const LINK_MTU = 1280;
  /** The largest UDP payload the link carries unfragmented: IPv4 20 + UDP 8 bytes of headers. */
  const LARGEST = LINK_MTU - 28;
  /** The same over IPv6: 40 + 8 bytes of headers. */
  const LARGEST6 = LINK_MTU - 48;
  // 10,000 x 100 B take ~0.9 s here, twice what the search needs when the host is idle (a probe
  // too big for the link is lost three times before the next size is tried). With 1500
  // (~0.4 s) one CI run on a loaded host ended with the search still at 1200.
  const PLAN = [{ channel: 0, kind: "reliable", count: 10_000, size: 100 }];
  let hosts: TwoHosts;
  const servers = new Map<RuntimeName, { peer: Peer; port: number }>();

  beforeAll(async () => {
    assertBuilt();
    hosts = new TwoHosts("mtu", 98);
    hosts.mtu(LINK_MTU);
    for (const runtime of ["node", "bun"] as const) {
      // Bound to "::": IPv6 and (mapped) IPv4 on one socket.
      const peer = await startPeer(runtime, "server", { host: "::", deadlineMs: 120_000 }, 120_000, hosts.server);
      servers.set(runtime, { peer, port: Number((await peer.waitFor("listening")).listening) });
    }
  });

  afterAll(() => {
    for (const { peer } of servers.values()) peer.stop();
    hosts?.close();
  });

  /** Fragments the kernel of `ns` has made so far, IPv4 or IPv6. */
  const fragmentsMade = (ns: string, v6: boolean): number => (v6 ? hosts.ip6Counters(ns).Ip6FragCreates! : hosts.ipCounters(ns).FragCreates!);

  async function run(client: RuntimeName, server: RuntimeName, v6 = false) {
    const before = { client: fragmentsMade(hosts.client, v6), server: fragmentsMade(hosts.server, v6) };
    const target = v6 ? `[${hosts.serverIp6}]:${servers.get(server)!.port}` : `${hosts.serverIp}:${servers.get(server)!.port}`;
    const peer = await startPeer(client, "client", { target, plan: PLAN, burst: 100, waitMs: 30_000 }, 60_000, hosts.client);
    let result: PlanResult;
    try {
      result = (await peer.waitFor("ok", 45_000)) as unknown as PlanResult;
      await peer.exited();
    } finally {
      peer.stop();
    }
    const fragments = { client: fragmentsMade(hosts.client, v6) - before.client, server: fragmentsMade(hosts.server, v6) - before.server };
    const why = `${client} -> ${server} server: ${JSON.stringify({ ...result, channels: undefined, fragments })}`;
    expectPlanDelivered(result, why);
    return { result, fragments, why };
  }

  for (const [family, v6, largest] of [["IPv4", false, LARGEST], ["IPv6", true, LARGEST6]] as const) {
    it(`bun client and bun server over ${family}: datagrams leave unfragmented, so discovery finds ${largest - 16}..${largest} bytes`, async () => {
      const { result, fragments, why } = await run("bun", "bun", v6);
      expect(result.pathMtu, why).toBeLessThanOrEqual(largest);
      expect(result.pathMtu, why).toBeGreaterThanOrEqual(largest - 16);
      expect(fragments.client, why).toBe(0);
      expect(fragments.server, why).toBe(0);
    });
  }

  for (const runtime of ["node", "deno"] as const) {
    it(`${runtime} client: a size above the link's is only ever reached through the kernel's fragmentation (the documented caveat)`, async () => {
      const { result, fragments, why } = await run(runtime, "node");
      // Node and Deno cannot set don't-fragment: the kernel splits a datagram larger than the
      // link, the probe succeeds in fragments, and the connection runs at a size the link only
      // carries fragmented. Whatever size it reports, it is honest about how it got there.
      if (result.pathMtu! > LARGEST) expect(fragments.client, why).toBeGreaterThan(0);
      else expect(result.pathMtu, why).toBeGreaterThanOrEqual(LARGEST - 16);
    });
  }
});
