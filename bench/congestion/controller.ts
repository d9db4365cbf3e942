/**
 * bench/congestion — CPU per packet of the default controller and the RTT / ping estimators,
 * driven the way the session drives them, over many connections round-robin so that each
 * connection's state is cold in cache when its next packet arrives (as in bench:core, where
 * 1,000 connections each see one packet every ~33 ms).
 *
 * Each connection sends one ~130-byte packet every 33 ms (canSend, nextSendTime, onSent); the
 * packet is acked 20-25 ms later (RttEstimator.onSample, PingTracker.onAck, onAcks,
 * bandwidthEstimateBps) or, 5 % of the time, declared lost 30 ms later (onLoss). Between two
 * connections' turns, `--evict` random cache lines of a 16 MB buffer are touched (the rest of
 * the server's per-packet work); the same loop with the controller calls left out is timed too
 * and subtracted.
 *
 *   node dist/bench/congestion/controller.js [--connections 1000] [--seconds 20] [--evict 8] [--rounds 5]
 *
 * On a shared machine the eviction baseline makes the difference noisy; `--evict 0
 * --connections 20000` (state cold in DRAM, about 2 us per packet) gave the steadiest A/B,
 * `--evict 0 --connections 1000` (state mostly in L2/L3) shows the instruction cost.
 * Prints CPU nanoseconds per packet (send + its ack or loss), controller work only (medians of
 * alternated runs with and without it).
 */
import { AckSummary, createController, type SentPacket, type CongestionController } from "../../src/congestion/controller.js";
import { PingTracker } from "../../src/congestion/ping.js";
import { RttEstimator } from "../../src/congestion/rtt.js";
import { Rng } from "../../src/sim/rng.js";
import { median } from "../lib/stats.js";

interface HostGlobals {
  process: { argv: string[]; cpuUsage(previous?: { user: number; system: number }): { user: number; system: number } };
  console: { log(...a: unknown[]): void };
}
const host = globalThis as unknown as HostGlobals;
const args = host.process.argv.slice(2);
function numberArg(name: string, fallback: number): number {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}
const CONNECTIONS = numberArg("--connections", 1000);
const SECONDS = numberArg("--seconds", 20);
const EVICT_LINES = numberArg("--evict", 8);
const ROUNDS = numberArg("--rounds", 5);
const PERIOD_MS = 33;
const PACKET_BYTES = 130;
const LOSS = 0.05;
const RING_MS = 64;

// Restarted by each run, so both variants see the same stream.
let rng = new Rng(0x2545f491);
const random = (): number => rng.next();

const EVICT = new Float64Array(2 * 1024 * 1024); // 16 MB
let evictSink = 0;
function evict(): void {
  for (let i = 0; i < EVICT_LINES; i++) {
    const at = (random() * EVICT.length) & ~7;
    evictSink += EVICT[at];
    EVICT[at] = evictSink * 1e-300;
  }
}

class Conn {
  readonly cc: CongestionController = createController();
  readonly rtt = new RttEstimator();
  readonly ping = new PingTracker();
  inFlight = 0;
  bandwidthSeen = -1;
}

interface Pending {
  conn: number;
  record: SentPacket;
  sentTime: number;
  lost: boolean;
}

const DUMMY: SentPacket = createController().onSent(0, PACKET_BYTES, 0);

function run(withController: boolean): { ns: number; packets: number } {
  rng = new Rng(0x2545f491);
  const conns: Conn[] = [];
  for (let i = 0; i < CONNECTIONS; i++) conns.push(new Conn());
  const buckets: Pending[][] = Array.from({ length: RING_MS }, () => []);
  const idle: SentPacket[] = [];
  let packets = 0;
  let sink = 0;
  const acks = new AckSummary();
  const totalMs = SECONDS * 1000;
  const start = host.process.cpuUsage();
  for (let now = 0; now < totalMs; now++) {
    // Acks and losses due now.
    const due = buckets[now % RING_MS];
    buckets[now % RING_MS] = [];
    for (const p of due) {
      evict();
      if (!withController) continue;
      const c = conns[p.conn];
      c.inFlight -= p.record.bytes;
      if (p.lost) {
        c.cc.onLoss(now, p.record, c.inFlight);
        continue;
      }
      c.rtt.onSample(now, now - p.sentTime);
      sink += c.rtt.rtoMs() + c.rtt.smoothedMs + c.rtt.latestMs;
      c.ping.onAck(now, p.sentTime, 1);
      // One packet per ack, as a 30 Hz connection's datagrams each ack one.
      acks.add(p.record);
      c.cc.onAcks(now, acks, c.inFlight);
      acks.clear();
      const bps = c.cc.bandwidthEstimateBps();
      if (bps !== c.bandwidthSeen) c.bandwidthSeen = bps;
      idle.push(p.record);
    }
    // Sends due now.
    for (let k = now % PERIOD_MS; k < CONNECTIONS; k += PERIOD_MS) {
      evict();
      const lost = random() < LOSS;
      const delay = lost ? 30 : 20 + Math.floor(random() * 6);
      if (!withController) {
        buckets[(now + delay) % RING_MS].push({ conn: k, record: DUMMY, sentTime: now, lost });
        packets++;
        continue;
      }
      const c = conns[k];
      if (!c.cc.canSend(c.inFlight, PACKET_BYTES)) {
        sink++;
        continue;
      }
      if (c.cc.nextSendTime(now) > now) {
        sink++;
        continue;
      }
      const record = c.cc.onSent(now, PACKET_BYTES, c.inFlight, idle.pop());
      c.inFlight += PACKET_BYTES;
      if (c.inFlight === PACKET_BYTES) c.cc.onAppLimited(now, c.inFlight);
      buckets[(now + delay) % RING_MS].push({ conn: k, record, sentTime: now, lost });
      packets++;
    }
  }
  if (sink === 0.5) host.console.log("unreachable");
  const used = host.process.cpuUsage(start);
  return { ns: (used.user + used.system) * 1000, packets };
}

run(true); // warm-up (JIT)
// Alternated, medians: the machine is shared and single runs swing.
const bases: number[] = [];
const fulls: number[] = [];
let packets = 0;
for (let r = 0; r < ROUNDS; r++) {
  bases.push(run(false).ns);
  const full = run(true);
  fulls.push(full.ns);
  packets = full.packets;
}
host.console.log(
  JSON.stringify({
    connections: CONNECTIONS,
    seconds: SECONDS,
    evictLines: EVICT_LINES,
    packets,
    nsPerPacket: Math.round((median(fulls) - median(bases)) / packets),
    runsNsPerPacket: fulls.map((f, i) => Math.round((f - bases[i]) / packets)),
    baselineNsPerPacket: Math.round(median(bases) / packets),
  }),
);
