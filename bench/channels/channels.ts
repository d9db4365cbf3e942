/**
 * bench/channels — memory per ChannelSet / DeliveryNotificationManager and a CPU loop through
 * the channel layer alone (no engine, no session), for before/after comparisons.
 *
 * Memory: heapUsed + arrayBuffers delta (after gc(); run with --expose-gc) for 1,000 instances
 * kept alive, divided by 1,000. Shapes: the core bench's connection (2 channels:
 * reliable-ordered + unreliable, DNM capacity 256), idle and after some traffic; and the
 * default 8-channel set.
 * CPU: one sender ChannelSet + DeliveryNotificationManager; each round sends 4 x 100 B on a
 * reliable-ordered channel, asks hasPending, writes one packet, acknowledges it (every 20th
 * packet is declared lost instead) and feeds the frames to a receiving ChannelSet as engine
 * Message records (the receive copy; one records array per packet, as the engine's batch). Reports ns per round, best of 7 runs.
 *
 *   node --expose-gc <dist>/bench/channels/channels.js [--rounds N] [--baseline <other build's src/channels/index.js>]
 *
 * With --baseline (e.g. an older commit's `git archive`, compiled elsewhere), the same
 * measurements also run on that build of the channel layer, interleaved in this process, and
 * the CPU figure is also given as a ratio (this build / baseline; lower is better). On a loaded
 * machine only that ratio means much.
 */
import { RECORD_INTS } from "../../src/engine/abi.js";
import * as current from "../../src/channels/index.js";
import { frameRecords } from "./frame-records.js";
import type { ChannelOptions, ChannelSet, DeliveryNotificationManager, PacketContents } from "../../src/channels/index.js";

/** The parts of a channels build the bench uses (this one, or a baseline loaded at run time). */
type Build = Pick<typeof current, "ChannelSet" | "DeliveryNotificationManager" | "PacketContents">;

interface Host {
  process: { argv: string[]; memoryUsage(): { heapUsed: number; arrayBuffers: number }; hrtime: { bigint(): bigint } };
  console: { log(...a: unknown[]): void };
  gc?: () => void;
}
const host = globalThis as unknown as Host;
const args = host.process.argv.slice(2);
const ROUNDS = args.includes("--rounds") ? Number(args[args.indexOf("--rounds") + 1]) : 200_000;
const N = 1000;
const MTU = 1200;

function used(): number {
  host.gc?.();
  host.gc?.();
  const m = host.process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

function perInstance<T>(make: () => T, exercise?: (t: T) => void): number {
  const keep: T[] = [];
  const before = used();
  for (let i = 0; i < N; i++) {
    const t = make();
    exercise?.(t);
    keep.push(t);
  }
  const after = used();
  if (keep.length !== N) throw new Error("unreachable");
  return Math.round((after - before) / N);
}

const CORE: ChannelOptions[] = [{ mode: "reliable-ordered" }, { mode: "unreliable" }];
const EIGHT: ChannelOptions[] = [
  { mode: "reliable-ordered" },
  { mode: "reliable-ordered" },
  { mode: "reliable-unordered" },
  { mode: "unreliable" },
  { mode: "unreliable-sequenced" },
  { mode: "reliable-sequenced" },
  { mode: "latest-state" },
  { mode: "unreliable" },
];
const newSet = (b: Build, channels: ChannelOptions[]) => new b.ChannelSet({ channels, mtu: MTU, maxReceiveBufferBytes: 4 * 1024 * 1024 });
const newDnm = (b: Build) =>
  new b.DeliveryNotificationManager<PacketContents>({ onDelivered() {}, onDropped() {} }, { capacity: 256 });

const scratch = new Uint8Array(2048);
const payload = new Uint8Array(100);
/** A connection after a little traffic: 20 messages sent, written, acknowledged. */
function exerciseSet(cs: ChannelSet): void {
  for (let i = 0; i < 20; i++) cs.send(0, 0, payload);
  for (let i = 0; i < 5; i++) cs.send(0, 1, payload);
  for (let p = 0; p < 10 && cs.hasPending(0); p++) {
    const c = cs.acquireContents();
    cs.writeFrames(0, scratch, 0, MTU - 13, c);
    cs.onDelivered(0, c);
    cs.releaseContents(c);
  }
}
function exerciseDnm(d: DeliveryNotificationManager<PacketContents>, b: Build): void {
  const c = new b.PacketContents();
  for (let s = 0; s < 40; s++) d.dispatch(s, s, 100, c);
  for (let s = 0; s < 40; s++) d.acknowledge(s, 50);
}

function memory(b: Build): Record<string, number> {
  perInstance(() => newSet(b, CORE)); // warm-up (code, shared constants)
  return {
    channelSet2Idle: perInstance(() => newSet(b, CORE)),
    channelSet2AfterTraffic: perInstance(() => newSet(b, CORE), exerciseSet),
    channelSet8Idle: perInstance(() => newSet(b, EIGHT)),
    dnm256Idle: perInstance(() => newDnm(b)),
    dnm256AfterTraffic: perInstance(() => newDnm(b), (d) => exerciseDnm(d, b)),
  };
}

/** Engine-like Message records for the frames of one packet (decoded here, no engine): all
 *  written first, then handed over one by one, as the engine's batch is. */
function feed(rx: ChannelSet, bytes: Uint8Array, start: number, end: number, records: Int32Array): void {
  const n = frameRecords(bytes, start, end, records);
  for (let i = 0; i < n; i++) rx.onRecord(0, records, i * RECORD_INTS, bytes);
}

function cpuOnce(b: Build, rounds: number): number {
  const tx = newSet(b, CORE);
  const rx = newSet(b, CORE);
  const records = new Int32Array(64 * RECORD_INTS);
  let lostEvery = 0;
  const dnm = new b.DeliveryNotificationManager<PacketContents>(
    {
      onDelivered(_s, c) {
        tx.onDelivered(0, c);
        tx.releaseContents(c);
      },
      onDropped(_s, c) {
        tx.onLost(0, c);
        tx.releaseContents(c);
      },
    },
    { capacity: 256 },
  );
  let seq = 0;
  let delivered = 0;
  const t0 = host.process.hrtime.bigint();
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < 4; k++) tx.send(r, 0, payload);
    if (!tx.hasPending(r)) continue;
    const c = tx.acquireContents();
    const n = tx.writeFrames(r, scratch, 0, MTU - 13, c);
    if (n === 0) {
      tx.releaseContents(c);
      continue;
    }
    dnm.dispatch(seq, r, n + 13, c);
    if (++lostEvery % 20 === 0) dnm.detectLosses(r + 1_000_000, 1);
    else {
      dnm.acknowledge(seq, r);
      feed(rx, scratch, 0, n, records);
    }
    seq = (seq + 1) & 0xffff;
    for (let m = rx.pollMessage(); m !== undefined; m = rx.pollMessage()) delivered++;
  }
  const ns = Number(host.process.hrtime.bigint() - t0);
  if (delivered === 0) throw new Error("nothing delivered");
  return ns / rounds;
}

async function main(): Promise<void> {
  const builds: [string, Build][] = [["current", current]];
  if (args.includes("--baseline")) {
    const path = args[args.indexOf("--baseline") + 1];
    builds.push(["baseline", (await import(path)) as Build]);
  }
  const out: Record<string, unknown> = { rounds: ROUNDS };
  for (const [name, b] of builds) out[`${name}BytesPerInstance`] = memory(b);
  const best = new Map<string, number>(builds.map(([name]) => [name, Infinity]));
  for (let run = 0; run < 7; run++) {
    for (const [name, b] of builds) best.set(name, Math.min(best.get(name)!, cpuOnce(b, ROUNDS)));
  }
  for (const [name] of builds) out[`${name}NsPerRound`] = Math.round(best.get(name)!);
  if (builds.length === 2) out.cpuRatio = Number((best.get("current")! / best.get("baseline")!).toFixed(3));
  host.console.log(JSON.stringify(out, null, 2));
}

void main();
