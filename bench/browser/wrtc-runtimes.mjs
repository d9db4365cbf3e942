// Whether @roamhq/wrtc runs on this runtime, and its round trip: two wrtc peers in this one
// process on 127.0.0.1 (no browser), a data channel opened as ackwire's (unordered, no
// retransmits), 1000 echoes of 100 B one every 2 ms. Prints one JSON line.
//
//   node bench/browser/wrtc-runtimes.mjs
//   node_modules/.bin/bun bench/browser/wrtc-runtimes.mjs
//   node_modules/.bin/deno run -A bench/browser/wrtc-runtimes.mjs
//
// wrtc is an optional dependency of the bench package (npm --prefix bench install).
import { createRequire } from "node:module";

const g = globalThis;
const runtime = g.Bun !== undefined ? "bun" : g.Deno !== undefined ? "deno" : "node";
const exit = (code) => (g.Deno !== undefined ? g.Deno.exit(code) : g.process.exit(code));
setTimeout(() => {
  console.log(JSON.stringify({ runtime, error: "did not finish in 60 s" }));
  exit(1);
}, 60_000);

const wrtc = createRequire(new URL("../package.json", import.meta.url))("@roamhq/wrtc");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Only loopback candidates: nothing leaves the machine.
const loopbackOnly = (sdp) => sdp.split("\r\n").filter((l) => !l.startsWith("a=candidate") || l.includes(" 127.0.0.1 ")).join("\r\n");
const gathered = (pc) => new Promise((resolve) => {
  const check = () => pc.iceGatheringState === "complete" && resolve();
  pc.onicegatheringstatechange = check;
  check();
  setTimeout(resolve, 5000);
});

const opened = performance.now();
const a = new wrtc.RTCPeerConnection({ iceServers: [] });
const b = new wrtc.RTCPeerConnection({ iceServers: [] });
const channel = a.createDataChannel("ackwire", { ordered: false, maxRetransmits: 0 });
channel.binaryType = "arraybuffer";
b.ondatachannel = (e) => {
  e.channel.binaryType = "arraybuffer";
  e.channel.onmessage = (m) => e.channel.send(m.data);
};
await a.setLocalDescription(await a.createOffer());
await gathered(a);
await b.setRemoteDescription({ type: "offer", sdp: loopbackOnly(a.localDescription.sdp) });
await b.setLocalDescription(await b.createAnswer());
await gathered(b);
await a.setRemoteDescription({ type: "answer", sdp: loopbackOnly(b.localDescription.sdp) });
await new Promise((resolve, reject) => {
  channel.onopen = resolve;
  setTimeout(() => reject(new Error("the channel did not open in 10 s")), 10_000);
});
const openMs = performance.now() - opened;

const COUNT = 1000;
const sentAt = new Array(COUNT);
const rtts = [];
channel.onmessage = (m) => {
  const i = new DataView(m.data).getUint32(0);
  if (i < COUNT && sentAt[i] !== undefined) rtts.push(performance.now() - sentAt[i]);
};
for (let i = 0; i < COUNT; i++) {
  const bytes = new Uint8Array(100);
  new DataView(bytes.buffer).setUint32(0, i);
  sentAt[i] = performance.now();
  channel.send(bytes);
  await sleep(2);
}
for (let i = 0; i < 100 && rtts.length < COUNT; i++) await sleep(10);
rtts.sort((x, y) => x - y);
const q = (f) => Math.round(rtts[Math.min(rtts.length - 1, Math.floor(f * rtts.length))] * 100) / 100;
console.log(JSON.stringify({ runtime, echoed: rtts.length, sent: COUNT, p50Ms: q(0.5), p99Ms: q(0.99), openMs: Math.round(openMs) }));
a.close();
b.close();
setTimeout(() => exit(0), 100);
