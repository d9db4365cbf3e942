/**
 * bench/channels/hot — per-message CPU of the channel layer on a hot path: one warm connection,
 * full datagrams of 100 B reliable-ordered messages (11 per datagram at mtu 1200), as in the
 * aggregated bench/e2e case. Each round: the application sends a datagram's worth of messages,
 * the sender writes one packet, it is acknowledged (onDelivered, as the packet layer would) and
 * its frames reach a receiving ChannelSet as engine Message records (one records array per
 * packet, as the engine's batch); the receiver's messages are drained with takeMessages.
 * Reports process CPU (user + system) per message, median of 7 runs; with --baseline, that build
 * runs interleaved in this process and the ratio (this / baseline, lower is better) is given.
 *
 *   node <dist>/bench/channels/hot.js [--rounds N] [--size B] [--baseline <other build's src/channels/index.js>]
 *   bun  <dist>/bench/channels/hot.js ...
 */
import { RECORD_INTS } from "../../src/engine/abi.js";
import * as current from "../../src/channels/index.js";
import { numberArg, stringArg } from "../lib/host.js";
import { frameRecords } from "./frame-records.js";
import type { ChannelOptions, MessageSink, PacketContents } from "../../src/channels/index.js";
import { median } from "../lib/stats.js";

type Build = Pick<typeof current, "ChannelSet">;

interface Host {
  process: { argv: string[]; cpuUsage(prev?: { user: number; system: number }): { user: number; system: number } };
  console: { log(...a: unknown[]): void };
}
const host = globalThis as unknown as Host;
const ROUNDS = numberArg("--rounds", 100_000);
const SIZE = numberArg("--size", 100);
const MTU = 1200;
const ROOM = MTU - 13;
const PER_DATAGRAM = Math.max(1, Math.floor(ROOM / (SIZE + 6)));
const CHANNELS: ChannelOptions[] = [{ mode: "reliable-ordered" }, { mode: "unreliable" }];

const scratch = new Uint8Array(2048);
const payload = new Uint8Array(SIZE).fill(7);

/** Engine-like records for the frames of one packet (plain, unfragmented frames only). */
function decode(bytes: Uint8Array, end: number, records: Int32Array): number {
  return frameRecords(bytes, 0, end, records);
}

function cpuOnce(b: Build, rounds: number): number {
  const config = { channels: CHANNELS, mtu: MTU, maxReceiveBufferBytes: 4 * 1024 * 1024 };
  const tx = new b.ChannelSet(config);
  const rx = new b.ChannelSet(config);
  const records = new Int32Array(64 * RECORD_INTS);
  let received = 0;
  const sink: MessageSink = {
    onReceivedMessage() {
      received++;
    },
  };
  const t0 = host.process.cpuUsage();
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < PER_DATAGRAM; k++) tx.send(r, 0, payload);
    while (tx.hasPending(r)) {
      const c: PacketContents = tx.acquireContents();
      const n = tx.writeFrames(r, scratch, 0, ROOM, c);
      const count = decode(scratch, n, records);
      // Received before the ack (one-way delay), acknowledged afterwards.
      for (let i = 0; i < count; i++) rx.onRecord(r, records, i * RECORD_INTS, scratch);
      rx.takeMessages(sink);
      tx.onDelivered(r, c);
      tx.releaseContents(c);
    }
  }
  const u = host.process.cpuUsage(t0);
  if (received !== rounds * PER_DATAGRAM) throw new Error(`received ${received} of ${rounds * PER_DATAGRAM}`);
  return ((u.user + u.system) * 1000) / received;
}


async function main(): Promise<void> {
  const builds: [string, Build][] = [["current", current]];
  const baseline = stringArg("--baseline");
  if (baseline !== undefined) builds.push(["baseline", (await import(baseline)) as Build]);
  for (const [, b] of builds) cpuOnce(b, ROUNDS / 10); // warm-up
  const runs = new Map<string, number[]>(builds.map(([name]) => [name, []]));
  for (let run = 0; run < 7; run++) for (const [name, b] of builds) runs.get(name)!.push(cpuOnce(b, ROUNDS));
  const out: Record<string, unknown> = { rounds: ROUNDS, size: SIZE, perDatagram: PER_DATAGRAM };
  for (const [name] of builds) out[`${name}NsPerMessage`] = Math.round(median(runs.get(name)!));
  if (builds.length === 2) out.cpuRatio = Number((median(runs.get("current")!) / median(runs.get("baseline")!)).toFixed(3));
  host.console.log(JSON.stringify(out));
}

void main();
