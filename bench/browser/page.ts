/**
 * The benchmark page's script (plain JavaScript, served as text): each function runs one
 * measurement in the page and returns its numbers. ackwire over a WebRTC data channel and a
 * plain WebSocket run the same traffic: a 100 B message carries its index, the page times each
 * echo. Every loop is bounded in count and time.
 */
export const BENCH_PAGE = `<!doctype html><meta charset="utf-8"><title>ackwire browser bench</title><body>bench
<script type="module">
import { connect } from "/ackwire/ackwire.js";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

function quantile(sorted, q) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
function summary(rtts, sent) {
  const s = rtts.filter((x) => x !== undefined).sort((a, b) => a - b);
  return { sent, delivered: s.length, p50Ms: quantile(s, 0.5), p99Ms: quantile(s, 0.99), maxMs: s.length ? s[s.length - 1] : null };
}
function message(i) {
  const b = new Uint8Array(100);
  new DataView(b.buffer).setUint32(0, i);
  return b;
}
const indexOf = (data) => new DataView(data.buffer ?? data, data.byteOffset ?? 0).getUint32(0);

/** A transport with send(bytes), onMessage(fn(bytes)), backlog() and close(). */
async function ackwire(url, protocolId, channel) {
  const conn = await connect(url, { protocolId, connectTimeoutMs: 20000 });
  let handler = () => {};
  conn.on("message", (m) => handler(m.data));
  return {
    send: (b) => conn.send(b, { channel }),
    onMessage: (fn) => (handler = fn),
    backlog: () => conn.stats().queuedBytes,
    stats: () => { const s = conn.stats(); return { resends: s.resends, packetsDropped: s.packets.dropped, packetsDispatched: s.packets.dispatched, srttMs: s.rttMs, pathMtu: s.pathMtu }; },
    close: () => conn.close(),
  };
}
async function websocket(url) {
  const ws = new WebSocket(url);
  ws.binaryType = "arraybuffer";
  await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = () => reject(new Error("websocket failed")); });
  let handler = () => {};
  ws.onmessage = (e) => handler(new Uint8Array(e.data));
  return { send: (b) => ws.send(b), onMessage: (fn) => (handler = fn), backlog: () => ws.bufferedAmount, stats: () => undefined, close: async () => ws.close() };
}
function open(kind, target) {
  return kind === "ackwire" ? ackwire(target.url, target.protocolId, target.channel ?? 0) : websocket(target.url);
}

/** Round trips of 100 B messages sent every intervalMs (one or a few in flight). */
async function rtt(kind, target, count, intervalMs) {
  const t = await open(kind, target);
  const sentAt = new Array(count);
  const rtts = new Array(count);
  t.onMessage((d) => { const i = indexOf(d); if (i < count && rtts[i] === undefined) rtts[i] = now() - sentAt[i]; });
  // Warm-up: the first exchanges settle the path (and ackwire's RTT estimate).
  for (let i = 0; i < 20; i++) { t.send(message(0xffffff00 + i)); await sleep(5); }
  for (let i = 0; i < count; i++) { sentAt[i] = now(); t.send(message(i)); await sleep(intervalMs); }
  const end = now() + 3000;
  while (now() < end && rtts.filter((x) => x !== undefined).length < count) await sleep(10);
  const stats = t.stats();
  await t.close();
  return { ...summary(rtts, count), stats, slowest: slowest(rtts, sentAt) };
}

/** The 5 slowest round trips and when (ms after the first send) they were sent. */
function slowest(rtts, sentAt) {
  return rtts.map((r, i) => [r, i]).filter(([r]) => r !== undefined).sort((a, b) => b[0] - a[0]).slice(0, 5).map(([r, i]) => ({ i, rttMs: Math.round(r * 10) / 10, atMs: Math.round(sentAt[i] - sentAt[0]) }));
}

/** Echoed 100 B messages per second over durationMs, sending while the backlog is under a bound. */
async function throughput(kind, target, durationMs) {
  const t = await open(kind, target);
  let received = 0;
  let next = 0;
  t.onMessage(() => received++);
  const start = now();
  while (now() - start < durationMs) {
    for (let i = 0; i < 64 && t.backlog() < 64 * 1024; i++) t.send(message(next++));
    await sleep(0);
  }
  const elapsed = (now() - start) / 1000;
  const got = received;
  const stats = t.stats();
  await t.close();
  return { sent: next, echoed: got, msgsPerSecond: Math.round(got / elapsed), stats };
}

/** A 30 Hz stream of 100 B messages for durationMs: each message's round trip. */
async function stream(kind, target, durationMs) {
  const count = Math.floor((durationMs / 1000) * 30);
  const t = await open(kind, target);
  const sentAt = new Array(count);
  const rtts = new Array(count);
  t.onMessage((d) => { const i = indexOf(d); if (i < count && rtts[i] === undefined) rtts[i] = now() - sentAt[i]; });
  const start = now();
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / 30;
    while (now() < due) await sleep(Math.max(0, due - now() - 1));
    sentAt[i] = now();
    t.send(message(i));
  }
  const end = now() + 5000;
  while (now() < end && rtts.filter((x) => x !== undefined).length < count) await sleep(10);
  const stats = t.stats();
  await t.close();
  return { ...summary(rtts, count), stats, slowest: slowest(rtts, sentAt) };
}

window.bench = { rtt, throughput, stream };
</script></body>`;
