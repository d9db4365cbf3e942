// Does this runtime let two UDP sockets share one port with the kernel spreading clients over
// them (SO_REUSEPORT)? Binds two sockets on 127.0.0.1 with the runtime's reuse option, sends
// 5 datagrams from each of 40 client sockets (distinct source ports), and prints one JSON line:
// how many sockets bound and what each received. Spread means both received some.
//   node bench/reuseport/probe.mjs | bun bench/reuseport/probe.mjs | deno run -A --unstable-net bench/reuseport/probe.mjs
// On Bun and Deno the runtime's own socket is probed (Bun.udpSocket, Deno.listenDatagram with
// reuseAddress); with --dgram, their node:dgram with reusePort instead.
// Bounded: 40 x 5 datagrams to loopback, one 300 ms wait.
const CLIENTS = 40;
const PER_CLIENT = 5;
const WAIT_MS = 300;
const runtime = typeof Bun !== "undefined" ? "bun" : typeof Deno !== "undefined" ? "deno" : "node";
const version = runtime === "bun" ? Bun.version : runtime === "deno" ? Deno.version.deno : process.versions.node;
const got = [0, 0];
const errors = [];
const closers = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function nodeProbe() {
  const dgram = await import("node:dgram");
  let port = 0;
  for (const i of [0, 1]) {
    const s = dgram.createSocket({ type: "udp4", reusePort: true });
    s.on("message", () => got[i]++);
    try {
      await new Promise((resolve, reject) => { s.once("error", reject); s.bind(port, "127.0.0.1", resolve); });
      port = s.address().port;
      closers.push(() => s.close());
    } catch (e) { errors.push(e.code ?? String(e)); }
  }
  for (let k = 0; k < CLIENTS && port > 0; k++) {
    const c = dgram.createSocket("udp4");
    await new Promise((r) => c.bind(0, "127.0.0.1", r));
    closers.push(() => c.close());
    for (let m = 0; m < PER_CLIENT; m++) c.send("x", port, "127.0.0.1");
  }
}

async function bunProbe() {
  let port = 0;
  for (const i of [0, 1]) {
    try {
      const s = await Bun.udpSocket({ hostname: "127.0.0.1", port, reusePort: true, socket: { data() { got[i]++; } } });
      port = s.port;
      closers.push(() => s.close());
    } catch (e) { errors.push(e.code ?? e.message); }
  }
  for (let k = 0; k < CLIENTS && port > 0; k++) {
    const c = await Bun.udpSocket({ hostname: "127.0.0.1" });
    closers.push(() => c.close());
    for (let m = 0; m < PER_CLIENT; m++) c.send("x", port, "127.0.0.1");
  }
}

async function denoProbe() {
  let port = 0;
  for (const i of [0, 1]) {
    try {
      const s = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port, reuseAddress: true });
      port = s.addr.port;
      closers.push(() => s.close());
      (async () => { try { for await (const _ of s) got[i]++; } catch { /* closed */ } })();
    } catch (e) { errors.push(e.name ?? e.message); }
  }
  for (let k = 0; k < CLIENTS && port > 0; k++) {
    const c = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
    closers.push(() => c.close());
    for (let m = 0; m < PER_CLIENT; m++) await c.send(new Uint8Array([1]), { transport: "udp", hostname: "127.0.0.1", port });
  }
}

const args = runtime === "deno" ? Deno.args : process.argv.slice(2);
const api = runtime === "node" || args.includes("--dgram") ? "node:dgram" : runtime === "bun" ? "Bun.udpSocket" : "Deno.listenDatagram";
await (api === "Bun.udpSocket" ? bunProbe() : api === "Deno.listenDatagram" ? denoProbe() : nodeProbe());
await sleep(WAIT_MS);
for (const close of closers) close();
const bound = 2 - errors.length;
console.log(JSON.stringify({ runtime, version, api, bound, received: got, spread: got[0] > 0 && got[1] > 0, errors }));
if (runtime === "deno") Deno.exit(0);
