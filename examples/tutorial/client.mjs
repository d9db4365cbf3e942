// A client: chat lines on a reliable channel, positions on an unreliable one, then its stats.
// Run: node client.mjs [host:port]
import { connect } from "ackwire";

const target = process.argv[2] ?? "127.0.0.1:7777";
const conn = await connect(target, { protocolId: 0x54555431 });
console.log(`connected to ${conn.address}`);

const CHAT = 0; // reliable-ordered: every line arrives, in order
const POSITION = 1; // unreliable-sequenced: only newer positions, lost ones are not resent
const encoder = new TextEncoder();
const decoder = new TextDecoder();

let chatEchoes = 0;
let positionEchoes = 0;
const lastEcho = new Promise((resolve) => {
  conn.on("message", (msg) => {
    if (msg.channel === POSITION) positionEchoes++;
    if (msg.channel !== CHAT) return;
    chatEchoes++;
    if (decoder.decode(msg.data) === "bye") resolve();
  });
});

for (let i = 0; i < 20; i++) conn.send(encoder.encode(`line ${i}`), { channel: CHAT });

// 30 position updates, one every 33 ms (a 30 Hz game tick): x and y as two float32s.
for (let tick = 0; tick < 30; tick++) {
  conn.send(new Uint8Array(new Float32Array([tick, tick * 2]).buffer), { channel: POSITION });
  await new Promise((resolve) => setTimeout(resolve, 33));
}

// A receipt resolves true once the server has acknowledged the message.
const delivered = await conn.send(encoder.encode("bye"), { channel: CHAT, receipt: true });
await lastEcho;
console.log(`"bye" delivered: ${delivered}`);
console.log(`chat echoes: ${chatEchoes} of 21`);
console.log(`position echoes: ${positionEchoes} of 30`);

const stats = conn.stats();
console.log(`rtt ${stats.rttMs.toFixed(1)} ms, loss ${(stats.lossRate * 100).toFixed(1)} %, resends ${stats.resends}`);
console.log(`packets sent ${stats.packets.dispatched}, acknowledged ${stats.packets.delivered}, lost ${stats.packets.dropped}`);

await conn.close();
