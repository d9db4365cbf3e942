// Adapter overhead, per runtime: raw socket echo packets/s through the adapter's own
// DatagramSocket versus ackwire unreliable messages/s through listen()/connect() on the same
// adapter. One process holds both ends on 127.0.0.1; 100-byte payloads; a window of WINDOW
// in flight; a fixed count; bounded time.
//
//   node dist/bench/adapters/adapters.js            runs all three runtimes, writes
//                                                   bench/results/adapters.json
//   <runtime> dist/bench/adapters/adapters.js --child   measures the runtime it runs on
import { g, importDynamic, runtimeName, scriptArgs, sleep, type ChildProcessModule, type FsModule } from "../lib/host.js";
import { repoRoot } from "../lib/paths.js";
import type { DatagramSocket, RuntimeAdapter } from "../../src/api/socket.js";
import { createRuntime } from "../../src/api/runtime.js";
import type { EndpointFactory } from "../../src/api/endpoint-like.js";

const COUNT = 60_000;
const WINDOW = 64;
const SIZE = 100;
const TIME_LIMIT_MS = 8_000;
/** An echo that has not come back in this long is taken as lost and its window slot reused. */
const STALL_MS = 20;

interface Result {
  raw: number;
  ackwire: number;
  ratio: number;
}

async function adapterFor(name: string): Promise<RuntimeAdapter> {
  const mod = await import(`../../runtimes/${name}/index.js`);
  return (mod as Record<string, RuntimeAdapter>)[`${name}Adapter`]!;
}

/** Window-limited echo loop: `send()` one message, `onEcho` counts; returns echoes per second. */
async function windowed(send: () => void, echoes: () => number): Promise<number> {
  const start = g.performance.now();
  let sent = 0;
  let lastEchoes = 0;
  let lastProgress = start;
  let credit = 0; // window slots written off as lost
  while (echoes() < COUNT && g.performance.now() - start < TIME_LIMIT_MS) {
    const done = echoes();
    if (done !== lastEchoes) {
      lastEchoes = done;
      lastProgress = g.performance.now();
    } else if (g.performance.now() - lastProgress > STALL_MS) {
      credit = sent - done;
      lastProgress = g.performance.now();
    }
    while (sent - done - credit < WINDOW && sent < COUNT + WINDOW) {
      send();
      sent++;
    }
    await sleep(0);
  }
  return (echoes() * 1000) / (g.performance.now() - start);
}

async function rawEcho(adapter: RuntimeAdapter): Promise<number> {
  const a: DatagramSocket = await adapter.openSocket({ host: "127.0.0.1", port: 0, receiveBufferBytes: 4 << 20, sendBufferBytes: 4 << 20 });
  const b: DatagramSocket = await adapter.openSocket({ host: "127.0.0.1", port: 0, receiveBufferBytes: 4 << 20, sendBufferBytes: 4 << 20 });
  const toB = `127.0.0.1:${b.localAddress.port}`;
  b.onDatagrams((batch) => {
    for (let i = 0; i < batch.length; i++) b.send(batch.bytes[i]!, batch.from[i]!);
    b.flush();
  });
  let echoes = 0;
  a.onDatagrams((batch) => void (echoes += batch.length));
  const payload = new Uint8Array(SIZE).fill(7);
  let queued = 0;
  const rate = await windowed(
    () => {
      a.send(payload, toB);
      // Flush once per burst, as the driver does after a drain.
      if (++queued % 16 === 0) a.flush();
    },
    () => {
      a.flush();
      return echoes;
    },
  );
  await a.close();
  await b.close();
  return rate;
}

/** `--toy`: drive the interop tests' toy endpoint instead of the real one (isolates the driver). */
const TOY = scriptArgs().includes("--toy");

async function endpointFactory(): Promise<EndpointFactory | undefined> {
  if (!TOY) return undefined;
  const mod = (await import(`${repoRoot()}test/interop/fixtures/toy-endpoint.mjs`)) as { ToyEndpoint: new (c: unknown) => unknown };
  return ((config) => new mod.ToyEndpoint(config)) as EndpointFactory;
}

async function ackwireEcho(adapter: RuntimeAdapter): Promise<number> {
  const runtime = createRuntime(adapter);
  const channels = [{ mode: "unreliable" as const }];
  const createEndpoint = await endpointFactory();
  const common = createEndpoint === undefined ? { protocolId: 0xbe7c4, channels } : { protocolId: 0xbe7c4, channels, createEndpoint };
  const server = await runtime.listen({ ...common, host: "127.0.0.1", port: 0 });
  server.on("connection", (conn) => conn.on("message", (m) => conn.send(m.data, { channel: 0 })));
  const client = await runtime.connect(`127.0.0.1:${server.address.port}`, common);
  let echoes = 0;
  client.on("message", () => void echoes++);
  const payload = new Uint8Array(SIZE).fill(7);
  const rate = await windowed(
    () => client.send(payload, { channel: 0 }),
    () => echoes,
  );
  await client.close();
  await server.close();
  return rate;
}

async function child(): Promise<void> {
  const adapter = await adapterFor(runtimeName());
  // Warm-up, then measured runs alternated so neither side gets a warmer machine.
  await rawEcho(adapter);
  await ackwireEcho(adapter);
  const raw = Math.max(await rawEcho(adapter), await rawEcho(adapter));
  const ackwire = Math.max(await ackwireEcho(adapter), await ackwireEcho(adapter));
  g.console.log(JSON.stringify({ runtime: runtimeName(), raw: Math.round(raw), ackwire: Math.round(ackwire), ratio: +(ackwire / raw).toFixed(3) }));
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
    results[name] = { raw: r.raw, ackwire: r.ackwire, ratio: r.ratio };
    g.console.log(`${name}: raw ${r.raw} pkt/s, ackwire ${r.ackwire} msg/s, ratio ${r.ratio}`);
  }
  fs.mkdirSync(`${root}bench/results`, { recursive: true });
  // The toy-engine run measures the driver and adapter alone; it never overwrites the real figures.
  fs.writeFileSync(`${root}bench/results/${TOY ? "adapters-toy-engine" : "adapters"}.json`, JSON.stringify(results, null, 2) + "\n");
}

await (scriptArgs().includes("--child") ? child() : parent());
