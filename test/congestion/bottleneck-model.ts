/**
 * Flow-level bottleneck model for controller tests (test helper, not a test file).
 *
 * Senders with unlimited bulk data each drive a CongestionController. Packets cross one FIFO
 * bottleneck (service rate `rateBps`, tail-drop queue of `queuePackets` waiting packets), then a
 * fixed propagation delay; every packet is acked at once (or, with `receiverAck`, the way an
 * ackwire receiver does: at once after `threshold` packets, else `delayMs` after the first one
 * not yet acked) and the ack returns after the return propagation delay (the ack path is
 * uncongested). Loss detection at the sender follows RFC 9002
 * 6.1: a packet is lost when a packet sent 3 or more later was acked, or when it is older than
 * 9/8 x max(smoothed RTT, latest RTT) while a later one was acked, or 3 x smoothed RTT with no
 * later ack (a crude PTO stand-in).
 *
 * Event-driven on a virtual clock; every loop is bounded by the simulated end time and an
 * iteration cap.
 */
import { ackPacket, type CongestionController, type SentPacket } from "../../src/congestion/controller.js";

export interface LinkSpec {
  rateBps: number;
  /** Round-trip propagation delay (half each way). */
  rttMs: number;
  queuePackets: number;
  /** A delaying receiver: ack at once after `threshold` packets, else `delayMs` after the first. */
  receiverAck?: { threshold: number; delayMs: number; honorsRequests?: boolean };
  /** The link's rate changes to `rateBps` for packets whose service starts at or after `atMs`. */
  rateChange?: { atMs: number; rateBps: number };
}

export interface FlowSpec {
  controller: CongestionController;
  startMs: number;
  packetBytes?: number;
}

interface Sent {
  seq: number;
  record: SentPacket;
  acked: boolean;
  lost: boolean;
  dropped: boolean;
}

interface FlowState {
  spec: FlowSpec;
  cc: CongestionController;
  bytes: number;
  nextSeq: number;
  inFlight: number;
  sent: Sent[];
  head: number; // index of the oldest packet not yet acked/lost
  largestAcked: number;
  srtt: number;
  latestRtt: number;
  pendingWake: number;
  /** Deliveries at the receiver: [time, bytes]. */
  deliveries: Array<[number, number]>;
  /** Queueing delay per packet that left the bottleneck: [arrival time at bottleneck, delay]. */
  queueDelays: Array<[number, number]>;
  drops: number;
  lossesDeclared: number;
  /** Delaying receiver: packets received and not yet acked, and when its timer fires. */
  unacked: number[];
  ackTimerAt: number;
  /** With `honorsRequests`: the threshold the receiver applies, the last one asked, and
   *  whether a request is on its way (one at a time, as the session sends them). */
  receiverThreshold: number;
  askedThreshold: number;
  askPending: boolean;
}

type Event =
  | { time: number; kind: "wake"; flow: number }
  | { time: number; kind: "ack"; flow: number; seq: number }
  | { time: number; kind: "check"; flow: number }
  | { time: number; kind: "recv"; flow: number; seq: number }
  | { time: number; kind: "ackTimer"; flow: number }
  | { time: number; kind: "ackFrequency"; flow: number; threshold: number }
  | { time: number; kind: "ackFrequencyConfirmed"; flow: number; threshold: number };

class MinHeap {
  private a: Event[] = [];
  private order: number[] = [];
  private counter = 0;
  get size(): number {
    return this.a.length;
  }
  push(e: Event): void {
    this.a.push(e);
    this.order.push(this.counter++);
    let i = this.a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.less(i, p)) {
        this.swap(i, p);
        i = p;
      } else break;
    }
  }
  pop(): Event | undefined {
    if (this.a.length === 0) return undefined;
    const top = this.a[0];
    const last = this.a.pop()!;
    const lastOrder = this.order.pop()!;
    if (this.a.length > 0) {
      this.a[0] = last;
      this.order[0] = lastOrder;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < this.a.length && this.less(l, m)) m = l;
        if (r < this.a.length && this.less(r, m)) m = r;
        if (m === i) break;
        this.swap(i, m);
        i = m;
      }
    }
    return top;
  }
  private less(i: number, j: number): boolean {
    const d = this.a[i]!.time - this.a[j]!.time;
    return d < 0 || (d === 0 && this.order[i]! < this.order[j]!);
  }
  private swap(i: number, j: number): void {
    [this.a[i], this.a[j]] = [this.a[j]!, this.a[i]!];
    [this.order[i], this.order[j]] = [this.order[j]!, this.order[i]!];
  }
}

export interface RunResult {
  flows: FlowState[];
  link: LinkSpec;
  /** Bytes delivered by flow `i` in [from, to). */
  deliveredBytes(i: number, fromMs: number, toMs: number): number;
  /** Link utilization over [from, to) counting all flows. */
  utilization(fromMs: number, toMs: number): number;
  /** Queueing-delay percentile (0..1) of packets that arrived at the bottleneck in [from, to). */
  queueDelayPercentile(q: number, fromMs: number, toMs: number): number;
}

export function runBottleneck(link: LinkSpec, flowSpecs: FlowSpec[], endMs: number): RunResult {
  const heap = new MinHeap();
  const bytesPerMs = link.rateBps / 8 / 1000;
  const oneWay = link.rttMs / 2;
  // A PTO allows for the receiver's ack delay (RFC 9002's max_ack_delay; ackwire's RTO adds the
  // peer's), or packets waiting for a delayed ack are declared lost.
  const ackDelayAllowance = link.receiverAck?.delayMs ?? 0;
  // Bottleneck: departure times of packets in the system (in service + waiting), FIFO.
  const inSystem: number[] = [];
  let inSystemHead = 0;
  let lastDeparture = 0;

  const flows: FlowState[] = flowSpecs.map((spec) => ({
    spec,
    cc: spec.controller,
    bytes: spec.packetBytes ?? 1200,
    nextSeq: 0,
    inFlight: 0,
    sent: [],
    head: 0,
    largestAcked: -1,
    srtt: NaN,
    latestRtt: NaN,
    pendingWake: Infinity,
    deliveries: [],
    queueDelays: [],
    drops: 0,
    lossesDeclared: 0,
    unacked: [],
    ackTimerAt: Infinity,
    receiverThreshold: link.receiverAck?.threshold ?? 1,
    askedThreshold: link.receiverAck?.threshold ?? 1,
    askPending: false,
  }));
  flows.forEach((f, i) => heap.push({ time: f.spec.startMs, kind: "wake", flow: i }));

  const transmit = (fi: number, now: number): void => {
    const f = flows[fi]!;
    const record = f.cc.onSent(now, f.bytes, f.inFlight);
    f.inFlight += f.bytes;
    const seq = f.nextSeq++;
    const s: Sent = { seq, record, acked: false, lost: false, dropped: false };
    f.sent.push(s);
    // Arrival at the bottleneck after the forward half of the propagation delay.
    const arrival = now + oneWay;
    while (inSystemHead < inSystem.length && inSystem[inSystemHead]! <= arrival) inSystemHead++;
    const occupancy = inSystem.length - inSystemHead; // includes the one in service
    if (occupancy - 1 >= link.queuePackets) {
      s.dropped = true;
      f.drops++;
    } else {
      const start = Math.max(arrival, lastDeparture);
      const rate = link.rateChange !== undefined && start >= link.rateChange.atMs ? link.rateChange.rateBps / 8 / 1000 : bytesPerMs;
      const service = f.bytes / rate;
      const departure = start + service;
      lastDeparture = departure;
      inSystem.push(departure);
      if (inSystemHead > 4096) {
        inSystem.splice(0, inSystemHead);
        inSystemHead = 0;
      }
      f.deliveries.push([departure, f.bytes]);
      f.queueDelays.push([arrival, start - arrival]);
      if (link.receiverAck === undefined) heap.push({ time: departure + oneWay, kind: "ack", flow: fi, seq });
      else heap.push({ time: departure, kind: "recv", flow: fi, seq });
    }
    // Loss check for tail losses: 3 x srtt + the receiver's ack delay (or 1 s before any sample).
    const wait = Number.isNaN(f.srtt) ? 1000 : 3 * f.srtt + ackDelayAllowance;
    heap.push({ time: now + wait, kind: "check", flow: fi });
  };

  const trySend = (fi: number, now: number): void => {
    const f = flows[fi]!;
    for (let guard = 0; guard < 10_000; guard++) {
      if (!f.cc.canSend(f.inFlight, f.bytes)) return;
      const t = f.cc.nextSendTime(now);
      if (t > now) {
        if (t < f.pendingWake) {
          f.pendingWake = t;
          heap.push({ time: t, kind: "wake", flow: fi });
        }
        return;
      }
      transmit(fi, now);
    }
  };

  const declareLosses = (fi: number, now: number): void => {
    const f = flows[fi]!;
    const timeThreshold = Number.isNaN(f.srtt) ? Infinity : (9 / 8) * Math.max(f.srtt, f.latestRtt);
    const pto = Number.isNaN(f.srtt) ? 1000 : 3 * f.srtt + ackDelayAllowance;
    while (f.head < f.sent.length) {
      const s = f.sent[f.head]!;
      if (s.acked || s.lost) {
        f.head++;
        continue;
      }
      const age = now - s.record.sentTime;
      const byCount = f.largestAcked >= s.seq + 3;
      const byTime = f.largestAcked > s.seq && age >= timeThreshold;
      if (!(byCount || byTime || age >= pto)) break;
      s.lost = true;
      f.lossesDeclared++;
      f.inFlight -= f.bytes;
      f.cc.onLoss(now, s.record, f.inFlight);
      f.head++;
    }
  };

  // The delaying receiver acks everything it holds (each ack returns after the one-way delay).
  const sendAcks = (fi: number, now: number): void => {
    const f = flows[fi]!;
    for (const seq of f.unacked) heap.push({ time: now + oneWay, kind: "ack", flow: fi, seq });
    f.unacked = [];
    f.ackTimerAt = Infinity;
  };

  // A receiver that honors ack-frequency requests: the sender asks when its controller wants a
  // new threshold; the request arrives a one-way delay later, and the sender learns it arrived
  // (its packet acked) a round trip later. Raising takes effect at the sender at once. The
  // model's flows always have data waiting, so the session's rule (ask only while messages wait
  // for the window or the pacer) always holds here; the request is never lost or queued.
  const askAckFrequency = (fi: number, now: number): void => {
    const f = flows[fi]!;
    if (link.receiverAck?.honorsRequests !== true || f.askPending || f.cc.peerAckThreshold === undefined) return;
    const want = f.cc.peerAckThreshold();
    if (want === f.askedThreshold) return;
    if (want > f.askedThreshold) f.cc.setPeerAckThreshold?.(want);
    f.askedThreshold = want;
    f.askPending = true;
    heap.push({ time: now + oneWay, kind: "ackFrequency", flow: fi, threshold: want });
    heap.push({ time: now + link.rttMs, kind: "ackFrequencyConfirmed", flow: fi, threshold: want });
  };

  let iterations = 0;
  const maxIterations = 20_000_000;
  while (heap.size > 0 && iterations++ < maxIterations) {
    const e = heap.pop()!;
    if (e.time > endMs) break;
    const now = e.time;
    const f = flows[e.flow]!;
    if (e.kind === "ack") {
      const s = f.sent[e.seq]!;
      // A packet declared lost whose ack comes after all: a spurious loss, as the session reports it.
      if (s.lost && !s.acked) {
        s.acked = true;
        f.cc.onSpuriousLoss?.(now, s.record);
      }
      if (!s.lost && !s.acked) {
        s.acked = true;
        f.inFlight -= f.bytes;
        const rtt = now - s.record.sentTime;
        f.latestRtt = rtt;
        f.srtt = Number.isNaN(f.srtt) ? rtt : 0.875 * f.srtt + 0.125 * rtt;
        if (e.seq > f.largestAcked) f.largestAcked = e.seq;
        ackPacket(f.cc, now, s.record, f.inFlight);
      }
      declareLosses(e.flow, now);
      askAckFrequency(e.flow, now);
    } else if (e.kind === "ackFrequency") {
      // The request reaches the receiver (it rides a data packet; the model never loses it).
      f.receiverThreshold = e.threshold;
      if (f.unacked.length >= e.threshold) sendAcks(e.flow, now);
      continue;
    } else if (e.kind === "ackFrequencyConfirmed") {
      f.askPending = false;
      f.cc.setPeerAckThreshold?.(e.threshold);
      askAckFrequency(e.flow, now);
    } else if (e.kind === "check") {
      declareLosses(e.flow, now);
    } else if (e.kind === "recv" || e.kind === "ackTimer") {
      const policy = link.receiverAck!;
      if (e.kind === "recv") {
        f.unacked.push(e.seq);
        if (f.unacked.length === 1) {
          f.ackTimerAt = now + policy.delayMs;
          heap.push({ time: f.ackTimerAt, kind: "ackTimer", flow: e.flow });
        }
      }
      const threshold = policy.honorsRequests === true ? f.receiverThreshold : policy.threshold;
      const due = e.kind === "recv" ? f.unacked.length >= threshold : now >= f.ackTimerAt;
      if (due) sendAcks(e.flow, now);
      continue;
    } else if (now >= f.pendingWake || e.time === f.spec.startMs) {
      f.pendingWake = Infinity;
    }
    if (now >= f.spec.startMs) trySend(e.flow, now);
  }
  if (iterations >= maxIterations) throw new Error("bottleneck model hit its iteration cap");

  return {
    flows,
    link,
    deliveredBytes(i, from, to) {
      let sum = 0;
      for (const [t, b] of flows[i]!.deliveries) if (t >= from && t < to) sum += b;
      return sum;
    },
    utilization(from, to) {
      let sum = 0;
      for (let i = 0; i < flows.length; i++) sum += this.deliveredBytes(i, from, to);
      return sum / (bytesPerMs * (to - from));
    },
    queueDelayPercentile(q, from, to) {
      const d: number[] = [];
      for (const f of flows) for (const [t, v] of f.queueDelays) if (t >= from && t < to) d.push(v);
      if (d.length === 0) return NaN;
      d.sort((a, b) => a - b);
      return d[Math.min(d.length - 1, Math.floor(q * d.length))]!;
    },
  };
}

export function jainFairness(xs: number[]): number {
  const s = xs.reduce((a, b) => a + b, 0);
  const s2 = xs.reduce((a, b) => a + b * b, 0);
  return (s * s) / (xs.length * s2);
}
