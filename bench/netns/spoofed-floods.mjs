#!/usr/bin/env node
// Floods from forged source addresses at real servers: the longer version of
// test/interop/spoofed-floods.test.ts (bench/lib/spoof-lab.mjs: two network namespaces, a raw
// IP socket forging 1,000 addresses of the link's subnet, nftables counting the server's UDP
// bytes). For each runtime and each flood, a server of its own (test/interop/fixtures/
// spoof-server.mjs) and an honest Node client connecting a second into the flood; one JSON
// line per run: what the flood sent, what the server read and counted, the kernel's bytes in
// and out, and the honest connect time.
// Floods: "handshake" (CONNECT_REQUEST + DATA at a plain server), "hello" (HELLOs with fresh
// tokens under another key at a secure server, above its 2000/s token budget, + stray SEALED).
// `--unresolved` leaves the forged addresses without neighbor entries (replies wait in ARP).
// Needs root, iproute2, nft, python3 and a build (dist/).
//
//   node bench/netns/spoofed-floods.mjs [--seconds=6] [--runtimes=node,bun,deno] [--rate=8000] [--unresolved]
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { SpoofLab, spoofLabUnsupported } from "../lib/spoof-lab.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const fixtures = join(root, "test", "interop", "fixtures");
const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const seconds = Number(arg("seconds", "6"));
const rate = Number(arg("rate", "8000"));
const runtimes = arg("runtimes", "node,bun,deno").split(",");
const unresolved = process.argv.includes("--unresolved");
const PROTOCOL = 0x5f00f;
const PLAIN_PORT = 7700;
const SECURE_PORT = 7701;
const hex = (b) => Buffer.from(b).toString("hex");

const skip = spoofLabUnsupported();
if (skip !== undefined) {
  console.log(JSON.stringify({ skipped: skip }));
  process.exit(0);
}

const { Endpoint } = await import(join(root, "dist/src/session/endpoint.js"));
const { ClientSecurity } = await import(join(root, "dist/src/secure/client-security.js"));
const { createConnectToken, parseConnectToken } = await import(join(root, "dist/src/secure/token.js"));
const { HELLO_FIXED_BYTES } = await import(join(root, "dist/src/secure/wire.js"));

const bin = (name) => join(root, "node_modules", ".bin", name);
const commands = {
  node: (script) => [process.execPath, script],
  bun: (script) => [bin("bun"), script],
  deno: (script) => [bin("deno"), "run", "--unstable-net", "--allow-net", "--allow-read", "--allow-env", script],
};

/** Runs `argv` in `ns`; resolves with its JSON lines (and stops it after `limitMs`). */
function runIn(ns, argv, limitMs, onLine = () => undefined) {
  return new Promise((resolve) => {
    const child = spawn("ip", ["netns", "exec", ns, ...argv], { stdio: ["ignore", "pipe", "pipe"] });
    const lines = [];
    let buffer = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), limitMs);
    child.stdout.on("data", (c) => {
      buffer += c.toString("utf8");
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line.startsWith("{")) {
          const parsed = JSON.parse(line);
          lines.push(parsed);
          onLine(parsed);
        }
      }
    });
    child.on("exit", () => {
      clearTimeout(timer);
      resolve(lines);
    });
  });
}

const lab = new SpoofLab("b", PLAIN_PORT);
try {
  const sources = lab.sources(1000);
  if (!unresolved) lab.resolve(sources);
  const serverKey = Uint8Array.from({ length: 32 }, (_, i) => (i * 37 + 5) & 0xff);
  const client = new Endpoint({ protocolId: PROTOCOL, seed: 5, engine: "ts" });
  client.connect(0, `${lab.serverIp}:${PLAIN_PORT}`);
  const request = client.pollTransmit(0).bytes.slice();
  const data = new Uint8Array(13).fill(0x5a);
  data[0] = 0;
  const foreign = createConnectToken({ serverKey: serverKey.map((b) => b ^ 0xff), protocolId: PROTOCOL, clientId: 1, serverAddresses: [`${lab.serverIp}:${SECURE_PORT}`] });
  const hello = new ClientSecurity(parseConnectToken(foreign, PROTOCOL)).seal(request).slice();
  const helloTagAt = HELLO_FIXED_BYTES + (hello[37] | (hello[38] << 8)) - 16;
  const sealed = new Uint8Array(80).fill(0x33);
  sealed[0] = 0x81;
  const floods = {
    handshake: {
      kind: "plain",
      flows: [
        { name: "request", port: PLAIN_PORT, hex: hex(request), vary: null, rate: Math.round(rate / 2) },
        { name: "data", port: PLAIN_PORT, hex: hex(data), vary: null, rate: Math.round(rate / 4) },
      ],
    },
    hello: {
      kind: "secure",
      flows: [
        { name: "hello", port: SECURE_PORT, hex: hex(hello), vary: helloTagAt, rate },
        { name: "sealed", port: SECURE_PORT, hex: hex(sealed), vary: 1, rate: Math.round(rate / 8) },
      ],
    },
  };
  for (const runtime of runtimes) {
    for (const [name, flood] of Object.entries(floods)) {
      const args = { host: lab.serverIp, plainPort: PLAIN_PORT, securePort: SECURE_PORT, serverKeyHex: hex(serverKey), protocolId: PROTOCOL };
      let listening;
      const up = new Promise((resolve) => (listening = resolve));
      const serverDone = runIn(lab.server, [...commands[runtime](join(fixtures, "spoof-server.mjs")), JSON.stringify({ ...args, kind: flood.kind, runMs: (seconds + 1.5) * 1000 })], (seconds + 30) * 1000, (l) => l.listening && listening());
      await up;
      const before = lab.udpCounters();
      const [floodLines, probeLines] = await Promise.all([
        runIn(lab.attacker, ["python3", join(fixtures, "spoof-flood.py"), JSON.stringify({ dst: lab.serverIp, sources, seconds, flows: flood.flows })], (seconds + 30) * 1000),
        runIn(lab.attacker, [process.execPath, join(fixtures, "spoof-probe.mjs"), JSON.stringify({ ...args, delayMs: 1000, only: flood.kind })], (seconds + 30) * 1000),
      ]);
      const result = (await serverDone).find((l) => l.result !== undefined)?.result;
      const after = lab.udpCounters();
      const c = result?.counters;
      console.log(
        JSON.stringify({
          runtime,
          flood: name,
          seconds,
          neighbors: unresolved ? "unresolved" : "resolved",
          sent: floodLines[0]?.flood,
          kernel: { packetsIn: after.in.packets - before.in.packets, bytesIn: after.in.bytes - before.in.bytes, packetsOut: after.out.packets - before.out.packets, bytesOut: after.out.bytes - before.out.bytes },
          probe: probeLines[0]?.probe?.[flood.kind],
          opened: result?.opened,
          session: c?.session && { datagramsReceived: c.session.datagramsReceived, challengesSent: c.session.challengesSent, noConnectionSent: c.session.noConnectionSent, handshakeRateLimited: c.session.handshakeRateLimited, noConnectionRateLimited: c.session.noConnectionRateLimited },
          secure: c?.secure && { opened: c.secure.opened, badToken: c.secure.badToken, rateLimited: c.secure.rateLimited, retried: c.secure.retried, noAssociation: c.secure.noAssociation },
          sendFailures: c?.sendFailures,
        }),
      );
    }
  }
} finally {
  lab.close();
}
