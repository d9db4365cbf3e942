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
 * crosses the threshold in a round with at least 6 loss events), Drain (gain ln2/2 until
 * in-flight <= BDP), ProbeBW (gain cycle 1.25, 0.75, 1 x6, one min-RTT per phase, start phase
 * from the seed; the 1.25 phase lasts longer while sparse receive-time reports time the samples,
 * see probeExtensionMs), ProbeRTT (window of 4 packets for 200 ms and one round when min RTT was
 * not refreshed for 10 s).
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
 * longer binds. In Startup the reaction also needs STARTUP_FULL_LOSS_EVENTS loss events in
 * the round (BBRv2's rule), or STARTUP_FULL_LOSS_PACKETS lost packets in 2 events: one random
 * loss is more than 2% of an early round, and a stall of the process can pass for a queue (see
 * onLoss).
 *
 * Pacing: token bucket (pacer.ts). The first 10 packets may leave at once; after that a sender
 * that was idle may burst max(4 packets, 1 ms at the pacing rate). Pacing never goes below
 * minWindow / minRtt, the rate the minimum window allows anyway, so light application-limited
 * traffic (e.g. 30 Hz x 200 B) and its bursts are never delayed; except while the network
 * limits the flow (networkLimited(): the pipe filled, and the send queue not empty for 4 round
 * trips), when btlBw is a measured capacity and pacing follows it.
 *
 * Ack frequency: the window never goes below the peer's ack threshold + 2 packets (the ack clock,
 * see peerAckThresholdPackets). Where the BDP is small the controller asks the peer to ack more
 * often (peerAckThreshold(): twice per min RTT), and the floor follows the threshold the peer
 * has confirmed (setPeerAckThreshold).
 */
import { fillSentPacket, type AckSummary, type CongestionController, type SentPacket } from "./controller.js";
import { doubleArray, inlineInteger } from "./doubles.js";
import { CONTROLLER_BASE, CONTROLLER_SLOTS } from "./state-layout.js";
import { requireInRange } from "./errors.js";
import {
  PACER_CAPACITY,
  PACER_QUANTUM,
  PACER_RATE,
  PACER_SLOTS,
  pacerInit,
  pacerNextSendTime,
  pacerOnSend,
} from "./pacer.js";
import { RoundMax } from "./round-max.js";

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
   * window that small (on loopback the estimate would collapse and stay collapsed).
   * This is the peer's threshold when it follows no request, and the most this controller asks
   * for (peerAckThreshold()). Default 8; 0 = no such floor and no requests.
   */
  peerAckThresholdPackets?: number;
  /** Seed choosing the first ProbeBW phase (flows sharing a link should differ). */
  seed?: number;
}

export type DefaultState = "startup" | "drain" | "probe-bw" | "probe-rtt";

const STARTUP_GAIN = 2 / Math.LN2;
const DRAIN_GAIN = Math.LN2 / 2;
const PROBE_BW_CWND_GAIN = 2;
/** Receive-time reports time the samples while one came within this many min RTTs. */
const REPORTS_FRESH_RTTS = 4;
/**
 * While reports time the samples, ProbeBW's 1.25 up-probe lasts min RTT plus the reports' mean
 * gap, the gap counted up to this many min RTTs (probeExtensionMs()). A report-timed sample spans
 * a round trip plus up to two gaps between reports; a one-min-RTT probe and the 0.75 phase after
 * it cancel out in such a span, so the probe's +25 % never reached the filter.
 */
const PROBE_REPORT_GAP_MAX_RTTS = 4;
/**
 * The up-probe is lengthened only if the previous one (and the 0.75 phase after it) saw the
 * recent RTT rise less than this fraction of min RTT (at least PROBE_QUEUE_MIN_MS) above min RTT:
 * on a full path a one-min-RTT 1.25 probe adds 0.25 min RTT of queue by itself, so half of that
 * means the probe found spare capacity. A longer probe on a full path only adds queue.
 */
const PROBE_QUEUE_FRACTION = 0.125;
const PROBE_QUEUE_MIN_MS = 1;
/**
 * Nor after a probe that lost more than this share of the packets sent in it and the 0.75 phase
 * after it (losses counted or ignored alike): a buffer shallower than the gate's queue threshold
 * overflows before it shows a queue, and its losses are ignored as random (under the queue
 * test's margin). A 1.25 probe on such a full path loses ~20 % of what it sends; random loss
 * is far below 5 %. Without it every probe there was lengthened (10 Mbit/s, 4-packet buffer:
 * 35-60 % more drops; test/congestion-sim/shallow-buffer.test.ts).
 */
const PROBE_LOSS_FRACTION = 0.05;
const PROBE_GAINS = [1.25, 0.75, 1, 1, 1, 1, 1, 1] as const;
const FULL_BW_GROWTH = 1.25;
/** How long the reported estimate keeps what a network-limited spell measured (bandwidthEstimateBps). */
export const PATH_BW_KEEP_MS = 30_000;
const FULL_BW_ROUNDS = 3;
/**
 * Loss events in one round that Startup needs, on top of a lost fraction above lossThreshold,
 * to end on loss (BBRv2's rule; Chromium's QUIC BBRv2 counts "loss marking events" the same
 * way, 8 by default). An event is one detection: the packets declared lost at one `now` (one
 * receive batch's, or one loss timer's). See onLoss for why one loss must not end Startup. 6
 * rather than 8: an overflowing buffer reaches either soon on a long path, but each later
 * event costs more drops at the exit (simulator, 20 Mbit/s, 50 ms, 50-packet queue: the old
 * first-loss exit at 347 ms with 71 drops, 6 events at 363 ms with 108, 8 at 367 ms with 123).
 */
const STARTUP_FULL_LOSS_EVENTS = 6;
/**
 * Or this many lost packets in at least 2 events. A short path's round holds few events (the
 * peer acks every 8 packets or 5 ms, and losses are declared once per receive batch): at 10 ms
 * RTT an overflow never reached 6 in a round, and Startup ran on to its plateau exit with three
 * times the drops (20 Mbit/s, 20-packet queue: 109 instead of 35). An overflow loses dozens of
 * packets per event there; the stalls the event rule is for lost 1-9 per round.
 */
const STARTUP_FULL_LOSS_PACKETS = 12;
const LOSS_BETA = 0.7;
const INFLIGHT_CAP_GROWTH = 1.25;
/** Rounds without an empty send queue after which the network limits the flow (networkLimited()). */
const NETWORK_LIMITED_ROUNDS = 4;
/** The peer is asked to ack at least this often per min RTT (peerAckThreshold()). */
const ACKS_PER_ROUND = 2;
/**
 * A path is slow when one full-size datagram takes longer than this to cross it at btlBw (under
 * ~480 kbit/s at 1200 B). There the window floors counted in full-size packets are seconds of
 * queue, and a full datagram is itself a visible delay (slowPath()).
 */
const SLOW_PATH_SERIALIZATION_MS = 20;
/**
 * A slow path's model holds this long after the last queue it saw (computeSlowPath()): the
 * path stays as slow as it was, and with the model's small floors a light flow that overloads
 * it keeps no queue to see; let go sooner, the floors come back and rebuild the queue.
 */
const SLOW_PATH_HOLD_MS = PATH_BW_KEEP_MS;
/**
 * On a slow path the window is cwndGain x BDP plus this many of the flow's packets, not 3 of
 * the mtu: each is 70-150 ms of queue at 64 kbit/s (with 3, a bandwidth estimate 8 % high under
 * 2 ms of jitter kept ~200 ms of queue), and the peer acks every packet there.
 */
const SLOW_PATH_EXTRA_PACKETS = 1;
/**
 * A slow path's queue counts once it showed at every round start for this long, each after a
 * round in which the flow's own packets were acked slower than it sent them (slowQueue()): a
 * light flow's RTT on a fast lossy path rises now and then (an ack lost, the next one a packet
 * later), and a light flow beside another's queue (a client's inputs during a download) sees a
 * queue it does not build; neither must lose its floors. A competitor's Startup grows the queue for a
 * second or so; a flow alone on a slow link keeps its queue until the window stops it.
 */
const SLOW_PATH_QUEUE_MS = 2000;
/** A round in which a packet's ack interval exceeded its send interval by this factor filled a
 *  queue itself (computeSlowPath()). */
const OVERLOAD_RATIO = 1.25;
/** On a slow path the minimum window, and ProbeRTT's, is this many of the flow's packets. */
const SLOW_PATH_MIN_PACKETS = 2;
/** RTT samples whose minimum is the "recent RTT" of the queue test. */
const RECENT_RTT_SAMPLES = 4;
/** Delivery-rate samples kept per round for the round's quantile (a ring; later ones win). */
const ROUND_SAMPLES = 64;
/** Which quantile of a round's delivery-rate samples the bandwidth filter takes (see below). */
const ROUND_QUANTILE = 0.75;
/** Round sample counts up to this are sorted by insertion (see commitRoundBandwidth). */
const SMALL_SORT = 16;

/** Round samples kept in the state array itself; more go to an array allocated when needed. */
const INLINE_ROUND_SAMPLES = 4;
/** Sort buffer for a round's samples, shared by every controller (commitRoundBandwidth never
 *  re-enters). */
const ROUND_SCRATCH = new Float64Array(ROUND_SAMPLES);

/**
 * Slots of DefaultController.s, the controller's numeric state (doubles.ts): with 1,000
 * connections each ack and send finds it cold in cache, and as one packed array it is a few
 * contiguous lines instead of the object plus a heap box per double field, a pacer object, a
 * filter object and two typed arrays. The slots every send and ack touch come first.
 */
const enum S {
  // delivery-rate estimation (bytes, ms)
  Delivered = 0,
  DeliveredTime,
  FirstSentTime,
  AppLimitedUntil,
  /** windowBytes(), refreshed after every change of its inputs (refreshWindow). */
  Window,
  /** Pacer (pacer.ts): tokens, last refill, rate (= the pacing rate, bytes per ms), capacity, quantum. */
  Pacer,
  /**
   * btlBw: the max of the bandwidth samples over the last bwWindowRounds rounds (the
   * controller's RoundMax keeps the rounds; this is its value, read per send, ack and receive
   * batch).
   */
  BtlBw = Pacer + 5, // PACER_SLOTS (checked below)
  MinRtt,
  MinRttStamp,
  // rounds
  NextRoundDelivered,
  RoundCount,
  DeliveredInRound,
  LostInRound,
  // model
  Cwnd,
  PacingGain,
  CwndGain,
  CycleStamp,
  InflightCap,
  // queue test: the last RTT samples (ring)
  RecentRtt,
  RecentRttIndex = RecentRtt + RECENT_RTT_SAMPLES,
  // delivery-rate samples of the current round (ring; the first ones here, the rest in
  // roundSamplesMore), for the round's upper quartile
  RoundSampleCount,
  RoundAppLimitedMax,
  RoundSample,
  // rarely used: state changes, losses
  FullBw = RoundSample + INLINE_ROUND_SAMPLES,
  FullBwCount,
  CycleIndex,
  ProbeRttDoneStamp,
  PriorCwnd,
  LastLossReactionTime,
  LastLossReactionRound,
  CapBeforeReaction,
  /** Mean size of the packets sent (bytes; moving average, 1/8): the unit of a slow path's
   *  window floors (slowPath()). */
  PacketSize,
  /** When a queue was last seen at a round start on a slow path (ms; computeSlowPath()). */
  QueueSeenAt,
  /** Since when every round start showed a queue the flow built itself on a slow path (ms,
   *  NaN: the last did not), and the time of the last round start (slowQueue()). */
  QueueSince,
  LastRoundAt,
  Count,
}
const PACER = S.Pacer;
// The literal sizes above must match the modules' (a type error here otherwise).
const PACER_SIZE_MATCHES: 5 = PACER_SLOTS;
void PACER_SIZE_MATCHES;
// The slots start at 0 and fit the region state-layout.ts reserves (a type error otherwise).
const BASE_MATCHES: 0 = CONTROLLER_BASE;
void BASE_MATCHES;
if ((S.Count as number) > CONTROLLER_SLOTS) throw new Error("state-layout.ts: CONTROLLER_SLOTS too small");

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
  // Fields in the order of use: the state array, the flags and the constants read on every ack
  // and send come first, so they share the object's first cache lines.
  /** The numeric state (slots S.*): in the connection's state array (state-layout.ts) when
   *  one is given, else an array of its own. */
  private readonly s: number[];
  state: DefaultState = "startup";
  private filledPipe = false;
  /** Round in which the send queue last ran empty (onSendQueueEmpty); see networkLimited(). */
  private lastQueueEmptyRound = -Infinity;
  /** networkLimited() when the pacing rate was last computed: pacing follows btlBw alone and
   *  the peer is asked for an ack threshold from the BDP. */
  private networkLimitedModel = false;
  /** btlBw at the last round start while networkLimited() (NaN: never), and when (the ack
   *  time, ms); see bandwidthEstimateBps(). */
  private pathBw = NaN;
  private pathBwAt = 0;
  /**
   * Receive-time reports (onReceiveTime). The newest packet acked so far in the datagram being
   * read, as onAcks saw it (its record is recycled before the report that follows the acks).
   */
  private readonly acked = { valid: false, deliveredAtReport: 0, deliveredRecvTime: NaN, sentTime: 0, firstSentTime: 0, appLimited: false, deliveredNow: 0 };
  /** The peer's receive time (its clock, ms) of the newest delivery reported (NaN: none yet),
   *  and the delivered-bytes counter when that report came. */
  private deliveredRecvTime = NaN;
  private deliveredAtReport = 0;
  /** min RTT was last set by a packet under half the MTU (minRttFull may raise it). */
  private minRttFromSmall = false;
  /** Queue-coincident losses in round `lossRound`: events, packets, and the `now` of the last
   *  event (onLoss; fields, not state slots: read only at a loss). */
  private lossRound = -1;
  private lossEvents = 0;
  private lossPackets = 0;
  private lossEventAt = NaN;
  /**
   * Loss events are numbered for the connection's life (the next number; a lost packet's record
   * keeps its event's number in `lossEvent`); `lossRoundFirstEvent` is the first of round
   * `lossRound`, and `lossEventPackets[e - lossRoundFirstEvent]` how many of event e's packets
   * still count (onSpuriousLoss takes them back). Allocated at the first counted loss.
   */
  private lossEventNumber = 0;
  private lossRoundFirstEvent = 0;
  private lossEventPackets: number[] | undefined;
  /** When a report last timed a sample: while recent, acks alone time none (REPORTS_FRESH_RTTS). */
  private receiveTimeAt = -Infinity;
  /** Mean gap between the reports used (ms, the peer's clock; moving average, 1/8; NaN: none
   *  yet): how long the up-probe must last for reports to time it (probeExtensionMs()). */
  private reportGapMs = NaN;
  /**
   * The most the recent RTT rose above min RTT (ms) since the last up-probe began, through it and
   * the 0.75 phase after it (Infinity: no such probe in this ProbeBW stay), and whether the
   * current up-probe may be lengthened (decided from the previous one's; see
   * PROBE_QUEUE_FRACTION).
   */
  private probeQueueMs = Infinity;
  private probeExtends = false;
  /** Packets sent in the last up-probe and its 0.75 phase, and those of them declared lost; the
   *  window is by send time, [probeFrom, probeTo) (PROBE_LOSS_FRACTION). */
  private probeSent = 0;
  private probeLost = 0;
  private probeFrom = Infinity;
  private probeTo = Infinity;
  /**
   * Min RTT of full-size packets (at least half the MTU) and when it was taken: while valid,
   * the floor of min RTT. A small packet's round trip (a clock-sync request, a game tick's
   * message) leaves out two serializations of a full one: 0.8 ms of a 3.4 ms round trip at
   * 20 Mbit/s, and a window and BDP that much too small for a bulk flow.
   */
  private minRttFull = NaN;
  private minRttFullStamp = -Infinity;
  /**
   * An input of the pacing rate (btlBw, min RTT, pacing gain, filledPipe) changed since the
   * last updatePacingRate. The rate is a function of those alone (it only ever rises in
   * Startup, so recomputing it with the same inputs gives the same value), so most acks, which
   * change none of them, skip it.
   */
  private pacingInputsChanged = true;
  private readonly minRttWindowMs: number;
  /** Window floor outside ProbeRTT (bytes): the peer's ack threshold + 2 packets. */
  private ackClockWindow: number;
  /** The peer's ack threshold when it follows no request (config peerAckThresholdPackets). */
  private readonly defaultPeerThreshold: number;
  /** The threshold the peer applies (setPeerAckThreshold): the ack-clock floor's packets. */
  private peerThreshold: number;
  /** Minimum window (bytes): minWindowPackets x mtu, or on a slow path SLOW_PATH_MIN_PACKETS of
   *  the flow's own packets (slowPath()). */
  private minWindow: number;
  private readonly configMinWindow: number;
  /** The packet the window floors are counted in (bytes): the mtu, or on a slow path the mean
   *  size of the packets sent. */
  private unit: number;
  /** The window's allowance on top of cwndGain x BDP (bytes): 3 packets, or on a slow path
   *  SLOW_PATH_EXTRA_PACKETS of the flow's (computeSlowPath()). */
  private cwndExtra: number;
  /** This round acked a packet slower than it was sent (OVERLOAD_RATIO). */
  private roundOverloaded = false;
  /** This round's canSend refused a packet: the window, not the application, held it. */
  private roundCwndLimited = false;
  /** slowPath() at the last round start: the floors and pacing follow it. */
  private slow = false;
  readonly mtu: number;
  private readonly sendQuantumMs: number;
  private readonly initialWindow: number;
  /** The bandwidth samples' per-round maxima over the window (its value is s[S.BtlBw]). */
  private readonly bwFilter: RoundMax;
  /**
   * The bandwidth filter's rounds: RoundCount without ProbeRTT's. ProbeRTT holds the window at
   * 4 packets for 200 ms, and its samples measure that, not the path; on a short path those
   * 200 ms are more rounds than the window, and counting them let ProbeRTT's samples replace
   * the estimate (40 Mbit/s at 5 ms RTT fell to 5.6 Mbit/s, and ProbeBW took seconds to climb
   * back: test/congestion-sim/bandwidth-filter.test.ts).
   */
  private filterRound = 0;
  private readonly lossThreshold: number;
  private probeRttRoundDone = false;
  private readonly initialRttMs: number;
  private readonly burstBytes: number;
  private readonly probeRttDurationMs: number;
  private readonly queueMarginMinMs: number;
  private readonly queueMarginFraction: number;
  private rngState: number;
  /** Round samples beyond the first INLINE_ROUND_SAMPLES (allocated at the first such round). */
  private roundSamplesMore: number[] | undefined;
  /** Counters for tests and traces. */
  readonly lossStats = { congestive: 0, ignored: 0, reactions: 0, spurious: 0, undone: 0 };
  /** The packet whose loss caused the last reaction (for undo). */
  private reactionPacket: SentPacket | undefined;

  /** Algorithm name (a getter: one field less in every controller). */
  get name(): string {
    return "bbr-lite";
  }

  constructor(config: DefaultConfig = {}, state?: number[]) {
    this.s = state ?? doubleArray(CONTROLLER_SLOTS);
    this.mtu = requireInRange("mtu", config.mtu ?? 1200, 64, 65_535);
    const initialPackets = requireInRange("initialWindowPackets", config.initialWindowPackets ?? 10, 1, 1000);
    const minPackets = requireInRange("minWindowPackets", config.minWindowPackets ?? 4, 1, 1000);
    this.initialWindow = initialPackets * this.mtu;
    this.minWindow = minPackets * this.mtu;
    this.configMinWindow = this.minWindow;
    this.unit = this.mtu;
    this.cwndExtra = 3 * this.mtu;
    this.initialRttMs = requireInRange("initialRttMs", config.initialRttMs ?? 100, 0.01, 60_000);
    // Whole rounds: a sample stays while `round - its round <= window`, as with the old filter.
    this.bwFilter = new RoundMax(Math.floor(requireInRange("bwWindowRounds", config.bwWindowRounds ?? 10, 1, 1000)));
    this.minRttWindowMs = requireInRange("minRttWindowMs", config.minRttWindowMs ?? 10_000, 1, 3_600_000);
    this.probeRttDurationMs = requireInRange("probeRttDurationMs", config.probeRttDurationMs ?? 200, 0, 60_000);
    this.lossThreshold = requireInRange("lossThreshold", config.lossThreshold ?? 0.02, 0, 1);
    this.queueMarginMinMs = requireInRange("queueMarginMinMs", config.queueMarginMinMs ?? 5, 0, 60_000);
    this.queueMarginFraction = requireInRange("queueMarginFraction", config.queueMarginFraction ?? 0.25, 0, 100);
    this.burstBytes = requireInRange("pacingBurstPackets", config.pacingBurstPackets ?? 4, 1, 1000) * this.mtu;
    this.sendQuantumMs = requireInRange("sendQuantumMs", config.sendQuantumMs ?? 1, 0, 100);
    const ackThreshold = requireInRange("peerAckThresholdPackets", config.peerAckThresholdPackets ?? 8, 0, 1000);
    this.defaultPeerThreshold = Math.ceil(ackThreshold);
    this.peerThreshold = this.defaultPeerThreshold;
    this.ackClockWindow = this.ackClockWindowFor(this.defaultPeerThreshold);
    this.rngState = (Math.floor(requireInRange("seed", config.seed ?? 1, 0, 2 ** 32 - 1)) >>> 0) || 1;
    const s = this.s;
    s[S.MinRtt] = NaN;
    s[S.PacingGain] = STARTUP_GAIN;
    s[S.CwndGain] = STARTUP_GAIN;
    s[S.Cwnd] = this.initialWindow;
    s[S.ProbeRttDoneStamp] = NaN;
    s[S.InflightCap] = Infinity;
    s[S.LastLossReactionTime] = -Infinity;
    s[S.LastLossReactionRound] = -1;
    s[S.CapBeforeReaction] = Infinity;
    s[S.PacketSize] = this.mtu;
    s[S.QueueSeenAt] = -Infinity;
    s[S.QueueSince] = NaN;
    s[S.LastRoundAt] = -Infinity;
    for (let i = 0; i < RECENT_RTT_SAMPLES; i++) s[S.RecentRtt + i] = NaN;
    s[S.BtlBw] = NaN;
    const rate = (STARTUP_GAIN * this.initialWindow) / this.initialRttMs; // bytes per ms
    pacerInit(s, PACER, this.initialWindow, rate, this.burstBytes, rate * this.sendQuantumMs);
    this.refreshWindow();
  }

  // ---- readouts ------------------------------------------------------------------------------

  /** Windowed max delivery rate in bytes per ms (NaN before the first sample). */
  btlBw(): number {
    return this.s[S.BtlBw];
  }

  private updateBtlBw(rate: number): void {
    const s = this.s;
    const before = s[S.BtlBw];
    s[S.BtlBw] = this.bwFilter.update(rate, this.filterRound);
    // A light flow ends a round on nearly every ack and feeds the filter each time, mostly
    // without moving its best: only a new best is a new pacing input (NaN !== NaN: flagged).
    if (s[S.BtlBw] !== before) this.pacingInputsChanged = true;
  }

  minRttMs(): number {
    return this.s[S.MinRtt];
  }

  /** Bandwidth-delay product in bytes, or the initial window while unknown. */
  bdp(): number {
    const s = this.s;
    const bw = s[S.BtlBw];
    const minRtt = s[S.MinRtt];
    if (!(bw > 0) || !(minRtt >= 0)) return this.initialWindow;
    return bw * minRtt;
  }

  /** Min of the last few RTT samples (NaN before any): the queue test's view of "now". */
  recentRttMs(): number {
    const s = this.s;
    let m = NaN;
    for (let i = S.RecentRtt; i < S.RecentRtt + RECENT_RTT_SAMPLES; i++) {
      const r = s[i];
      if (!(r >= m)) m = Number.isNaN(r) ? m : r;
    }
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
    const minRtt = this.s[S.MinRtt];
    if (Number.isNaN(recent) || Number.isNaN(minRtt)) return false;
    const margin = Math.max(this.queueMarginMinMs, this.queueMarginFraction * minRtt);
    return recent > minRtt + margin;
  }

  windowBytes(): number {
    return this.s[S.Window];
  }

  pacingRateBytesPerSec(): number {
    return this.s[PACER + PACER_RATE] * 1000;
  }

  /**
   * The path's capacity as far as this flow has seen it: btlBw, or what it was when the network
   * last limited the flow if that is more. A light flow's model follows its own rate (its
   * samples are not app-limited: see networkLimited()), which says nothing of the path: a game
   * sizing its next download by it after a transfer would read a fraction of the link. A new
   * network-limited spell measures the path again, lower or higher;
   * without one the figure is dropped PATH_BW_KEEP_MS after it was measured (a path can slow
   * down under a light flow, which cannot see it), and at once when the connection moves.
   */
  bandwidthEstimateBps(): number {
    const s = this.s;
    const bw = s[S.BtlBw];
    const kept = s[S.DeliveredTime] - this.pathBwAt <= PATH_BW_KEEP_MS ? this.pathBw : NaN;
    const best = kept > bw || !(bw > 0) ? kept : bw;
    return best > 0 ? best * 8000 : 0;
  }

  onPathChange(_now: number): void {
    this.pathBw = NaN;
  }

  // ---- interface -----------------------------------------------------------------------------

  canSend(inFlightBytes: number, bytes: number): boolean {
    if (inFlightBytes === 0 || inFlightBytes + bytes <= this.s[S.Window]) return true;
    this.roundCwndLimited = true;
    return false;
  }

  nextSendTime(now: number): number {
    return pacerNextSendTime(this.s, PACER, now);
  }

  onAppLimited(now: number, inFlightBytes: number): void {
    // Samples are app-limited until everything in flight now has been delivered.
    const s = this.s;
    s[S.AppLimitedUntil] = Math.max(s[S.Delivered] + inFlightBytes, 1);
    this.onSendQueueEmpty(now);
  }

  onSendQueueEmpty(_now: number): void {
    this.lastQueueEmptyRound = this.s[S.RoundCount];
    // The application, not the network, limits the flow again: the pacing floor and the
    // default ack threshold come back at once (networkLimited()).
    if (this.networkLimitedModel) {
      this.pacingInputsChanged = true;
      this.updatePacingRate();
    }
  }

  onSent(now: number, bytes: number, inFlightBytes: number, out?: SentPacket): SentPacket {
    const s = this.s;
    if (inFlightBytes === 0) {
      // Start of a new send interval after idle: measure from here.
      s[S.FirstSentTime] = now;
      s[S.DeliveredTime] = now;
    }
    const packet = fillSentPacket(
      out,
      now,
      bytes,
      inFlightBytes + bytes,
      inlineInteger(s[S.Delivered]),
      inlineInteger(s[S.DeliveredTime]),
      inlineInteger(s[S.FirstSentTime]),
      s[S.AppLimitedUntil] !== 0,
    );
    packet.deliveredRecvTime = this.deliveredRecvTime;
    packet.deliveredAtReport = this.deliveredAtReport;
    if (now < this.probeTo && now >= this.probeFrom) this.probeSent++;
    s[S.PacketSize] += (bytes - s[S.PacketSize]) / 8;
    pacerOnSend(s, PACER, now, bytes);
    return packet;
  }

  /**
   * A datagram's acks: each packet's bookkeeping (delivered bytes, min RTT, the round, its
   * delivery-rate sample) in order, as if acked alone, then the state machine, the window and
   * the pacing rate once, from the newest packet.
   */
  onAcks(now: number, acks: AckSummary, inFlightBytes: number): void {
    const packets = acks.packets;
    const n = packets.length;
    const s = this.s;
    // Min RTT (10 s window): an expired estimate is replaced by the first fresh sample, which
    // also triggers ProbeRTT (updateState).
    const minRtt = s[S.MinRtt];
    const minRttExpired = !Number.isNaN(minRtt) && now - s[S.MinRttStamp] > this.minRttWindowMs;
    const rttOverride = acks.rttMs;
    const overridden = rttOverride === rttOverride;
    let roundStart = false;
    for (let i = 0; i < n; i++) {
      const p = packets[i]!;
      if (this.onPacketAcked(now, p, overridden ? rttOverride : now - p.sentTime)) roundStart = true;
      // Per packet: in Startup the window grows only while below a target that each sample
      // may raise, and a datagram's acks added at once would overshoot it.
      this.updateWindow(p.bytes);
    }
    const newest = packets[n - 1]!;
    // For a receive-time report after these acks (onReceiveTime): it times the newest.
    const a = this.acked;
    a.valid = true;
    a.deliveredAtReport = newest.deliveredAtReport;
    a.deliveredRecvTime = newest.deliveredRecvTime;
    a.sentTime = newest.sentTime;
    a.firstSentTime = newest.firstSentTime;
    a.appLimited = newest.appLimited;
    a.deliveredNow = s[S.Delivered];
    // In flight before the first packet's ack and before the newest's: the bounds a check
    // per packet would have seen.
    this.updateState(now, newest, inFlightBytes + acks.bytes, inFlightBytes + newest.bytes, inFlightBytes, minRttExpired, roundStart);
    if (this.pacingInputsChanged) this.updatePacingRate();
    this.refreshWindow();
  }

  /** One acked packet's bookkeeping (onAcks). Returns true if its ack started a round. */
  private onPacketAcked(now: number, p: SentPacket, rtt: number): boolean {
    const s = this.s;
    const bytes = p.bytes;
    const delivered = s[S.Delivered] + bytes;
    s[S.Delivered] = delivered;
    s[S.DeliveredTime] = now;
    s[S.DeliveredInRound] += bytes;
    const appLimitedUntil = s[S.AppLimitedUntil];
    if (appLimitedUntil !== 0 && delivered > appLimitedUntil) s[S.AppLimitedUntil] = 0;

    const minRtt = s[S.MinRtt];
    const minRttExpired = !Number.isNaN(minRtt) && now - s[S.MinRttStamp] > this.minRttWindowMs;
    if (Number.isFinite(rtt) && rtt >= 0) {
      const full = bytes * 2 >= this.mtu;
      if (full && (!(rtt > this.minRttFull) || now - this.minRttFullStamp > this.minRttWindowMs)) {
        this.minRttFull = rtt;
        this.minRttFullStamp = now;
      }
      // Once a full-size packet's round trip is known (within the window), it is the floor: a
      // smaller packet's shorter one leaves out the serialization of the packets this flow sends.
      // Not on a slow path (computeSlowPath()): there a full-size packet's round trip may have
      // been taken behind a queue (a light flow's at 64 kbit/s in Startup: 524 ms, against 126
      // for its small ones), and as the floor it keeps that queue in the BDP for 10 s.
      const floor = now - this.minRttFullStamp <= this.minRttWindowMs && !this.slow && !this.slowQueueNow() ? this.minRttFull : 0;
      if (Number.isNaN(minRtt) || rtt <= minRtt || minRttExpired) {
        const next = rtt < floor ? floor : rtt;
        if (next !== minRtt) this.pacingInputsChanged = true;
        s[S.MinRtt] = next;
        s[S.MinRttStamp] = now;
        this.minRttFromSmall = !full && next === rtt;
      } else if (this.minRttFromSmall && full && minRtt < floor) {
        // Taken from small packets before the first full-size one was measured (never a raise
        // of a min RTT that full-size packets set: a fresh floor may sit behind a queue).
        s[S.MinRtt] = floor;
        this.minRttFromSmall = false;
        this.pacingInputsChanged = true;
      }
      const i = s[S.RecentRttIndex];
      s[S.RecentRtt + i] = rtt;
      s[S.RecentRttIndex] = i === RECENT_RTT_SAMPLES - 1 ? 0 : i + 1;
    }

    // Acked slower than sent (by OVERLOAD_RATIO): the flow itself fills a queue. A light flow
    // beside someone else's queue is acked as fast as it sends (computeSlowPath()).
    if (now - p.deliveredTime > OVERLOAD_RATIO * (p.sentTime - p.firstSentTime) && p.sentTime > p.firstSentTime) this.roundOverloaded = true;
    // Round trips: a round ends when a packet sent after the previous round's end is acked.
    let roundStart = false;
    if (p.delivered >= s[S.NextRoundDelivered]) {
      this.endRound();
      s[S.NextRoundDelivered] = delivered;
      s[S.RoundCount]++;
      if (this.state !== "probe-rtt") this.filterRound++;
      roundStart = true;
      // A flow backlogged for NETWORK_LIMITED_ROUNDS rounds now: its model takes over.
      if (this.networkLimited()) {
        if (!this.networkLimitedModel) this.pacingInputsChanged = true;
        this.pathBw = s[S.BtlBw];
        this.pathBwAt = now;
      }
      if (this.slow || this.mtu > SLOW_PATH_SERIALIZATION_MS * s[S.BtlBw]) this.applySlowPath(now);
      else s[S.QueueSince] = NaN;
      s[S.LastRoundAt] = now;
      this.roundOverloaded = false;
      this.roundCwndLimited = false;
    }

    // Delivery-rate sample, timed by the acks' arrival unless the peer reports receive times
    // (then onReceiveTime takes one per datagram, timed at the receiver).
    const sentTime = p.sentTime;
    s[S.FirstSentTime] = Math.max(s[S.FirstSentTime], sentTime);
    const sendElapsed = sentTime - p.firstSentTime;
    if (!(now - this.receiveTimeAt <= REPORTS_FRESH_RTTS * s[S.MinRtt])) {
      this.rateSample(delivered - p.delivered, Math.max(sendElapsed, now - p.deliveredTime), p.appLimited);
    }

    return roundStart;
  }

  onReceiveTime(now: number, receiveTimeMs: number): void {
    const a = this.acked;
    if (!a.valid) return;
    a.valid = false;
    const previous = a.deliveredRecvTime;
    this.deliveredAtReport = a.deliveredNow;
    if (!(receiveTimeMs >= this.deliveredRecvTime)) {
      // The first report, or the peer's clock went back: start timing from here.
      this.deliveredRecvTime = receiveTimeMs;
      return;
    }
    // On the peer's clock: when it received the packets, not when the reports came back. Counted
    // up to what a probe may use, so a pause in the reports (a light spell) leaves no long tail.
    const most = PROBE_REPORT_GAP_MAX_RTTS * this.s[S.MinRtt];
    let gap = receiveTimeMs - this.deliveredRecvTime;
    if (gap > most) gap = most;
    this.reportGapMs = Number.isNaN(this.reportGapMs) ? gap : this.reportGapMs + (gap - this.reportGapMs) / 8;
    this.deliveredRecvTime = receiveTimeMs;
    if (Number.isNaN(previous)) return; // sent before any report: no start to time from
    this.receiveTimeAt = now;
    const before = this.pacingInputsChanged;
    // From one report to another, bytes and time alike: the report current when the packet was
    // sent, and this one (its delivered count and its receive time).
    this.rateSample(a.deliveredNow - a.deliveredAtReport, Math.max(a.sentTime - a.firstSentTime, receiveTimeMs - previous), a.appLimited);
    if (this.pacingInputsChanged && !before) this.updatePacingRate();
  }

  /** Reports are wanted while the network, not the application, limits the flow. */
  wantsReceiveTimes(): boolean {
    return this.networkLimited();
  }

  /** One delivery-rate sample: `bytes` delivered over `interval` ms. */
  private rateSample(bytes: number, interval: number, appLimited: boolean): void {
    const s = this.s;
    if (!(interval > 0) || interval < s[S.MinRtt] || !(bytes > 0)) return;
    const rate = bytes / interval;
    if (!this.filledPipe) {
      // Startup: every sample, at once (the ramp must not wait for round ends; an estimate a
      // few percent high only makes startup overshoot a little more, which Drain removes).
      if (!appLimited || !(rate < s[S.BtlBw])) this.updateBtlBw(rate);
    } else if (appLimited) {
      s[S.RoundAppLimitedMax] = Math.max(s[S.RoundAppLimitedMax], rate);
    } else {
      this.addRoundSample(rate);
    }
  }

  onLoss(now: number, p: SentPacket, _inFlightBytes: number): void {
    if (p.sentTime >= this.probeFrom && p.sentTime < this.probeTo) this.probeLost++;
    // Loss without a queue is not congestion: a full FIFO shows as RTT above min RTT before it
    // drops, random (Wi-Fi, mobile) loss does not. Such loss changes nothing here; the delivery
    // rate (acked bytes only) already accounts for the capacity it takes.
    if (!this.queueVisible()) {
      this.lossStats.ignored++;
      return;
    }
    const s = this.s;
    this.lossStats.congestive++;
    const lost = s[S.LostInRound] + p.bytes;
    s[S.LostInRound] = lost;
    // Queue-coincident losses of this round, in packets and events (losses declared at one
    // `now` are one event); counted from zero again in a new round (here, not at every round
    // end: a light flow ends a round on nearly every ack, and losses are rare).
    const events = (this.lossEventPackets ??= []);
    if (this.lossRound !== s[S.RoundCount]) {
      this.lossRound = s[S.RoundCount];
      this.lossEvents = 0;
      this.lossPackets = 0;
      this.lossEventAt = NaN;
      this.lossRoundFirstEvent = this.lossEventNumber;
      events.length = 0;
    }
    this.lossPackets++;
    if (now !== this.lossEventAt) {
      this.lossEventAt = now;
      this.lossEventNumber++;
      events.push(0);
    }
    // An event whose packets were all acked late (onSpuriousLoss) counts again with a new one.
    if (events[events.length - 1]!++ === 0) this.lossEvents++;
    p.lossEvent = this.lossEventNumber - 1;
    const total = lost + s[S.DeliveredInRound];
    const tooMuchLoss = lost > this.lossThreshold * total;
    // Recovery epoch (RFC 9002 7.3.2): losses of packets sent before the last reaction were
    // caused by the situation already reacted to.
    if (!tooMuchLoss || p.sentTime <= s[S.LastLossReactionTime] || s[S.LastLossReactionRound] === s[S.RoundCount]) {
      return;
    }
    // Startup: only after several loss events in this round (BBRv2's rule). Its early rounds
    // are 10-50 packets, so a single random loss is already more than 2 % of one (and more so
    // of the part of a round acked so far), and the queue test can be fooled there: a stall of
    // the process (GC, a late timer; the benchmark runs both ends in one) delays every ack by
    // the stall, and the round trips measured across it read as a queue. One random loss then
    // ended Startup at 1.5-9 Mbit/s of a 40 Mbit/s path (simulator, 50 ms RTT, 1 % loss,
    // test/congestion-sim/startup-stall.test.ts), and ProbeBW climbed back by a few percent
    // per 8-round cycle: from 1.5 Mbit/s, 2 after 2.5 s and 90 % of the path after 23 s (that
    // climb was slow for a reason of its own, since fixed: probeExtensionMs()).
    // A buffer that overflows under Startup's 2.89x pacing drops packet after packet, detected
    // by ack after ack: many events in a round, so that exit stays. Until then such losses
    // change nothing in Startup (no cap either: its model is still growing), as in BBRv2.
    // On a short path a round holds few events, but an overflow loses many packets in each
    // (STARTUP_FULL_LOSS_PACKETS).
    if (!this.filledPipe && this.lossEvents < STARTUP_FULL_LOSS_EVENTS && !(this.lossPackets >= STARTUP_FULL_LOSS_PACKETS && this.lossEvents >= 2)) return;
    s[S.LastLossReactionTime] = now;
    s[S.LastLossReactionRound] = s[S.RoundCount];
    // Bounded reduction: never below one BDP, so a reaction removes queue, not throughput.
    this.lossStats.reactions++;
    this.reactionPacket = p;
    s[S.CapBeforeReaction] = s[S.InflightCap];
    const floor = Math.max(this.minWindow, this.bdp());
    s[S.InflightCap] = Math.max(floor, LOSS_BETA * p.inFlightAtSend);
    if (this.state === "startup") {
      this.filledPipe = true;
      this.enterDrain();
    } else if (this.state === "probe-bw" && s[S.PacingGain] > 1) {
      this.advanceCycle(now);
    }
    this.updatePacingRate();
    this.refreshWindow();
  }

  /**
   * A loss reported earlier was spurious (its ack came late). If the current round's figures
   * counted it, it no longer counts in them (lost bytes, lost packets, and its loss event once
   * none of the event's packets is left), and if it was the loss that triggered the last
   * reaction, the in-flight cap goes back to what it was (a Startup exit is not undone: the model
   * state it needs is gone). A loss onLoss ignored (no queue visible) was never counted, and one
   * counted in an earlier round left with that round's figures (endRound resets the lost bytes):
   * taking either out of this round's would understate this round's loss (before, any late ack
   * took its bytes off the current round's count).
   */
  onSpuriousLoss(_now: number, p: SentPacket): void {
    const s = this.s;
    this.lossStats.spurious++;
    const event = p.lossEvent;
    p.lossEvent = -1;
    if (event >= this.lossRoundFirstEvent && this.lossRound === s[S.RoundCount]) {
      s[S.LostInRound] = Math.max(0, s[S.LostInRound] - p.bytes);
      this.lossPackets--;
      if (--this.lossEventPackets![event - this.lossRoundFirstEvent]! === 0) this.lossEvents--;
    }
    if (p === this.reactionPacket) {
      this.lossStats.undone++;
      s[S.InflightCap] = s[S.CapBeforeReaction];
      this.reactionPacket = undefined;
      this.updatePacingRate();
      this.refreshWindow();
    }
  }

  /**
   * The ack threshold to ask of the peer: half the BDP in packets (so the peer acks at least
   * twice per round trip), between 1 and the default threshold. Only paths whose BDP is under
   * 16 packets (at 1 ms, under ~150 Mbit/s; at 20 ms, under ~8 Mbit/s) want fewer than the
   * default 8. There the ack-clock floor of 10 packets was more than the pipe, and stood in the
   * bottleneck's queue (~96 ms at 1 Mbit/s); a smaller window behind the default threshold
   * would be acked only by the peer's timer; and acks batched by 8 packets or 5 ms made the
   * delivery-rate samples, so btlBw, read 5-10 % under the link. Before the pipe is known to be
   * filled: the default (the initial window is 10 packets).
   */
  peerAckThreshold(): number {
    const s = this.s;
    const minRtt = s[S.MinRtt];
    const most = this.defaultPeerThreshold;
    if (most === 0 || !(this.networkLimitedModel || this.slow) || !(minRtt >= 0)) return most;
    return Math.max(1, Math.min(most, Math.floor((s[S.BtlBw] * minRtt) / (ACKS_PER_ROUND * this.unit))));
  }

  setPeerAckThreshold(packets: number): void {
    if (this.defaultPeerThreshold === 0) return; // configured without an ack-clock floor
    this.peerThreshold = packets;
    const window = this.ackClockWindowFor(packets);
    if (window === this.ackClockWindow) return;
    this.ackClockWindow = window;
    this.refreshWindow();
  }

  // ---- internals -----------------------------------------------------------------------------

  /** Threshold + 2: the ack for the threshold-th packet comes back while 2 more are in flight,
   *  and the next threshold packets can leave at once (= the initial window, 10, by default). */
  private ackClockWindowFor(threshold: number): number {
    return threshold > 0 ? Math.max(this.minWindow, (threshold + 2) * this.unit) : this.minWindow;
  }

  /**
   * The flow fills a slow path (SLOW_PATH_SERIALIZATION_MS): one full-size datagram takes over
   * 20 ms at btlBw, and within the last SLOW_PATH_HOLD_MS the flow showed a queue it built
   * itself (slowQueue()). Not networkLimited(): a light flow can overload such a path too (a
   * latest-state channel replaces its queued values, so its send queue empties with every
   * packet while the bottleneck's queue grows to the window). A light flow on a fast path has a
   * low btlBw too (its own rate), but builds no queue, and keeps its floors.
   *
   * On a slow path the window floors are counted in the flow's own mean packet size, not in
   * full-size packets (at 64 kbit/s the ack-clock floor of 10 x 1452 B is 1.8 s of queue, while
   * the BDP at 50-100 ms is under 1 kB), the minimum window and ProbeRTT's are
   * SLOW_PATH_MIN_PACKETS of those, pacing follows btlBw without the floor (the floor, 4
   * packets per min RTT, is several times such a link), and the peer is asked to ack more
   * often (peerAckThreshold()), so the small window is acked by count.
   */
  private computeSlowPath(now: number): boolean {
    const s = this.s;
    if (!(this.mtu > SLOW_PATH_SERIALIZATION_MS * s[S.BtlBw])) {
      s[S.QueueSince] = NaN;
      return false;
    }
    // Built by this flow: acked slower than sent (a growing queue), or held by its window.
    const own = this.roundOverloaded || this.roundCwndLimited;
    if (!(own && this.queueVisible())) s[S.QueueSince] = NaN;
    else if (Number.isNaN(s[S.QueueSince])) s[S.QueueSince] = now;
    // On a slow path the small window keeps the queue out of sight: a flow it still holds back
    // would rebuild the queue without it.
    if (this.slowQueue() || (this.slow && this.roundCwndLimited)) s[S.QueueSeenAt] = now;
    return now - s[S.QueueSeenAt] <= SLOW_PATH_HOLD_MS;
  }

  /** One full-size datagram takes over SLOW_PATH_SERIALIZATION_MS at btlBw, and every round start
   *  for SLOW_PATH_QUEUE_MS showed a queue the flow built itself. */
  private slowQueue(): boolean {
    return this.s[S.LastRoundAt] - this.s[S.QueueSince] >= SLOW_PATH_QUEUE_MS;
  }

  /** A queue shows now, with btlBw under a slow path's rate. */
  private slowQueueNow(): boolean {
    return this.mtu > SLOW_PATH_SERIALIZATION_MS * this.s[S.BtlBw] && this.queueVisible();
  }

  /** In Startup: the same queue at two round starts in a row is enough (each round is long
   *  there, and Startup's window doubles into the queue meanwhile). */
  private slowQueueStarting(): boolean {
    return this.s[S.QueueSince] < this.s[S.LastRoundAt];
  }

  /** computeSlowPath() as of the last round start (CongestionController.slowPath). */
  slowPath(): boolean {
    return this.slow;
  }

  /** At a round start on (or leaving) a slow path: the floors' unit and the pacing floor. */
  private applySlowPath(now: number): void {
    const slow = this.computeSlowPath(now);
    const s = this.s;
    if (slow !== this.slow) {
      this.slow = slow;
      this.pacingInputsChanged = true;
    }
    this.unit = slow ? Math.min(this.mtu, Math.max(64, s[S.PacketSize])) : this.mtu;
    this.minWindow = slow ? Math.min(this.configMinWindow, SLOW_PATH_MIN_PACKETS * this.unit) : this.configMinWindow;
    this.cwndExtra = (slow ? SLOW_PATH_EXTRA_PACKETS : 3) * this.unit;
    this.ackClockWindow = this.ackClockWindowFor(this.defaultPeerThreshold === 0 ? 0 : this.peerThreshold);
  }

  /**
   * The network, not the application, limits this flow: the pipe was found filled, and the
   * send queue has not run empty (onSendQueueEmpty) for NETWORK_LIMITED_ROUNDS round trips. Only
   * then does pacing follow btlBw alone and the peer get asked for a threshold from the BDP. A
   * light flow (a 30 Hz stream) empties its queue with every packet: its btlBw is its own rate,
   * and its bursts (a snapshot, a burst of messages after a quiet spell) must not be paced at it.
   */
  private networkLimited(): boolean {
    const s = this.s;
    return this.filledPipe && s[S.BtlBw] > 0 && s[S.RoundCount] - this.lastQueueEmptyRound >= NETWORK_LIMITED_ROUNDS;
  }

  /** windowBytes() from cwnd, the in-flight cap and the state; after every change of those. */
  private refreshWindow(): void {
    const s = this.s;
    let w = Math.max(s[S.Cwnd], this.ackClockWindow);
    const cap = s[S.InflightCap];
    if (Number.isFinite(cap)) w = Math.min(w, Math.max(cap, this.ackClockWindow));
    if (this.state === "probe-rtt") w = Math.min(w, this.minWindow);
    s[S.Window] = w;
  }

  /** One non-app-limited delivery-rate sample of this round (ring of ROUND_SAMPLES). */
  private addRoundSample(rate: number): void {
    const s = this.s;
    const count = s[S.RoundSampleCount];
    const slot = count % ROUND_SAMPLES;
    if (slot < INLINE_ROUND_SAMPLES) s[S.RoundSample + slot] = rate;
    else (this.roundSamplesMore ??= doubleArray(ROUND_SAMPLES - INLINE_ROUND_SAMPLES))[slot - INLINE_ROUND_SAMPLES] = rate;
    s[S.RoundSampleCount] = count + 1;
  }

  /**
   * After Startup, the bandwidth filter takes one value per round: the UPPER QUARTILE of the
   * round's delivery-rate samples, not every sample. Each sample's interval (about one RTT) is
   * shortened or stretched by path jitter and ack bunching at both of its ends; a max over every
   * sample of 10 rounds picks the most compressed one (a few percent high under a few ms of
   * jitter each way, enough to keep a standing queue). Capping a sample by its send rate (done above, as the
   * delivery-rate draft does) cannot remove this: in steady state the send rate IS the inflated
   * estimate. A quantile ignores the most compressed quarter of samples. Why not the median: a
   * round's samples are also pulled DOWN by things that are not the bottleneck (acks batched by
   * the receiver's ack delay on a 1 ms path, a probe that covers only part of a round), and the
   * median followed them: on 100 Mbit/s, 1 ms RTT it spiralled down to 5 Mbit/s (0.67: 77 %,
   * 0.75: 93 %, 0.9: 98 % utilization, but 0.9 keeps 38 ms of jitter queue). App-limited samples
   * still only raise the estimate.
   */
  private commitRoundBandwidth(): void {
    const s = this.s;
    const n = Math.min(s[S.RoundSampleCount], ROUND_SAMPLES);
    let value = NaN;
    if (n > 0 && n <= INLINE_ROUND_SAMPLES) {
      // A light flow ends a round on nearly every ack with one or two samples. Up to 4 samples
      // the quantile index min(n - 1, floor(0.75 n)) is n - 1: the largest, no sort needed.
      value = s[S.RoundSample];
      for (let i = 1; i < n; i++) if (s[S.RoundSample + i] > value) value = s[S.RoundSample + i];
    } else if (n > 0) {
      const samples = ROUND_SCRATCH;
      const more = this.roundSamplesMore!;
      for (let i = 0; i < INLINE_ROUND_SAMPLES; i++) samples[i] = s[S.RoundSample + i];
      for (let i = INLINE_ROUND_SAMPLES; i < n; i++) samples[i] = more[i - INLINE_ROUND_SAMPLES];
      // Same order as the typed-array sort: the rates are finite and positive.
      if (n <= SMALL_SORT) insertionSort(samples, n);
      else samples.subarray(0, n).sort();
      value = samples[Math.min(n - 1, Math.floor(ROUND_QUANTILE * n))]!;
    }
    const appLimitedMax = s[S.RoundAppLimitedMax];
    if (appLimitedMax > s[S.BtlBw] && !(value >= appLimitedMax)) value = appLimitedMax;
    if (value > 0) this.updateBtlBw(value);
    s[S.RoundSampleCount] = 0;
    s[S.RoundAppLimitedMax] = 0;
  }

  private endRound(): void {
    const s = this.s;
    if (this.filledPipe) this.commitRoundBandwidth();
    const lost = s[S.LostInRound];
    const total = lost + s[S.DeliveredInRound];
    const cap = s[S.InflightCap];
    // The cap first: it is usually Infinity, and lossThreshold (a double field, i.e. a heap box
    // of its own) is then not read on every round end.
    if (Number.isFinite(cap) && total > 0 && lost <= this.lossThreshold * total) {
      const grown = cap * INFLIGHT_CAP_GROWTH;
      s[S.InflightCap] = grown > PROBE_BW_CWND_GAIN * this.bdp() + this.cwndExtra ? Infinity : grown;
    }
    s[S.LostInRound] = 0;
    s[S.DeliveredInRound] = 0;
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

  private setGains(pacingGain: number, cwndGain: number): void {
    this.s[S.PacingGain] = pacingGain;
    this.s[S.CwndGain] = cwndGain;
    this.pacingInputsChanged = true;
  }

  private enterDrain(): void {
    this.state = "drain";
    this.setGains(DRAIN_GAIN, STARTUP_GAIN);
  }

  private enterProbeBw(now: number): void {
    const s = this.s;
    this.state = "probe-bw";
    // Start in any phase but the 0.75 one (index 1), chosen from the seed.
    const r = Math.floor(this.random() * 7);
    const index = r === 0 ? 0 : r + 1;
    s[S.CycleIndex] = index;
    s[S.CycleStamp] = now;
    // Nothing is known of an earlier probe: the first is not lengthened.
    this.probeQueueMs = Infinity;
    this.probeTo = now;
    if (index === 0) this.startUpProbe(now);
    this.setGains(PROBE_GAINS[index]!, PROBE_BW_CWND_GAIN);
  }

  private advanceCycle(now: number): void {
    const s = this.s;
    const index = (s[S.CycleIndex] + 1) % PROBE_GAINS.length;
    if (index === 0) this.startUpProbe(now);
    else if (index === 2) this.probeTo = now; // the 0.75 phase ends the probe's window
    s[S.CycleIndex] = index;
    s[S.CycleStamp] = now;
    s[S.PacingGain] = PROBE_GAINS[index]!;
    this.pacingInputsChanged = true;
  }

  /** A 1.25 phase begins: may it be lengthened (the previous one found spare capacity, and did
   *  not find it by overflowing a shallow buffer)? */
  private startUpProbe(now: number): void {
    this.probeExtends =
      this.probeQueueMs < Math.max(PROBE_QUEUE_MIN_MS, PROBE_QUEUE_FRACTION * this.s[S.MinRtt]) && !(this.probeLost > PROBE_LOSS_FRACTION * this.probeSent);
    this.probeQueueMs = 0;
    this.probeSent = 0;
    this.probeLost = 0;
    this.probeFrom = now;
    this.probeTo = Infinity;
  }

  /**
   * How much longer than min RTT the current 1.25 phase lasts (ms): the reports' mean gap, up to
   * PROBE_REPORT_GAP_MAX_RTTS min RTTs, while reports time the samples and the previous probe
   * found spare capacity; else 0 (BBR's one min RTT).
   *
   * Why: where the peer sends little, its reports (the only ones that time samples while they
   * keep coming, onReceiveTime) come far apart: a bulk upload whose receiver acks every 64
   * messages gets one every ~350 ms at 1.5 Mbit/s, ~80 ms at 10, on a 50 ms path. A report-timed
   * sample spans a round trip plus up to two gaps, so a one-min-RTT probe and the 0.75 phase
   * after it cancel out in it, and most ProbeBW rounds get no sample at all: the estimate rose a
   * few percent per 8-round cycle instead of up to 25 % (40 Mbit/s path found from 1.5 after
   * 14-24+ s). A probe lasting a round trip plus a gap covers, on average, one report-to-report
   * span that starts after its packets began to arrive. Timing the probe's own packets by their
   * acks instead (tried, reverted) overestimated where the way back is slow and busy: the acks
   * then come bunched behind the peer's own data (20 Mbit/s up, 1 Mbit/s busy down: estimate
   * up to 22.9). Reports are stamped at the receiver, so a longer probe cannot overestimate; its
   * cost is queue on a path that is already full (0.25 x its length), hence the gate: only
   * after a probe that raised no queue. Ended early still by loss and, past min RTT, by a visible
   * queue (updateState).
   */
  private probeExtensionMs(now: number): number {
    const minRtt = this.s[S.MinRtt];
    if (!this.probeExtends || !(now - this.receiveTimeAt <= REPORTS_FRESH_RTTS * minRtt)) return 0;
    const gap = this.reportGapMs;
    return gap > 0 ? Math.min(gap, PROBE_REPORT_GAP_MAX_RTTS * minRtt) : 0;
  }

  private updateState(
    now: number,
    p: SentPacket,
    /** In flight before the datagram's first ack (the most) and before its newest (the least). */
    priorInFlight: number,
    priorInFlightLeast: number,
    inFlight: number,
    minRttExpired: boolean,
    roundStart: boolean,
  ): void {
    const s = this.s;
    // Full-pipe detection (startup exit) once per round on non-app-limited rounds, and on
    // app-limited ones that see a queue: a stream faster than the path whose packets each
    // empty the send queue (a 30 Hz x 1000 B stream into 120 kbit/s) is app-limited for the
    // sender while it fills the bottleneck's buffer; its rounds never counted, and Startup's
    // window held ~1.5 s of queue for 10 s on a 64-packet buffer.
    if (!this.filledPipe && roundStart && (!p.appLimited || this.queueVisible())) {
      const bw = s[S.BtlBw];
      if (bw >= s[S.FullBw] * FULL_BW_GROWTH) {
        s[S.FullBw] = bw;
        s[S.FullBwCount] = 0;
      } else if (++s[S.FullBwCount] >= FULL_BW_ROUNDS || this.slowQueueStarting()) {
        // On a slow path a queue that shows while the bandwidth stops growing is the full pipe
        // at once: its rounds are long (the queue is in them), and three of them are seconds of
        // Startup's 2.89x growing that queue.
        this.filledPipe = true;
        this.pacingInputsChanged = true;
      }
    }
    if (this.state === "startup" && this.filledPipe) this.enterDrain();
    if (this.state === "drain" && inFlight <= this.bdp()) this.enterProbeBw(now);

    if (this.state === "probe-bw") {
      const minRtt = s[S.MinRtt];
      const sinceCycle = now - s[S.CycleStamp];
      const fullLength = sinceCycle > minRtt;
      const g = s[S.PacingGain];
      if (g !== 1) {
        // The queue the up-probe raised, seen through it and the 0.75 phase after it (its last
        // packets' round trips end there): decides whether the next probe is lengthened.
        const queue = this.recentRttMs() - minRtt;
        if (queue > this.probeQueueMs) this.probeQueueMs = queue;
      }
      const next =
        g > 1
          ? // After min RTT, at the in-flight target: on at most the reports' gap longer
            // (probeExtensionMs()) unless a queue shows.
            fullLength &&
            (s[S.LostInRound] > 0 ||
              (priorInFlight >= g * this.bdp() && (sinceCycle > minRtt + this.probeExtensionMs(now) || this.queueVisible())))
          : g < 1
            ? // Unlike BBRv1 (which also ends this phase after one min RTT), stay until the
              // queue is drained (in-flight <= BDP), bounded by 4 min RTTs: a standing queue
              // left by a burst (e.g. after ProbeRTT) is otherwise never removed at gain 1.
              priorInFlightLeast <= this.bdp() || sinceCycle > 4 * minRtt
            : fullLength;
      if (next) this.advanceCycle(now);
    }

    // ProbeRTT: min RTT not refreshed for a whole window.
    if (this.state !== "probe-rtt" && minRttExpired) {
      this.state = "probe-rtt";
      s[S.PacingGain] = 1;
      this.pacingInputsChanged = true;
      s[S.PriorCwnd] = Math.max(s[S.Cwnd], s[S.PriorCwnd]);
      s[S.ProbeRttDoneStamp] = NaN;
    }
    if (this.state === "probe-rtt") {
      if (Number.isNaN(s[S.ProbeRttDoneStamp])) {
        if (inFlight <= this.minWindow) {
          s[S.ProbeRttDoneStamp] = now + this.probeRttDurationMs;
          this.probeRttRoundDone = false;
          s[S.NextRoundDelivered] = s[S.Delivered];
        }
      } else {
        if (roundStart) this.probeRttRoundDone = true;
        if (this.probeRttRoundDone && now >= s[S.ProbeRttDoneStamp]) {
          s[S.MinRttStamp] = now;
          s[S.Cwnd] = Math.max(s[S.Cwnd], s[S.PriorCwnd]);
          s[S.PriorCwnd] = 0;
          if (this.filledPipe) this.enterProbeBw(now);
          else {
            this.state = "startup";
            this.setGains(STARTUP_GAIN, STARTUP_GAIN);
          }
        }
      }
    }
  }

  private updateWindow(acked: number): void {
    const s = this.s;
    const bw = s[S.BtlBw];
    const minRtt = s[S.MinRtt];
    // BDP x gain, plus 3 packets and two send quanta: the pacer releases a quantum at a time
    // (sendQuantumMs of the rate), which is in flight on top of the BDP (the same budget as
    // Linux BBR's "quantization budget" for TSO bursts). Without it, on a path whose RTT is
    // below the timer granularity (loopback: ~0.15 ms vs 1 ms) the window, not the rate, would
    // stop every release.
    const target =
      bw > 0 && minRtt >= 0 ? s[S.CwndGain] * (bw * minRtt) + this.cwndExtra + 2 * this.sendQuantumMs * bw : this.initialWindow;
    let cwnd = s[S.Cwnd];
    if (this.filledPipe) cwnd = Math.min(cwnd + acked, target);
    // The window grows past the target until the initial window is delivered: 1.5 s at 64
    // kbit/s, in which it doubles into the queue, so not once a slow path shows one.
    else if (cwnd < target || (s[S.Delivered] < this.initialWindow && !this.slowQueueStarting())) cwnd += acked;
    s[S.Cwnd] = Math.max(cwnd, this.minWindow);
  }

  /** Pacing rate and the pacer's quantum and capacity from btlBw, min RTT and the pacing gain. */
  private updatePacingRate(): void {
    const s = this.s;
    this.pacingInputsChanged = false;
    const bw = s[S.BtlBw];
    const previous = s[PACER + PACER_RATE];
    let rate: number;
    if (bw > 0) {
      rate = s[S.PacingGain] * bw;
      // In startup the rate only rises (a low early sample must not slow the ramp).
      if (!this.filledPipe) rate = Math.max(rate, previous);
    } else {
      rate = previous;
    }
    // Floor: what the minimum window would allow per min RTT anyway, unless the network limits
    // the flow (networkLimited()): then btlBw is a measured capacity, and on a path whose BDP is
    // under the minimum window (1 Mbit/s, 1 ms: 4 packets per min RTT is ~4x the link) the floor
    // paced above the link, Drain never drained, the standing queue inflated min RTT and so the
    // BDP, and the window alone held ~90 ms of queue (see peerAckThreshold()).
    const minRtt = s[S.MinRtt];
    this.networkLimitedModel = this.networkLimited();
    if (!this.networkLimitedModel && !this.slow) {
      const rttForFloor = minRtt > 0 ? minRtt : this.initialRttMs;
      rate = Math.max(rate, this.minWindow / Math.max(rttForFloor, 0.01));
    }
    s[PACER + PACER_RATE] = rate;
    // Quantum: debt the pacer allows before a send waits (pacer.ts). Capacity: burst after idle,
    // at least 1 ms of the rate and two quanta, so a wake-up that oversleeps the ~1 quantum it
    // asked for (a 1 ms timer rounded up to 2 ms, plus the runtime's lateness) loses no tokens.
    const quantum = rate * this.sendQuantumMs;
    s[PACER + PACER_QUANTUM] = quantum;
    s[PACER + PACER_CAPACITY] = Math.max(this.burstBytes, rate * 1, 2 * quantum);
  }
}
