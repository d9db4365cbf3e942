import { describe, expect, it } from "vitest";
import type { Address, SansIoNode, Transmit } from "../../src/session/sans-io.js";
import { Network, NetworkError, Pair } from "../../src/sim/network.js";

type Ev = { kind: "recv"; from: Address; at: number; text: string } | { kind: "tick"; at: number; n: number };

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Replies to every datagram with "echo:" + its text. */
class EchoNode implements SansIoNode<Ev> {
  private out: Transmit[] = [];
  private events: Ev[] = [];
  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    const text = dec.decode(bytes);
    this.events.push({ kind: "recv", from, at: now, text });
    this.out.push({ to: from, bytes: enc.encode(`echo:${text}`) });
  }
  handleTimeout(): void {}
  pollTransmit(): Transmit | undefined {
    return this.out.shift();
  }
  pollTimeout(): number | undefined {
    return undefined;
  }
  pollEvent(): Ev | undefined {
    return this.events.shift();
  }
}

/** Records datagrams, never replies. */
class SinkNode extends EchoNode {
  override pollTransmit(): Transmit | undefined {
    return undefined;
  }
}

/** Sends "ping N" to `peer` every `period` ms, `limit` times (Infinity for forever). */
class TickerNode implements SansIoNode<Ev> {
  private out: Transmit[] = [];
  private events: Ev[] = [];
  private n = 0;
  private deadline: number | undefined;
  // Reuses one send buffer on purpose: the network must copy before calling in again.
  private readonly arena = new Uint8Array(64);
  constructor(
    private readonly peer: Address,
    private readonly period: number,
    private readonly limit: number,
    start: number,
  ) {
    this.deadline = limit > 0 ? start : undefined;
  }
  send(text: string): void {
    const b = enc.encode(text);
    this.arena.set(b);
    this.out.push({ to: this.peer, bytes: this.arena.subarray(0, b.length) });
  }
  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    this.events.push({ kind: "recv", from, at: now, text: dec.decode(bytes) });
  }
  handleTimeout(now: number): void {
    if (this.deadline === undefined || now < this.deadline) return; // early call is a no-op
    this.n++;
    this.events.push({ kind: "tick", at: now, n: this.n });
    this.send(`ping ${this.n}`);
    this.deadline = this.n < this.limit ? this.deadline + this.period : undefined;
  }
  pollTransmit(): Transmit | undefined {
    return this.out.shift();
  }
  pollTimeout(): number | undefined {
    return this.deadline;
  }
  pollEvent(): Ev | undefined {
    return this.events.shift();
  }
}

describe("Network", () => {
  it("a Pair delivers across latency and the clock jumps exactly to each arrival", () => {
    const client = new TickerNode("10.0.0.1:7777", 100, 3, 0);
    const pair = new Pair<EchoNode, TickerNode, Ev>(new EchoNode(), client, { link: { latencyMs: 25 } });
    const result = pair.drive();
    expect(result.stop).toBe("quiet");
    expect(pair.serverEvents()).toEqual([
      { kind: "recv", from: "10.0.0.2:50000", at: 25, text: "ping 1" },
      { kind: "recv", from: "10.0.0.2:50000", at: 125, text: "ping 2" },
      { kind: "recv", from: "10.0.0.2:50000", at: 225, text: "ping 3" },
    ]);
    const replies = pair.clientEvents().filter((e) => e.kind === "recv");
    expect(replies).toEqual([
      { kind: "recv", from: "10.0.0.1:7777", at: 50, text: "echo:ping 1" },
      { kind: "recv", from: "10.0.0.1:7777", at: 150, text: "echo:ping 2" },
      { kind: "recv", from: "10.0.0.1:7777", at: 250, text: "echo:ping 3" },
    ]);
    expect(pair.now).toBe(250);
    expect(pair.toServer.stats.delivered).toBe(3);
  });

  it("runs an hour of simulated time in a bounded number of steps", () => {
    const net = new Network<Ev>({ origin: 1_000_000 });
    net.addNode("a:1", new TickerNode("b:1", 1000, Infinity, 1_000_000));
    net.addNode("b:1", new EchoNode());
    net.link("a:1", "b:1", { latencyMs: 40, jitterMs: 10 });
    const hour = 3_600_000;
    const result = net.drive({ maxTimeMs: hour });
    expect(result.stop).toBe("time");
    expect(net.now).toBe(1_000_000 + hour);
    const ticks = net.events("a:1").filter((e) => e.kind === "tick").length;
    expect(ticks).toBe(3601); // t = origin, origin + 1 s, ..., origin + 3600 s
    // Steps are per event time, not per millisecond of simulated time.
    expect(result.steps).toBeLessThan(4 * 3601);
    expect(net.stats.unroutable).toBe(0);
  });

  it("drive is always bounded: step limit, time limit, and until", () => {
    const net = new Network<Ev>();
    net.addNode("a:1", new TickerNode("b:1", 10, Infinity, 0));
    net.addNode("b:1", new EchoNode());
    const bySteps = net.drive({ maxSteps: 50 });
    expect(bySteps.stop).toBe("steps");
    expect(bySteps.steps).toBe(50);
    const byUntil = net.drive({ until: 10_000 });
    expect(byUntil.stop).toBe("time");
    expect(net.now).toBe(10_000);
    // No limits at all still stops (default step bound) on a node that never goes quiet.
    const net2 = new Network<Ev>({ onEvent: () => {} });
    net2.addNode("a:1", new TickerNode("nowhere:1", 1, Infinity, 0));
    const unbounded = net2.drive();
    expect(unbounded.stop).toBe("steps");
    expect(unbounded.steps).toBe(1_000_000);
    expect(net2.stats.unroutable).toBe(unbounded.steps);
  });

  it("a quiet network stops at once and step() reports idleness", () => {
    const net = new Network<Ev>({ origin: 500 });
    net.addNode("a:1", new EchoNode());
    expect(net.step()).toBe(false);
    expect(net.drive()).toEqual({ stop: "quiet", steps: 0, now: 500 });
    expect(net.drive({ until: 800 }).now).toBe(800);
  });

  it("is deterministic under loss, jitter and reordering, and seed-dependent", () => {
    const traceFor = (seed: number): string => {
      const net = new Network<Ev>({
        seed,
        defaultLink: { lossRate: 0.2, latencyMs: 30, jitterMs: 20, reorder: true, duplicateRate: 0.05 },
      });
      const log: string[] = [];
      const hub = "hub:1";
      net.addNode(hub, new EchoNode());
      for (let i = 0; i < 20; i++) net.addNode(`n${i}:1`, new TickerNode(hub, 7 + i, 50, i));
      const idle = new Network<Ev>(); // another instance: driving `net` must not move its clock
      const result = net.drive({ maxTimeMs: 10_000 });
      expect(result.now).toBeGreaterThan(0);
      expect(idle.now).toBe(0);
      for (let i = 0; i < 20; i++) {
        for (const e of net.events(`n${i}:1`)) if (e.kind === "recv") log.push(`n${i}<${e.text}@${e.at.toFixed(6)}`);
      }
      for (const e of net.events(hub)) if (e.kind === "recv") log.push(`hub<${e.text}@${e.at.toFixed(6)}`);
      log.push(`stop=${result.stop} steps=${result.steps}`);
      return log.join("\n");
    };
    const a = traceFor(3);
    expect(traceFor(3)).toBe(a);
    expect(traceFor(4)).not.toBe(a);
    // 20 nodes x 50 pings with 20% loss each way: most but not all round trips complete.
    const replies = a.split("\n").filter((l) => l.includes("echo:")).length;
    expect(replies).toBeGreaterThan(1000 * 0.5);
    expect(replies).toBeLessThan(1000);
  });

  it("copies transmits before calling the node again (send arenas are reused)", () => {
    const ticker = new TickerNode("b:1", 1, 3, 0);
    const net = new Network<Ev>();
    net.addNode("a:1", ticker);
    net.addNode("b:1", new EchoNode());
    net.link("a:1", "b:1", { latencyMs: 100 });
    net.drive();
    expect(net.events("b:1").map((e) => (e.kind === "recv" ? e.text : ""))).toEqual(["ping 1", "ping 2", "ping 3"]);
  });

  it("handles a timer in the past at the current time and never moves the clock back", () => {
    const late = new TickerNode("b:1", 1, 1, 0);
    const net = new Network<Ev>({ origin: 1000 });
    net.addNode("a:1", late);
    net.addNode("b:1", new EchoNode());
    expect(net.step()).toBe(true);
    expect(net.now).toBe(1000);
    expect(net.takeEvents("a:1")).toEqual([{ kind: "tick", at: 1000, n: 1 }]);
    expect(net.takeEvents("a:1")).toEqual([]);
  });

  it("lets a test poke a node between steps and flush", () => {
    const ticker = new TickerNode("b:1", 1, 0, 0);
    const pair = new Pair<EchoNode, TickerNode, Ev>(new EchoNode(), ticker, {
      serverAddress: "b:1",
      clientAddress: "a:1",
      toServer: { latencyMs: 5 },
      toClient: { latencyMs: 50 },
      origin: 0,
    });
    ticker.send("hello");
    pair.drive();
    expect(pair.clientEvents()).toEqual([{ kind: "recv", from: "b:1", at: 55, text: "echo:hello" }]);
  });

  it("per-pair links override the default, and a bottleneck queues datagrams", () => {
    const net = new Network<Ev>({ defaultLink: { latencyMs: 1 } });
    net.addNode("a:1", new EchoNode());
    net.addNode("b:1", new SinkNode());
    const slow = net.link("a:1", "b:1", { bandwidthBps: 80_000 }); // 100 bytes -> 10 ms
    const a = net.node("a:1") as EchoNode;
    // Three datagrams from a to b at t=0 via the echo node's queue (handleDatagram as a poke).
    const payload = "x".repeat(95); // "echo:" + 95 = 100 bytes
    for (let i = 0; i < 3; i++) a.handleDatagram(0, "b:1", enc.encode(payload));
    expect(net.drive().stop).toBe("quiet");
    const arrivals = net.events("b:1").map((e) => e.at);
    expect(arrivals).toEqual([10, 20, 30]);
    expect(slow.queueDelay.max).toBe(20);
    expect(net.linkStats("b:1", "a:1").sent).toBe(0);
  });

  it("rejects misuse with typed errors", () => {
    const net = new Network<Ev>();
    net.addNode("a:1", new EchoNode());
    expect(() => net.addNode("a:1", new EchoNode())).toThrow(NetworkError);
    expect(() => net.events("zz:1")).toThrow(/addNode/);
    expect(() => net.link("a:1", "b:1", { lossRate: 2 })).toThrow(/probability/);
    expect(() => new Network({ defaultLink: { latencyMs: -5 } })).toThrow(/latencyMs/);
    expect(() => net.drive({ maxSteps: -1 })).toThrow(NetworkError);
    expect(() => new Network({ origin: NaN })).toThrow(NetworkError);
  });
});
