/**
 * "bbr-lite": ackwire's default congestion controller.
 *
 * What it is, honestly: a model-based, rate-based controller with pacing that follows the
 * structure of BBR version 1 (Cardwell et al., "BBR: Congestion-Based Congestion Control",
 * ACM Queue 2016, and draft-cardwell-iccrg-bbr-congestion-control) plus one loss reaction in the
 * spirit of BBRv2's in-flight bound. It is written from the published descriptions, simplified,
 * and is NOT a conformant implementation of either BBR version.
 *
 * Model:
 *   btlBw  = windowed max over the last 10 round trips of delivery-rate samples (Startup) or of
 *            each round's upper-quartile sample (after Startup; see commitRoundBandwidth);
 *   minRtt = windowed min RTT over 10 s;
 *   BDP    = btlBw * minRtt.
 *   pacing rate = pacingGain * btlBw, congestion window = cwndGain * BDP + 3 packets.
 *
 * States: Startup (gain 2/ln2 until the bandwidth stops growing by 25% for 3 rounds, or loss
 * crosses the threshold), Drain (gain ln2/2 until in-flight <= BDP), ProbeBW (gain cycle
 * 1.25, 0.75, 1 x6, one min-RTT per phase, start phase from the seed), ProbeRTT (window of 4
 * packets for 200 ms and one round when min RTT was not refreshed for 10 s).
 *
 * Delivery rate (draft-cheng-iccrg-delivery-rate-estimation): every packet records, at send, the
 * delivered-bytes counter, the time of the last delivery and the start of its send interval
 * (the SentPacket returned by onSent). At ack, the sample is
 *   (delivered now - delivered at send) / max(send interval, ack interval),
 * discarded if the interval is shorter than min RTT. Samples taken while application-limited
 * (see onAppLimited) only raise the estimate, never lower it.
 *
 * Loss reaction: loss counts only while a queue is visible (recent RTT > min RTT + margin, see
 * queueVisible()): random loss on Wi-Fi/mobile comes without one, overflow of a FIFO does not.
 * When the round's queue-coincident lost fraction exceeds `lossThreshold` (default 2%), at most
 * once per round and only for packets sent after the previous reaction (the recovery-epoch rule
 * of RFC 9002 7.3.2): in-flight is capped at 0.7 x the in-flight when the lost packet was sent,
 * floored at one BDP (a reaction drains queue, never the pipe), Startup ends, and a 1.25 probe
 * phase ends. The cap grows by 25% per round without excess loss and is removed once it no
 * longer binds.
 *
 * Pacing: token bucket (pacer.ts). The first 10 packets may leave at once; after that a sender
 * that was idle may burst max(4 packets, 1 ms at the pacing rate). Pacing never goes below
 * minWindow / minRtt, the rate the minimum window allows anyway, so light application-limited
 * traffic (e.g. 30 Hz x 200 B) is never delayed.
 */
import { fillSentPacket, type CongestionController, type SentPacket } from "./controller.js";
import { requireInRange } from "./errors.js";
import { Pacer } from "./pacer.js";
import { WindowedFilter } from "./windowed-filter.js";

export interface DefaultConfig {
  /** Datagram size the window is counted in (default 1200). */
  mtu?: number;
  /** Initial window and initial burst, in packets (default 10, as RFC 9002 7.2 suggests). */
  initialWindowPackets?: number;
  /** Minimum window in packets (default 4). */
  minWindowPackets?: number;
  /** RTT assumed for the initial pacing rate before any sample (default 100 ms). */
  initialRttMs?: number;
  /** Max-bandwidth filter window in round trips (default 10). */
  bwWindowRounds?: number;
  /** Min-RTT filter window (default 10 s). */
  minRttWindowMs?: number;
  /** Time spent at the minimum window in ProbeRTT (default 200 ms). */
  probeRttDurationMs?: number;
  /** Per-round lost fraction above which the controller reacts (default 0.02). */
  lossThreshold?: number;
  /**
   * Loss is a congestion signal only while a queue is visible: the recent RTT (min of the last
   * 4 samples) exceeds min RTT by max(queueMarginMinMs, queueMarginFraction x min RTT).
   * Defaults 5 ms and 0.25 (a 1.25 probe adds at most 0.25 min RTT of queue by itself).
   */
  queueMarginMinMs?: number;
  queueMarginFraction?: number;
  /** Minimum burst after idle, in packets (default 4). */
  pacingBurstPackets?: number;
  /**
   * Send quantum in ms of the pacing rate (default 1): the pacer releases up to this much per
   * wake-up, and the window has room for two quanta on top of the BDP. Real runtimes' timers
   * fire no sooner than 1 ms, so pacing packet by packet at sub-millisecond gaps turns into
   * idle time (pacer.ts). 0 = packet-by-packet pacing (for an exact virtual clock).
   */
  sendQuantumMs?: number;
  /**
   * The peer acks at once after this many ack-eliciting packets, else after its ack-delay
   * timer (ackwire's session: 8 packets, 5 ms). Outside ProbeRTT the window never goes below
   * this many packets + 2 (or minWindowPackets if larger): a smaller window waits for the peer's timer
   * every round, and the delivery rate it then measures (a few packets per 5 ms) keeps the
   * window that small (measured on loopback: estimate fell from 21 to 1 MB/s and stayed).
   * Default 8; 0 = no such floor.
   */
  peerAckThresholdPackets?: number;
  /** Seed choosing the first ProbeBW phase (flows sharing a link should differ). */
  seed?: number;
}

export type DefaultState = "startup" | "drain" | "probe-bw" | "probe-rtt";

const STARTUP_GAIN = 2 / Math.LN2;
const DRAIN_GAIN = Math.LN2 / 2;
const PROBE_BW_CWND_GAIN = 2;
const PROBE_GAINS = [1.25, 0.75, 1, 1, 1, 1, 1, 1] as const;
const FULL_BW_GROWTH = 1.25;
const FULL_BW_ROUNDS = 3;
const LOSS_BETA = 0.7;
const INFLIGHT_CAP_GROWTH = 1.25;
/** RTT samples whose minimum is the "recent RTT" of the queue test. */
const RECENT_RTT_SAMPLES = 4;
/** Delivery-rate samples kept per round for the round's quantile (a ring; later ones win). */
const ROUND_SAMPLES = 64;
/** Which quantile of a round's delivery-rate samples the bandwidth filter takes (see below). */
const ROUND_QUANTILE = 0.75;
/** Round sample counts up to this are sorted by insertion (see commitRoundBandwidth). */
const SMALL_SORT = 16;

/** Sorts a[0..n) ascending in place. */
function insertionSort(a: Float64Array, n: number): void {
  for (let i = 1; i < n; i++) {
    const v = a[i]!;
    let j = i - 1;
    while (j >= 0 && a[j]! > v) {
      a[j + 1] = a[j]!;
      j--;
    }
    a[j + 1] = v;
  }
}

export class DefaultController implements CongestionController {
  readonly name = "bbr-lite";
  readonly mtu: number;
  private readonly initialWindow: number;
  private readonly minWindow: number;
  private readonly initialRttMs: number;
  private readonly minRttWindowMs: number;
  private readonly probeRttDurationMs: number;
  private readonly lossThreshold: number;
  private readonly queueMarginMinMs: number;
  private readonly queueMarginFraction: number;
  private readonly burstBytes: number;
  private readonly sendQuantumMs: number;
  /** Window floor outside ProbeRTT (bytes): the peer's ack threshold + 2 packets. */
  private readonly ackClockWindow: number;
  private rngState: number;

  state: DefaultState = "startup";
  // delivery-rate estimation state (bytes, ms)
  private delivered = 0;
  private deliveredTime = 0;
  private firstSentTime = 0;
  private appLimitedUntil = 0;
  // rounds
  private roundCount = 0;
  private nextRoundDelivered = 0;
  private roundStart = false;
  // model
  private readonly btlBwFilter: WindowedFilter;
  /**
   * btlBwFilter.best(), kept beside the controller's other fields: it is read on every send and
   * ack (window, pacing) and per receive batch (bandwidth events), and the filter's candidates
   * array is a cold line of its own with many connections. It only changes at a filter update.
   */
  private btlBwValue = NaN;
  private minRtt = NaN;
  private minRttStamp = 0;
  private filledPipe = false;
  private fullBw = 0;
  private fullBwCount = 0;
  private pacingGain = STARTUP_GAIN;
  private cwndGain = STARTUP_GAIN;
  private cwnd: number;
  private pacingRate: number; // bytes per ms
  // probe-bw
  private cycleIndex = 0;
  private cycleStamp = 0;
  // probe-rtt
  private probeRttDoneStamp = NaN;
  private probeRttRoundDone = false;
  private priorCwnd = 0;
  // loss
  private lostInRound = 0;
  private deliveredInRound = 0;
  private inflightCap = Infinity;
  private lastLossReactionTime = -Infinity;
  private lastLossReactionRound = -1;
  // queue test: the last RTT samples (ring)
  private readonly recentRtts = new Float64Array(RECENT_RTT_SAMPLES).fill(NaN);
  private recentRttIndex = 0;
  // delivery-rate samples of the current round (ring), for the round's upper quartile
  private readonly roundSamples = new Float64Array(ROUND_SAMPLES);
  private roundSampleCount = 0;
  private roundAppLimitedMax = 0;
  /** Counters for tests and traces. */
  readonly lossStats = { congestive: 0, ignored: 0, reactions: 0, spurious: 0, undone: 0 };
  /** The packet whose loss caused the last reaction, and the cap before it (for undo). */
  private reactionPacket: SentPacket | undefined;
  private capBeforeReaction = Infinity;

  private readonly pacer: Pacer;

  constructor(config: DefaultConfig = {}) {
    this.mtu = requireInRange("mtu", config.mtu ?? 1200, 64, 65_535);
    const initialPackets = requireInRange("initialWindowPackets", config.initialWindowPackets ?? 10, 1, 1000);
    const minPackets = requireInRange("minWindowPackets", config.minWindowPackets ?? 4, 1, 1000);
    this.initialWindow = initialPackets * this.mtu;
    this.minWindow = minPackets * this.mtu;
    this.initialRttMs = requireInRange("initialRttMs", config.initialRttMs ?? 100, 0.01, 60_000);
    const bwRounds = requireInRange("bwWindowRounds", config.bwWindowRounds ?? 10, 1, 1000);
    this.minRttWindowMs = requireInRange("minRttWindowMs", config.minRttWindowMs ?? 10_000, 1, 3_600_000);
    this.probeRttDurationMs = requireInRange("probeRttDurationMs", config.probeRttDurationMs ?? 200, 0, 60_000);
    this.lossThreshold = requireInRange("lossThreshold", config.lossThreshold ?? 0.02, 0, 1);
    this.queueMarginMinMs = requireInRange("queueMarginMinMs", config.queueMarginMinMs ?? 5, 0, 60_000);
    this.queueMarginFraction = requireInRange("queueMarginFraction", config.queueMarginFraction ?? 0.25, 0, 100);
    this.burstBytes = requireInRange("pacingBurstPackets", config.pacingBurstPackets ?? 4, 1, 1000) * this.mtu;
    this.sendQuantumMs = requireInRange("sendQuantumMs", config.sendQuantumMs ?? 1, 0, 100);
    const ackThreshold = requireInRange("peerAckThresholdPackets", config.peerAckThresholdPackets ?? 8, 0, 1000);
    // Threshold + 2: the ack for the threshold-th packet comes back while 2 more are in flight,
    // and the next threshold packets can leave at once (= the initial window, 10, by default).
    this.ackClockWindow = ackThreshold > 0 ? Math.max(this.minWindow, (Math.ceil(ackThreshold) + 2) * this.mtu) : this.minWindow;
    this.rngState = (Math.floor(requireInRange("seed", config.seed ?? 1, 0, 2 ** 32 - 1)) >>> 0) || 1;
    this.btlBwFilter = new WindowedFilter("max", bwRounds);
    this.cwnd = this.initialWindow;
    this.pacingRate = (STARTUP_GAIN * this.initialWindow) / this.initialRttMs;
    this.pacer = new Pacer(this.initialWindow, this.pacingRate, this.burstBytes, this.pacingRate * this.sendQuantumMs);
  }

  // ---- readouts ------------------------------------------------------------------------------

  /** Windowed max delivery rate in bytes per ms (NaN before the first sample). */
  btlBw(): number {
    return this.btlBwValue;
  }

  private updateBtlBw(rate: number): void {
    this.btlBwFilter.update(rate, this.roundCount);
    this.btlBwValue = this.btlBwFilter.best();
  }

  minRttMs(): number {
    return this.minRtt;
  }

  /** Bandwidth-delay product in bytes, or the initial window while unknown. */
  bdp(): number {
    const bw = this.btlBw();
    if (!(bw > 0) || !(this.minRtt >= 0)) return this.initialWindow;
    return bw * this.minRtt;
  }

  /** Min of the last few RTT samples (NaN before any): the queue test's view of "now". */
  recentRttMs(): number {
    let m = NaN;
    for (const r of this.recentRtts) if (!(r >= m)) m = Number.isNaN(r) ? m : r;
    return m;
  }

  /**
   * True if the path shows a queue: the recent RTT is above min RTT by the margin. Before any
   * RTT sample there is no queue evidence, and the only data in flight is the (paced) initial
   * window, so such a loss is not taken as congestion either: reacting to it would end Startup
   * at 10 packets on any lossy path (the packet-threshold detector needs acks, so in practice
   * this only concerns timeouts).
   */
  queueVisible(): boolean {
    const recent = this.recentRttMs();
    if (Number.isNaN(recent) || Number.isNaN(this.minRtt)) return false;
    const margin = Math.max(this.queueMarginMinMs, this.queueMarginFraction * this.minRtt);
    return recent > this.minRtt + margin;
  }

  windowBytes(): number {
    let w = Math.max(this.cwnd, this.ackClockWindow);
    if (Number.isFinite(this.inflightCap)) w = Math.min(w, Math.max(this.inflightCap, this.ackClockWindow));
    if (this.state === "probe-rtt") w = Math.min(w, this.minWindow);
    return w;
  }

  pacingRateBytesPerSec(): number {
    return this.pacingRate * 1000;
  }

  bandwidthEstimateBps(): number {
    const bw = this.btlBw();
    return bw > 0 ? bw * 8000 : 0;
  }

  // ---- interface -----------------------------------------------------------------------------

  canSend(inFlightBytes: number, bytes: number): boolean {
    return inFlightBytes === 0 || inFlightBytes + bytes <= this.windowBytes();
  }

  nextSendTime(now: number): number {
    return this.pacer.nextSendTime(now);
  }

  onAppLimited(_now: number, inFlightBytes: number): void {
    // Samples are app-limited until everything in flight now has been delivered.
    this.appLimitedUntil = Math.max(this.delivered + inFlightBytes, 1);
  }

  onSent(now: number, bytes: number, inFlightBytes: number, out?: SentPacket): SentPacket {
    if (inFlightBytes === 0) {
      // Start of a new send interval after idle: measure from here.
      this.firstSentTime = now;
      this.deliveredTime = now;
    }
    const packet = fillSentPacket(
      out,
      now,
      bytes,
      inFlightBytes + bytes,
      this.delivered,
      this.deliveredTime,
      this.firstSentTime,
      this.appLimitedUntil !== 0,
    );
    this.pacer.onSend(now, bytes);
    return packet;
  }

  onAck(now: number, p: SentPacket, inFlightBytes: number, rttSampleMs?: number): void {
    const rtt = rttSampleMs ?? now - p.sentTime;
    this.delivered += p.bytes;
    this.deliveredTime = now;
    this.deliveredInRound += p.bytes;
    if (this.appLimitedUntil !== 0 && this.delivered > this.appLimitedUntil) this.appLimitedUntil = 0;

    // Min RTT (10 s window). An expired estimate is replaced by the fresh sample, which also
    // triggers ProbeRTT below.
    const minRttExpired = !Number.isNaN(this.minRtt) && now - this.minRttStamp > this.minRttWindowMs;
    if (Number.isFinite(rtt) && rtt >= 0 && (Number.isNaN(this.minRtt) || rtt <= this.minRtt || minRttExpired)) {
      this.minRtt = rtt;
      this.minRttStamp = now;
    }
    if (Number.isFinite(rtt) && rtt >= 0) {
      this.recentRtts[this.recentRttIndex] = rtt;
      this.recentRttIndex = (this.recentRttIndex + 1) % RECENT_RTT_SAMPLES;
    }

    // Round trips: a round ends when a packet sent after the previous round's end is acked.
    this.roundStart = false;
    if (p.delivered >= this.nextRoundDelivered) {
      this.endRound();
      this.nextRoundDelivered = this.delivered;
      this.roundCount++;
      this.roundStart = true;
    }

    // Delivery-rate sample.
    this.firstSentTime = Math.max(this.firstSentTime, p.sentTime);
    const sendElapsed = p.sentTime - p.firstSentTime;
    const ackElapsed = now - p.deliveredTime;
    const interval = Math.max(sendElapsed, ackElapsed);
    const deliveredDelta = this.delivered - p.delivered;
    if (interval > 0 && !(interval < this.minRtt) && deliveredDelta > 0) {
      const rate = deliveredDelta / interval;
      if (!this.filledPipe) {
        // Startup: every sample, at once (the ramp must not wait for round ends; an estimate a
        // few percent high only makes startup overshoot a little more, which Drain removes).
        const best = this.btlBw();
        if (!p.appLimited || !(rate < best)) this.updateBtlBw(rate);
      } else if (p.appLimited) {
        this.roundAppLimitedMax = Math.max(this.roundAppLimitedMax, rate);
      } else {
        this.roundSamples[this.roundSampleCount % ROUND_SAMPLES] = rate;
        this.roundSampleCount++;
      }
    }

    const priorInFlight = inFlightBytes + p.bytes;
    this.updateState(now, p, priorInFlight, inFlightBytes, minRttExpired);
    this.updateWindow(p.bytes);
    this.updatePacingRate();
  }

  onLoss(now: number, p: SentPacket, _inFlightBytes: number): void {
    // Loss without a queue is not congestion: a full FIFO shows as RTT above min RTT before it
    // drops, random (Wi-Fi, mobile) loss does not. Such loss changes nothing here; the delivery
    // rate (acked bytes only) already accounts for the capacity it takes.
    if (!this.queueVisible()) {
      this.lossStats.ignored++;
      return;
    }
    this.lossStats.congestive++;
    this.lostInRound += p.bytes;
    const total = this.lostInRound + this.deliveredInRound;
    const tooMuchLoss = this.lostInRound > this.lossThreshold * total;
    // Recovery epoch (RFC 9002 7.3.2): losses of packets sent before the last reaction were
    // caused by the situation already reacted to.
    if (!tooMuchLoss || p.sentTime <= this.lastLossReactionTime || this.lastLossReactionRound === this.roundCount) {
      return;
    }
    this.lastLossReactionTime = now;
    this.lastLossReactionRound = this.roundCount;
    // Bounded reduction: never below one BDP, so a reaction removes queue, not throughput.
    this.lossStats.reactions++;
    this.reactionPacket = p;
    this.capBeforeReaction = this.inflightCap;
    const floor = Math.max(this.minWindow, this.bdp());
    this.inflightCap = Math.max(floor, LOSS_BETA * p.inFlightAtSend);
    if (this.state === "startup") {
      this.filledPipe = true;
      this.enterDrain();
    } else if (this.state === "probe-bw" && this.pacingGain > 1) {
      this.advanceCycle(now);
    }
    this.updatePacingRate();
  }

  /**
   * A loss reported earlier was spurious (its ack came late). The loss no longer counts in the
   * round's lost bytes, and if it was the loss that triggered the last reaction, the in-flight
   * cap goes back to what it was (a Startup exit is not undone: the model state it needs is gone).
   */
  onSpuriousLoss(_now: number, p: SentPacket): void {
    this.lossStats.spurious++;
    this.lostInRound = Math.max(0, this.lostInRound - p.bytes);
    if (p === this.reactionPacket) {
      this.lossStats.undone++;
      this.inflightCap = this.capBeforeReaction;
      this.reactionPacket = undefined;
      this.updatePacingRate();
    }
  }

  // ---- internals -----------------------------------------------------------------------------

  /**
   * After Startup, the bandwidth filter takes one value per round: the UPPER QUARTILE of the
   * round's delivery-rate samples, not every sample. Each sample's interval (about one RTT) is
   * shortened or stretched by path jitter and ack bunching at both of its ends; a max over every
   * sample of 10 rounds picks the most compressed one (measured: +3-8 % with 2 ms jitter each
   * way, enough to keep a standing queue). Capping a sample by its send rate (done above, as the
   * delivery-rate draft does) cannot remove this: in steady state the send rate IS the inflated
   * estimate. A quantile ignores the most compressed quarter of samples. Why not the median: a
   * round's samples are also pulled DOWN by things that are not the bottleneck (acks batched by
   * the receiver's ack delay on a 1 ms path, a probe that covers only part of a round), and the
   * median followed them: on 100 Mbit/s, 1 ms RTT it spiralled down to 5 Mbit/s (0.67: 77 %,
   * 0.75: 93 %, 0.9: 98 % utilization, but 0.9 keeps 38 ms of jitter queue). App-limited samples
   * still only raise the estimate.
   */
  private commitRoundBandwidth(): void {
    const n = Math.min(this.roundSampleCount, ROUND_SAMPLES);
    let value = NaN;
    if (n > 0) {
      const samples = this.roundSamples;
      // A light flow ends a round on nearly every ack with one or two samples: sort those in
      // place (same order as the typed-array sort: the rates are finite and positive) instead
      // of a subarray view and a sort call per ack.
      if (n <= SMALL_SORT) insertionSort(samples, n);
      else samples.subarray(0, n).sort();
      value = samples[Math.min(n - 1, Math.floor(ROUND_QUANTILE * n))]!;
    }
    const best = this.btlBw();
    if (this.roundAppLimitedMax > best && !(value >= this.roundAppLimitedMax)) value = this.roundAppLimitedMax;
    if (value > 0) this.updateBtlBw(value);
    this.roundSampleCount = 0;
    this.roundAppLimitedMax = 0;
  }

  private endRound(): void {
    if (this.filledPipe) this.commitRoundBandwidth();
    const total = this.lostInRound + this.deliveredInRound;
    if (total > 0 && this.lostInRound <= this.lossThreshold * total && Number.isFinite(this.inflightCap)) {
      this.inflightCap *= INFLIGHT_CAP_GROWTH;
      if (this.inflightCap > PROBE_BW_CWND_GAIN * this.bdp() + 3 * this.mtu) this.inflightCap = Infinity;
    }
    this.lostInRound = 0;
    this.deliveredInRound = 0;
  }

  private random(): number {
    // xorshift32: deterministic, seeded.
    let x = this.rngState;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.rngState = x >>> 0 || 1;
    return this.rngState / 2 ** 32;
  }

  private enterDrain(): void {
    this.state = "drain";
    this.pacingGain = DRAIN_GAIN;
    this.cwndGain = STARTUP_GAIN;
  }

  private enterProbeBw(now: number): void {
    this.state = "probe-bw";
    this.cwndGain = PROBE_BW_CWND_GAIN;
    // Start in any phase but the 0.75 one (index 1), chosen from the seed.
    const r = Math.floor(this.random() * 7);
    this.cycleIndex = r === 0 ? 0 : r + 1;
    this.cycleStamp = now;
    this.pacingGain = PROBE_GAINS[this.cycleIndex]!;
  }

  private advanceCycle(now: number): void {
    this.cycleIndex = (this.cycleIndex + 1) % PROBE_GAINS.length;
    this.cycleStamp = now;
    this.pacingGain = PROBE_GAINS[this.cycleIndex]!;
  }

  private updateState(
    now: number,
    p: SentPacket,
    priorInFlight: number,
    inFlight: number,
    minRttExpired: boolean,
  ): void {
    // Full-pipe detection (startup exit) once per round on non-app-limited rounds.
    if (!this.filledPipe && this.roundStart && !p.appLimited) {
      const bw = this.btlBw();
      if (bw >= this.fullBw * FULL_BW_GROWTH) {
        this.fullBw = bw;
        this.fullBwCount = 0;
      } else if (++this.fullBwCount >= FULL_BW_ROUNDS) {
        this.filledPipe = true;
      }
    }
    if (this.state === "startup" && this.filledPipe) this.enterDrain();
    if (this.state === "drain" && inFlight <= this.bdp()) this.enterProbeBw(now);

    if (this.state === "probe-bw") {
      const fullLength = now - this.cycleStamp > this.minRtt;
      const g = this.pacingGain;
      const bdp = this.bdp();
      const next =
        g > 1
          ? fullLength && (this.lostInRound > 0 || priorInFlight >= g * bdp)
          : g < 1
            ? // Unlike BBRv1 (which also ends this phase after one min RTT), stay until the
              // queue is drained (in-flight <= BDP), bounded by 4 min RTTs: a standing queue
              // left by a burst (e.g. after ProbeRTT) is otherwise never removed at gain 1.
              priorInFlight <= bdp || now - this.cycleStamp > 4 * this.minRtt
            : fullLength;
      if (next) this.advanceCycle(now);
    }

    // ProbeRTT: min RTT not refreshed for a whole window.
    if (this.state !== "probe-rtt" && minRttExpired) {
      this.state = "probe-rtt";
      this.pacingGain = 1;
      this.priorCwnd = Math.max(this.cwnd, this.priorCwnd);
      this.probeRttDoneStamp = NaN;
    }
    if (this.state === "probe-rtt") {
      if (Number.isNaN(this.probeRttDoneStamp)) {
        if (inFlight <= this.minWindow) {
          this.probeRttDoneStamp = now + this.probeRttDurationMs;
          this.probeRttRoundDone = false;
          this.nextRoundDelivered = this.delivered;
        }
      } else {
        if (this.roundStart) this.probeRttRoundDone = true;
        if (this.probeRttRoundDone && now >= this.probeRttDoneStamp) {
          this.minRttStamp = now;
          this.cwnd = Math.max(this.cwnd, this.priorCwnd);
          this.priorCwnd = 0;
          if (this.filledPipe) this.enterProbeBw(now);
          else {
            this.state = "startup";
            this.pacingGain = STARTUP_GAIN;
            this.cwndGain = STARTUP_GAIN;
          }
        }
      }
    }
  }

  private updateWindow(acked: number): void {
    const bw = this.btlBw();
    // BDP x gain, plus 3 packets and two send quanta: the pacer releases a quantum at a time
    // (sendQuantumMs of the rate), which is in flight on top of the BDP (the same budget as
    // Linux BBR's "quantization budget" for TSO bursts). Without it, on a path whose RTT is
    // below the timer granularity (loopback: ~0.15 ms vs 1 ms) the window, not the rate, would
    // stop every release.
    const quanta = 2 * this.sendQuantumMs * (bw > 0 ? bw : 0);
    const target = bw > 0 && this.minRtt >= 0 ? this.cwndGain * this.bdp() + 3 * this.mtu + quanta : this.initialWindow;
    if (this.filledPipe) this.cwnd = Math.min(this.cwnd + acked, target);
    else if (this.cwnd < target || this.delivered < this.initialWindow) this.cwnd += acked;
    this.cwnd = Math.max(this.cwnd, this.minWindow);
  }

  private updatePacingRate(): void {
    const bw = this.btlBw();
    let rate: number;
    if (bw > 0) {
      rate = this.pacingGain * bw;
      // In startup the rate only rises (a low early sample must not slow the ramp).
      if (!this.filledPipe) rate = Math.max(rate, this.pacingRate);
    } else {
      rate = this.pacingRate;
    }
    // Floor: what the minimum window would allow per min RTT anyway.
    const rttForFloor = this.minRtt > 0 ? this.minRtt : this.initialRttMs;
    rate = Math.max(rate, this.minWindow / Math.max(rttForFloor, 0.01));
    this.pacingRate = rate;
    this.pacer.rate = rate;
    // Quantum: debt the pacer allows before a send waits (pacer.ts). Capacity: burst after idle,
    // at least 1 ms of the rate and two quanta, so a wake-up that oversleeps the ~1 quantum it
    // asked for (a 1 ms timer rounded up to 2 ms, plus the runtime's lateness) loses no tokens.
    this.pacer.quantum = rate * this.sendQuantumMs;
    this.pacer.capacity = Math.max(this.burstBytes, rate * 1, 2 * this.pacer.quantum);
  }
}
