// Adapter overhead, per runtime: raw socket echo packets/s through the adapter's own
// DatagramSocket versus ackwire unreliable messages/s through listen()/connect() on the same
// adapter. One process holds both ends on 127.0.0.1; 100-byte payloads (ackwire packs several
// per datagram, as it does for a game) and, separately, 200-byte payloads with a 300-byte MTU
// (one message per datagram: the per-datagram cost); a window of WINDOW in flight, refilled from
// the echo callbacks; a fixed count; bounded time.
//
//   node dist/bench/adapters/adapters.js            runs all three runtimes, writes
//                                                   bench/results/adapters.json
//   <runtime> dist/bench/adapters/adapters.js --child   measures the runtime it runs on
import { g, importDynamic, runtimeName, scriptArgs, type ChildProcessModule, type FsModule } from "../lib/host.js";
import { repoRoot } from "../lib/paths.js";
import type { DatagramSocket, RuntimeAdapter } from "../../src/api/socket.js";
import { createRuntime } from "../../src/api/runtime.js";
import type { EndpointFactory } from "../../src/api/endpoint-like.js";

const COUNT = 60_000;
const WINDOW = 64;
const SIZE = 100;
const SINGLE_SIZE = 200;
const SINGLE_MTU = 300;
const TIME_LIMIT_MS = 8_000;
const ROUNDS = 3;
/** An echo that has not come back in this long is taken as lost and its window slot reused. */
const STALL_MS = 20;

interface Result {
  raw: number;
  ackwire: number;
  ratio: number;
  ackwireDatagramsPerSecond?: number;
  oneMessagePerDatagram?: { size: number; mtu: number; raw: number; ackwire: number; ratio: number; ackwireDatagramsPerSecond: number };
}

async function adapterFor(name: string): Promise<RuntimeAdapter> {
  const mod = await import(`../../runtimes/${name}/index.js`);
  return (mod as Record<string, RuntimeAdapter>)[`${name}Adapter`]!;
}

interface Measured {
  /** Echoes per second. */
  rate: number;
  /** Datagrams the sending side put on the wire per second (raw: one per echo). */
  datagramsPerSecond: number;
}

/**
 * Echo-driven window: WINDOW messages in flight, each echo releases the next send, in the
 * echo's own callback. No timer sits in the loop, so the figure is bound by CPU and system
 * calls, not by timer ticks (an earlier version yielded with setTimeout(0) between refills and
 * measured the tick rate). A watchdog writes off the window if echoes stop for STALL_MS (a
 * datagram dropped by a full receive buffer) and ends the run when everything has been sent.
 */
function pumped(send: () => void, flush: () => void, onEchoes: (listener: (n: number) => void) => void, datagramsOut: () => number): Promise<Measured> {
  return new Promise((resolve) => {
    const start = g.performance.now();
    const startDatagrams = datagramsOut();
    let sent = 0;
    let echoes = 0;
    let credit = 0; // window slots written off as lost
    let finished = false;
    const fill = (): void => {
      let n = 0;
      while (sent - echoes - credit < WINDOW && sent < COUNT) {
        send();
        sent++;
        n++;
      }
      if (n > 0) flush();
    };
    const finish = (): void => {
      if (finished) return;
      finished = true;
      g.clearInterval(watchdog);
      const seconds = (g.performance.now() - start) / 1000;
      resolve({ rate: echoes / seconds, datagramsPerSecond: (datagramsOut() - startDatagrams) / seconds });
    };
    let lastEchoes = 0;
    const watchdog = g.setInterval(() => {
      if (g.performance.now() - start > TIME_LIMIT_MS) return finish();
      if (echoes !== lastEchoes) {
        lastEchoes = echoes;
        return;
      }
      if (sent >= COUNT) return finish();
      credit = sent - echoes;
      fill();
    }, STALL_MS);
    onEchoes((n) => {
      echoes += n;
      if (echoes >= COUNT) return finish();
      if (!finished) fill();
    });
    fill();
  });
}

async function rawEcho(adapter: RuntimeAdapter, size: number): Promise<Measured> {
  const a: DatagramSocket = await adapter.openSocket({ host: "127.0.0.1", port: 0, receiveBufferBytes: 4 << 20, sendBufferBytes: 4 << 20 });
  const b: DatagramSocket = await adapter.openSocket({ host: "127.0.0.1", port: 0, receiveBufferBytes: 4 << 20, sendBufferBytes: 4 << 20 });
  const toB = `127.0.0.1:${b.localAddress.port}`;
  b.onDatagrams((batch) => {
    for (let i = 0; i < batch.length; i++) b.send(batch.bytes[i]!, batch.from[i]!);
    b.flush();
  });
  const payload = new Uint8Array(size).fill(7);
  let out = 0;
  const result = await pumped(
    () => {
      a.send(payload, toB);
      out++;
    },
    () => a.flush(),
    (listener) => a.onDatagrams((batch) => listener(batch.length)),
    () => out,
  );
  await a.close();
  await b.close();
  return result;
}

/** `--toy`: drive the interop tests' toy endpoint instead of the real one (isolates the driver). */
const TOY = scriptArgs().includes("--toy");

async function endpointFactory(): Promise<EndpointFactory | undefined> {
  if (!TOY) return undefined;
  const mod = (await import(`${repoRoot()}test/interop/fixtures/toy-endpoint.mjs`)) as { ToyEndpoint: new (c: unknown) => unknown };
  return ((config) => new mod.ToyEndpoint(config)) as EndpointFactory;
}

/** `mtu` undefined: the default 1200 B, so small messages share datagrams (aggregation). */
async function ackwireEcho(adapter: RuntimeAdapter, size: number, mtu?: number): Promise<Measured> {
  const runtime = createRuntime(adapter);
  const channels = [{ mode: "unreliable" as const }];
  const createEndpoint = await endpointFactory();
  const common = { protocolId: 0xbe7c4, channels, ...(createEndpoint === undefined ? {} : { createEndpoint }), ...(mtu === undefined ? {} : { mtu }) };
  const server = await runtime.listen({ ...common, host: "127.0.0.1", port: 0 });
  server.on("connection", (conn) => conn.on("message", (m) => conn.send(m.data, { channel: 0 })));
  const client = await runtime.connect(`127.0.0.1:${server.address.port}`, common);
  const payload = new Uint8Array(size).fill(7);
  const result = await pumped(
    () => client.send(payload, { channel: 0 }),
    () => {}, // the driver drains and flushes once per service
    (listener) => client.on("message", () => listener(1)),
    () => client.stats().packets.dispatched,
  );
  await client.close();
  await server.close();
  return result;
}

/** Raw and ackwire runs interleaved (the machine is shared: load shifts between runs), best of ROUNDS each. */
async function interleaved(raw: () => Promise<Measured>, ours: () => Promise<Measured>): Promise<[Measured, Measured]> {
  let bestRaw: Measured | undefined;
  let bestOurs: Measured | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    const r = await raw();
    const o = await ours();
    if (bestRaw === undefined || r.rate > bestRaw.rate) bestRaw = r;
    if (bestOurs === undefined || o.rate > bestOurs.rate) bestOurs = o;
  }
  return [bestRaw!, bestOurs!];
}

async function child(): Promise<void> {
  const adapter = await adapterFor(runtimeName());
  // Warm-up (JIT, WASM tiers), then interleaved best-of runs.
  await rawEcho(adapter, SIZE);
  await ackwireEcho(adapter, SIZE);
  const [raw, ackwire] = await interleaved(() => rawEcho(adapter, SIZE), () => ackwireEcho(adapter, SIZE));
  // One message per datagram: 200 B messages with a 300 B MTU cannot share a datagram, so this
  // is the per-datagram cost of driver + session + engine against the raw socket.
  const [raw1, ackwire1] = await interleaved(() => rawEcho(adapter, SINGLE_SIZE), () => ackwireEcho(adapter, SINGLE_SIZE, SINGLE_MTU));
  g.console.log(
    JSON.stringify({
      runtime: runtimeName(),
      raw: Math.round(raw.rate),
      ackwire: Math.round(ackwire.rate),
      ratio: +(ackwire.rate / raw.rate).toFixed(3),
      ackwireDatagramsPerSecond: Math.round(ackwire.datagramsPerSecond),
      oneMessagePerDatagram: {
        size: SINGLE_SIZE,
        mtu: SINGLE_MTU,
        raw: Math.round(raw1.rate),
        ackwire: Math.round(ackwire1.rate),
        ratio: +(ackwire1.rate / raw1.rate).toFixed(3),
        ackwireDatagramsPerSecond: Math.round(ackwire1.datagramsPerSecond),
      },
    }),
  );
}

async function parent(): Promise<void> {
  const cp = await importDynamic<ChildProcessModule>("node:child_process");
  const fs = await importDynamic<FsModule>("node:fs");
  const root = repoRoot();
  const script = `${root}dist/bench/adapters/adapters.js`;
  const extra = TOY ? ["--toy"] : [];
  const commands: Record<string, [string, string[]]> = {
    node: [g.process!.argv[0]!, [script, "--child", ...extra]],
    bun: [`${root}node_modules/.bin/bun`, [script, "--child", ...extra]],
    deno: [`${root}node_modules/.bin/deno`, ["run", "--unstable-net", "--allow-net", "--allow-read", "--allow-env", script, "--child", ...extra]],
  };
  const results: Record<string, Result> = {};
  for (const [name, [cmd, args]] of Object.entries(commands)) {
    const out = await new Promise<string>((resolve) => {
      let text = "";
      const p = cp.spawn(cmd, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
      p.stdout!.on("data", (b) => (text += new g.TextDecoder().decode(b)));
      p.stderr!.on("data", (b) => g.console.error(new g.TextDecoder().decode(b)));
      p.on("close", () => resolve(text));
    });
    const line = out.split("\n").find((l) => l.startsWith("{"));
    if (line === undefined) {
      g.console.error(`${name}: no result`);
      continue;
    }
    const r = JSON.parse(line) as Result & { runtime: string };
    const { runtime: _runtime, ...result } = r;
    results[name] = result;
    const one = r.oneMessagePerDatagram;
    g.console.log(
      `${name}: raw ${r.raw} pkt/s, ackwire ${r.ackwire} msg/s (${r.ackwireDatagramsPerSecond} datagrams/s), ratio ${r.ratio}` +
        (one === undefined ? "" : `; one message per datagram (${one.size} B, mtu ${one.mtu}): raw ${one.raw}, ackwire ${one.ackwire}, ratio ${one.ratio}`),
    );
  }
  fs.mkdirSync(`${root}bench/results`, { recursive: true });
  // The toy-engine run measures the driver and adapter alone; it never overwrites the real figures.
  fs.writeFileSync(`${root}bench/results/${TOY ? "adapters-toy-engine" : "adapters"}.json`, JSON.stringify(results, null, 2) + "\n");
}

await (scriptArgs().includes("--child") ? child() : parent());
