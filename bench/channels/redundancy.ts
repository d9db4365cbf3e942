/**
 * bench/channels/redundancy — bytes sent vs states lost for `redundancy` 0/1/2/3 on an
 * unreliable-sequenced channel (seed 004: the previous unreliable packet piggybacked so a
 * single drop costs nothing). Deterministic: a virtual clock and a seeded link, no timing, so
 * the figures are exact for the given seeds and repeat on every machine.
 *
 * A sender publishes one state per tick at 30 Hz (ticks of 33.3 ms) for 20,000 ticks on one
 * unreliable-sequenced channel, one datagram per tick; the link loses each datagram
 * independently with probability --loss (default 0.1), or in bursts with --burst (Gilbert:
 * mean burst 3 datagrams, same average loss), one-way latency 40 ms. The receiver is the TS
 * reference engine + ChannelSet (the engine's newest-wins rule drops the copies it does not
 * need). Per redundancy level:
 *  - bytes/tick: UDP payload bytes sent per tick (13 B packet overhead included);
 *  - arrived: fraction of the ticks' states delivered at all (the sequenced channel delivers a
 *    state only if nothing newer arrived first; copies travel in front of the new message);
 *  - on time: fraction delivered in their own tick's datagram (what redundancy cannot change);
 *  - late by 1 / 2+ ticks: fraction delivered from a copy;
 *  - longest run of ticks with no state delivered.
 *
 *   node dist/bench/channels/redundancy.js [--loss 0.1] [--burst] [--bytes 32] [--seed 1]
 */
import { DATA_HEADER_BYTES, DATA_OVERHEAD_BYTES, DeliveryKind, PacketType, RECORD_INTS } from "../../src/engine/abi.js";
import { TsEngine } from "../../src/engine/ts-engine.js";
import { ChannelSet } from "../../src/channels/index.js";

interface Host {
  process: { argv: string[] };
  console: { log(...a: unknown[]): void };
}
const host = globalThis as unknown as Host;
const args = host.process.argv.slice(2);
const arg = (name: string, fallback: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const LOSS = arg("--loss", 0.1);
const BURST = args.includes("--burst");
const STATE_BYTES = arg("--bytes", 32);
const SEED = arg("--seed", 1);
const TICKS = 20_000;
const TICK_MS = 1000 / 30;
const LATENCY_MS = 40;
const MTU = 1200;

/** mulberry32 */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Independent loss, or a two-state (Gilbert) chain with mean burst 3 and the same mean loss. */
function lossModel(seed: number): () => boolean {
  const random = rng(seed);
  if (!BURST) return () => random() < LOSS;
  const leaveBad = 1 / 3;
  const enterBad = (LOSS * leaveBad) / (1 - LOSS);
  let bad = false;
  return () => {
    bad = bad ? random() >= leaveBad : random() < enterBad;
    return bad;
  };
}

interface Row {
  redundancy: number;
  bytesPerTick: number;
  arrived: number;
  onTime: number;
  late1: number;
  late2: number;
  longestGap: number;
  copies: number;
  copiesDropped: number;
}

function run(redundancy: number): Row {
  const kinds = [DeliveryKind.UnreliableSequenced];
  const channels = [{ mode: "unreliable-sequenced" as const, redundancy }];
  const txEngine = new TsEngine({ protocolId: 0xace, maxSlots: 1, channels: kinds });
  const rxEngine = new TsEngine({ protocolId: 0xace, maxSlots: 1, channels: kinds });
  txEngine.resetSlot(0, 1000);
  rxEngine.resetSlot(0, 2000);
  const tx = new ChannelSet({ channels, mtu: MTU, maxReceiveBufferBytes: 1 << 20 });
  const rx = new ChannelSet({ channels, mtu: MTU, maxReceiveBufferBytes: 1 << 20 });
  const lost = lossModel(SEED);
  const state = new Uint8Array(STATE_BYTES);
  const view = new DataView(state.buffer);
  let bytes = 0;
  const deliveredAt = new Int32Array(TICKS).fill(-1); // tick of the datagram that delivered it
  const off = txEngine.layout.txArenaOffset;
  const rxAt = rxEngine.layout.rxArenaOffset;
  for (let tick = 0; tick < TICKS; tick++) {
    const now = tick * TICK_MS;
    view.setUint32(0, tick, true);
    tx.send(now, 0, state);
    const contents = tx.acquireContents();
    const n = tx.writeFrames(now, txEngine.bytes, off + DATA_HEADER_BYTES, MTU - DATA_OVERHEAD_BYTES, contents);
    tx.releaseContents(contents);
    txEngine.sealData(0, off, n, PacketType.Data);
    const length = n + DATA_OVERHEAD_BYTES;
    bytes += length;
    if (lost()) continue;
    // Fixed latency and one datagram per tick: arrival order is send order.
    rxEngine.bytes.set(txEngine.bytes.subarray(off, off + length), rxAt);
    rxEngine.descriptors[0] = rxAt;
    rxEngine.descriptors[1] = length;
    rxEngine.descriptors[2] = 0;
    rxEngine.descriptors[3] = 0;
    const records = rxEngine.processBatch(1);
    for (let i = 0; i < records; i++) rx.onRecord(now + LATENCY_MS, rxEngine.records, i * RECORD_INTS, rxEngine.bytes);
    for (let m = rx.pollMessage(); m !== undefined; m = rx.pollMessage()) {
      const sent = new DataView(m.data.buffer, m.data.byteOffset).getUint32(0, true);
      deliveredAt[sent] = tick;
    }
  }
  let arrived = 0;
  let onTime = 0;
  let late1 = 0;
  let late2 = 0;
  let gap = 0;
  let longestGap = 0;
  for (let t = 0; t < TICKS; t++) {
    const at = deliveredAt[t];
    if (at < 0) {
      gap++;
      longestGap = Math.max(longestGap, gap);
      continue;
    }
    gap = 0;
    arrived++;
    if (at === t) onTime++;
    else if (at === t + 1) late1++;
    else late2++;
  }
  const st = tx.stats();
  return {
    redundancy,
    bytesPerTick: bytes / TICKS,
    arrived: arrived / TICKS,
    onTime: onTime / TICKS,
    late1: late1 / TICKS,
    late2: late2 / TICKS,
    longestGap,
    copies: st.copiesSent,
    copiesDropped: rx.stats().copiesDropped,
  };
}

const pct = (x: number) => `${(x * 100).toFixed(2)} %`;
host.console.log(
  `unreliable-sequenced, ${STATE_BYTES} B state at 30 Hz, ${TICKS} ticks, ${BURST ? "bursty (mean 3)" : "independent"} loss ${LOSS}, seed ${SEED}`,
);
host.console.log("| redundancy | bytes/tick | states lost | arrived | on time | late 1 tick | late 2+ | longest gap (ticks) |");
host.console.log("|---:|---:|---:|---:|---:|---:|---:|---:|");
let base = 0;
for (const r of [0, 1, 2, 3]) {
  const row = run(r);
  if (r === 0) base = row.bytesPerTick;
  host.console.log(
    `| ${r} | ${row.bytesPerTick.toFixed(1)} (x${(row.bytesPerTick / base).toFixed(2)}) | ${pct(1 - row.arrived)} | ${pct(row.arrived)} | ` +
      `${pct(row.onTime)} | ${pct(row.late1)} | ${pct(row.late2)} | ${row.longestGap} |`,
  );
}
