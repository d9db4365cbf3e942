import dgram from "node:dgram";
import { performance } from "node:perf_hooks";
import { afterEach, describe, expect, it } from "vitest";
import { main } from "../../runtimes/node/cli.js";
import { startProxy, type RunningProxy } from "../../runtimes/node/proxy.js";

// Real sockets on loopback only. Every wait below is bounded by a timeout.

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

async function bindSocket(type: "udp4" | "udp6", host: string): Promise<dgram.Socket> {
  const s = dgram.createSocket(type);
  await new Promise<void>((resolve, reject) => {
    s.once("error", reject);
    s.bind(0, host, () => resolve());
  });
  cleanups.push(() => new Promise<void>((r) => s.close(() => r())));
  return s;
}

/** A server that echoes every datagram and counts them. */
async function echoServer(type: "udp4" | "udp6", host: string): Promise<{ port: number; received: () => number }> {
  const s = await bindSocket(type, host);
  let received = 0;
  s.on("message", (msg, rinfo) => {
    received++;
    s.send(msg, rinfo.port, rinfo.address);
  });
  return { port: s.address().port, received: () => received };
}

async function proxyTo(
  upstreamPort: number,
  link: Parameters<typeof startProxy>[0]["link"],
  family: 4 | 6 = 4,
): Promise<RunningProxy> {
  const host = family === 4 ? "127.0.0.1" : "::1";
  const proxy = await startProxy({
    listen: { host, port: 0, family },
    upstream: { host, port: upstreamPort, family },
    link,
    seed: 1,
  });
  cleanups.push(() => proxy.close());
  return proxy;
}

/** Resolve when `done()` is true, checking every 10 ms, or after `timeoutMs` regardless. */
async function waitFor(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!done() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

function indexed(i: number): Buffer {
  const b = Buffer.alloc(64, i & 0xff);
  b.writeUInt32LE(i, 0);
  return b;
}

describe("node proxy over real UDP", () => {
  it("without loss delivers every datagram, in order, no sooner than the configured latency", async () => {
    const server = await echoServer("udp4", "127.0.0.1");
    const proxy = await proxyTo(server.port, { latencyMs: 30 });
    const client = await bindSocket("udp4", "127.0.0.1");
    const sentAt = new Map<number, number>();
    const order: number[] = [];
    const rtts: number[] = [];
    client.on("message", (msg) => {
      const i = msg.readUInt32LE(0);
      order.push(i);
      rtts.push(performance.now() - (sentAt.get(i) ?? Infinity));
    });
    const n = 50;
    for (let i = 0; i < n; i++) {
      sentAt.set(i, performance.now());
      client.send(indexed(i), proxy.address.port, "127.0.0.1");
    }
    await waitFor(() => order.length >= n, 5000);
    expect(order).toEqual(Array.from({ length: n }, (_, i) => i));
    // 30 ms each way through the proxy: the round trip can never be shorter than 60 ms.
    expect(Math.min(...rtts)).toBeGreaterThanOrEqual(60);
    const s = proxy.stats();
    expect(s.toUpstream.delivered).toBe(n);
    expect(s.toClient.delivered).toBe(n);
    expect(s.flowsOpen).toBe(1);
  });

  it("with 50% loss (seed 1) forwards about half", async () => {
    const server = await echoServer("udp4", "127.0.0.1");
    const proxy = await proxyTo(server.port, { lossRate: 0.5 });
    const client = await bindSocket("udp4", "127.0.0.1");
    const n = 400;
    for (let i = 0; i < n; i++) {
      client.send(indexed(i), proxy.address.port, "127.0.0.1");
      if (i % 50 === 49) await new Promise((r) => setTimeout(r, 5)); // stay clear of kernel buffer drops
    }
    await waitFor(() => proxy.stats().toUpstream.sent >= n && server.received() >= proxy.stats().toUpstream.delivered, 5000);
    const s = proxy.stats();
    expect(s.toUpstream.sent).toBe(n);
    expect(s.toUpstream.lost + s.toUpstream.delivered).toBe(n);
    // Binomial(400, 0.5): sd 10, so +-50 is a 5-sd band.
    expect(Math.abs(s.toUpstream.delivered - n / 2), "seed 1").toBeLessThan(50);
    expect(server.received()).toBe(s.toUpstream.delivered);
  });

  it("gives each client its own flow, over IPv6", async () => {
    const server = await echoServer("udp6", "::1");
    const proxy = await proxyTo(server.port, { latencyMs: 5 }, 6);
    const a = await bindSocket("udp6", "::1");
    const b = await bindSocket("udp6", "::1");
    const gotA: number[] = [];
    const gotB: number[] = [];
    a.on("message", (m) => gotA.push(m.readUInt32LE(0)));
    b.on("message", (m) => gotB.push(m.readUInt32LE(0)));
    for (let i = 0; i < 10; i++) {
      a.send(indexed(i), proxy.address.port, "::1");
      b.send(indexed(100 + i), proxy.address.port, "::1");
    }
    await waitFor(() => gotA.length >= 10 && gotB.length >= 10, 5000);
    expect(gotA).toEqual(Array.from({ length: 10 }, (_, i) => i));
    expect(gotB).toEqual(Array.from({ length: 10 }, (_, i) => 100 + i));
    expect(proxy.stats().flowsOpened).toBe(2);
    expect(proxy.address.host).toBe("::1");
  });

  it("the CLI runs for --duration and prints counters; bad flags exit 2 with the fix", async () => {
    const server = await echoServer("udp4", "127.0.0.1");
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
    const code = await main(["proxy", "--listen", "127.0.0.1:0", "--to", `127.0.0.1:${server.port}`, "--latency", "5", "--duration", "0.2"], { io });
    expect(code).toBe(0);
    expect(out[0]).toMatch(/ackwire proxy: 127\.0\.0\.1:\d+ -> 127\.0\.0\.1:\d+ +seed 1 +\(each way: latency 5 ms\)/);
    expect(out.join("\n")).toMatch(/to server +sent 0/);
    expect(err).toEqual([]);

    expect(await main(["proxy", "--to", "127.0.0.1:1", "--loss", "200"], { io })).toBe(2);
    expect(err.pop()).toMatch(/--loss 200: a percentage must be from 0 to 100/);
    expect(await main(["proxy", "--help"], { io })).toBe(0);
    expect(out.pop()).toMatch(/--bandwidth RATE/);
    expect(await main(["frob"], { io })).toBe(2);
    expect(err.pop()).toMatch(/unknown command "frob"/);

    // Stopping through a signal, as Ctrl-C would.
    const controller = new AbortController();
    const running = main(["proxy", "--listen", "127.0.0.1:0", "--to", `127.0.0.1:${server.port}`], { io, signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    expect(await running).toBe(0);
    expect(out.pop()).toMatch(/queue delay/);
  });

  it("rebind() gives the client's flow a new upstream port, and replies still reach the client", async () => {
    const upstream = await bindSocket("udp4", "127.0.0.1");
    const ports: number[] = [];
    upstream.on("message", (msg, rinfo) => {
      ports.push(rinfo.port);
      upstream.send(msg, rinfo.port, rinfo.address);
    });
    const proxy = await proxyTo(upstream.address().port, {});
    const client = await bindSocket("udp4", "127.0.0.1");
    let echoes = 0;
    client.on("message", () => void echoes++);
    const sendAndWait = async (i: number): Promise<void> => {
      const before = echoes;
      client.send(indexed(i), proxy.address.port, "127.0.0.1");
      await waitFor(() => echoes > before, 2000);
    };
    await sendAndWait(1);
    await sendAndWait(2);
    proxy.rebind();
    await sendAndWait(3);
    await sendAndWait(4);
    expect(echoes).toBe(4);
    expect(ports[0]).toBe(ports[1]);
    expect(ports[2]).toBe(ports[3]);
    expect(ports[2]).not.toBe(ports[1]);
  });

  it("the CLI's --rebind-every rebinds on schedule and says so", async () => {
    const server = await echoServer("udp4", "127.0.0.1");
    const out: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => out.push(`ERR ${t}`) };
    const code = await main(["proxy", "--listen", "127.0.0.1:0", "--to", `127.0.0.1:${server.port}`, "--rebind-every", "0.1", "--duration", "0.45"], { io });
    expect(code).toBe(0);
    const rebinds = out.filter((line) => /^rebinding \d+: every client has a new upstream port$/.test(line));
    expect(rebinds.length).toBeGreaterThanOrEqual(1);
    expect(rebinds[0]).toBe("rebinding 1: every client has a new upstream port");
    expect(await main(["proxy", "--to", "127.0.0.1:1", "--rebind-every", "0.01"], { io })).toBe(2);
    expect(out.pop()).toMatch(/--rebind-every 0.01: use 0.1 seconds or more/);
  });

  it("reports a clear error when the listen port is taken", async () => {
    const taken = await bindSocket("udp4", "127.0.0.1");
    const err: string[] = [];
    const io = { out: () => {}, err: (t: string) => err.push(t) };
    const code = await main(["proxy", "--listen", `127.0.0.1:${taken.address().port}`, "--to", "127.0.0.1:7777", "--duration", "0"], { io });
    expect(code).toBe(1);
    expect(err[0]).toMatch(/pick another with --listen/);
  });
});
