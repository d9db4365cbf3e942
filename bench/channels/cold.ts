/**
 * bench/channels/cold — CPU per message through the channel layer with cold per-connection
 * state, the shape of bench:core's server: many connections, each handling one small message
 * per turn, so a connection's objects are out of cache when its turn comes.
 *
 * Per turn of connection i (in order 0..N-1, then again): its sender ChannelSet sends one 100 B
 * message on reliable-ordered, writes one packet, and the packet written in its previous turn is
 * acknowledged (onDelivered + releaseContents); its receiver ChannelSet gets the new packet's
 * frame as an engine Message record (one shared records array, as the engine's) and hands the
 * message to a sink (takeMessages). Reports ns per turn (send + write + ack + receive of one
 * message), process CPU time (GC threads included, as bench:core counts it), best of 15 (--runs).
 *
 *   node --expose-gc <dist>/bench/channels/cold.js [--connections N] [--turns T] [--baseline <other build's src/channels/index.js>]
 *
 * With --baseline the two builds run interleaved in one process and a ratio is printed.
 */
import { RecordHeader, RecordType, RECORD_INTS } from "../../src/engine/abi.js";
import * as current from "../../src/channels/index.js";
import { numberArg, stringArg } from "../lib/host.js";
import { frameRecords } from "./frame-records.js";
import type { ChannelOptions, ChannelSet, MessageSink, PacketContents } from "../../src/channels/index.js";

type Build = Pick<typeof current, "ChannelSet">;

interface Host {
  process: { argv: string[]; cpuUsage(): { user: number; system: number } };
  console: { log(...a: unknown[]): void };
}
const host = globalThis as unknown as Host;
const CONNECTIONS = numberArg("--connections", 2000);
const TURNS = numberArg("--turns", 200_000);
const RUNS = numberArg("--runs", 15);
const MTU = 1200;
const CORE: ChannelOptions[] = [{ mode: "reliable-ordered" }, { mode: "unreliable" }];

class CountingSink implements MessageSink {
  count = 0;
  bytes = 0;
  onReceivedMessage(_channel: number, data: Uint8Array): void {
    this.count++;
    this.bytes += data.length;
  }
}

function runOnce(b: Build, turns: number): number {
  const make = (): ChannelSet => new b.ChannelSet({ channels: CORE, mtu: MTU, maxReceiveBufferBytes: 4 * 1024 * 1024 });
  const tx: ChannelSet[] = [];
  const rx: ChannelSet[] = [];
  const inFlight: (PacketContents | undefined)[] = [];
  for (let i = 0; i < CONNECTIONS; i++) {
    tx.push(make());
    rx.push(make());
    inFlight.push(undefined);
  }
  // A datagram area per connection slot in one big arena (as the engine's receive arena).
  const arena = new Uint8Array(64 * 1024);
  const records = new Int32Array(64 * RECORD_INTS);
  const payload = new Uint8Array(100);
  const sink = new CountingSink();
  let i = 0;
  const c0 = host.process.cpuUsage();
  for (let t = 0; t < turns; t++) {
    const now = t >> 6;
    const s = tx[i];
    payload[0] = t & 0xff;
    s.send(now, 0, payload);
    const c = s.acquireContents();
    const at = (t & 31) * 1024;
    const n = s.hasPending(now) ? s.writeFrames(now, arena, at, MTU - 13, c) : 0;
    const prev = inFlight[i];
    if (prev !== undefined) {
      s.onDelivered(now, prev);
      s.releaseContents(prev);
    }
    inFlight[i] = c;
    const r = rx[i];
    const k = frameRecords(arena, at, at + n, records, i);
    records[k * RECORD_INTS + RecordHeader.Type] = RecordType.PacketReceived;
    for (let j = 0; j < k; j++) r.onRecord(now, records, j * RECORD_INTS, arena);
    r.takeMessages(sink);
    i = i + 1 === CONNECTIONS ? 0 : i + 1;
  }
  const c1 = host.process.cpuUsage();
  const ns = (c1.user - c0.user + c1.system - c0.system) * 1000;
  if (sink.count !== turns) throw new Error(`delivered ${sink.count} of ${turns}`);
  return ns / turns;
}

async function main(): Promise<void> {
  const builds: [string, Build][] = [["current", current]];
  const baseline = stringArg("--baseline");
  if (baseline !== undefined) builds.push(["baseline", (await import(baseline)) as Build]);
  const best = new Map<string, number>(builds.map(([name]) => [name, Infinity]));
  for (let run = 0; run < RUNS; run++) {
    for (const [name, b] of builds) best.set(name, Math.min(best.get(name)!, runOnce(b, TURNS)));
  }
  const out: Record<string, unknown> = { connections: CONNECTIONS, turns: TURNS };
  for (const [name] of builds) out[`${name}NsPerTurn`] = Math.round(best.get(name)!);
  if (builds.length === 2) out.cpuRatio = Number((best.get("current")! / best.get("baseline")!).toFixed(3));
  host.console.log(JSON.stringify(out, null, 2));
}

void main();
