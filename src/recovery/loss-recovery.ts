/**
 * Loss recovery, sender side, for one connection: the sent window (every packet in flight),
 * loss detection by the packet and time thresholds (RFC 9002 §6.1) with RFC 8985's reordering
 * window, the retransmission timeout with backoff (RFC 6298, RFC 9002 §6.2's shape), the loss
 * rate, and what a late ack means (a spurious loss: reordering evidence, the controller's undo,
 * perhaps an RTT sample).
 *
 * The sent ring itself and the per-packet rules (ack settlement, the thresholds, the RTO's
 * oldest packet) run in the engine, over the slot's memory (assembly/sent-ring.ts; `sent` is
 * the host's side of it, ./sent-ring.ts). This module keeps the policy: the delays the rules
 * are given, backoff, the reordering window, late acks. The connection drives it in three places:
 * - `onSent` for each sealed packet;
 * - `onSettled` for each engine Settled record, `onDatagramRead` after each datagram's acks,
 *   `afterAcks` after a receive batch (packets now lost by the thresholds are declared so there);
 * - `onRetransmitTimer` when the Retransmit timer (the connection's timer table) falls due.
 * Settled packets go to the connection's DeliveryHandler, which acts on what they carried.
 *
 * Its numbers live in the connection's state array (congestion/state-layout.ts, RECOVERY_BASE):
 * they are read per receive batch and per sent packet, beside the controller's and the RTT
 * estimator's.
 */
import type { DeliveryHandler, PacketContents } from "../channels/index.js";
import type { CongestionController, SentPacket } from "../congestion/controller.js";
import { ReorderingWindow } from "../congestion/reordering.js";
import type { RttEstimator } from "../congestion/rtt.js";
import { RECOVERY_BASE, RECOVERY_SLOTS } from "../congestion/state-layout.js";
import { PACKET_WINDOW, SettleOutcome, type Engine } from "../engine/abi.js";
import { sequenceGreaterThan } from "../engine/sequence.js";
import type { QlogTracer } from "../trace/qlog.js";
import { LATE_BEHIND } from "../session/late-ack.js";
import { SentRing } from "./sent-ring.js";

// Slots in the state array (literal offsets, so every access stays `s[CONSTANT]`).
/**
 * The RFC 6298 RTO (with backoff) plus the peer's ack delay, as in RFC 9002's PTO (§6.2.1:
 * srtt + max(4 rttvar, G) + max_ack_delay). The peer's delay is assumed to be ours (both ends
 * use the same protocol defaults); without it a pure ack held back by the peer's delay often
 * arrived just after the timer fired.
 */
const RTO_MS = 96;
/** RFC 9002 §6.1.2: max(smoothed RTT, latest RTT) plus the reordering window (an eighth of
 *  it, 9/8 in all, until the path is seen to reorder: ReorderingWindow), at least the timer
 *  granularity (Infinity before any RTT sample: only the packet threshold and the RTO apply). */
const LOSS_DELAY_MS = 97;
/** The peer's recent ack waits (ACK_DELAY reports): rises at once, decays by 1/8 per report
 *  (but for PEER_ACK_DELAY_HOLD reports after a late ack's: onLateAckDelay). */
const PEER_ACK_DELAY_MS = 98;
/** Ack-delay reports after a late ack's during which the tracked wait does not fall. */
const PEER_ACK_DELAY_HOLD = 8;
/** EWMA of lost (1) / delivered (0) per ack-eliciting packet, spurious losses taken back. */
const LOSS_RATE = 99;
if (RTO_MS !== RECOVERY_BASE || LOSS_RATE >= RECOVERY_BASE + RECOVERY_SLOTS) {
  throw new Error("congestion/state-layout.ts: the recovery region does not match loss-recovery.ts");
}

/** kGranularity (RFC 9002 §6.1.2): the smallest loss delay, in ms. */
export const TIMER_GRANULARITY_MS = 1;
/** Slack for comparing an age with the delay a timer was computed from (float rounding). */
const TIME_EPSILON_MS = 1e-6;
/** Loss-rate EWMA gain per ack-eliciting packet outcome. */
const LOSS_GAIN = 1 / 64;
const LOST_MEMORY = 64;
/**
 * The packet threshold once the path has been seen to reorder: the peer's receive window (a
 * packet further behind is dropped there as stale; one closer is still acknowledged, by the
 * header's ack bits or by a LATE_ACK). In effect the time threshold alone (RFC 8985).
 */
const REORDER_MAX_PACKETS = PACKET_WINDOW;
/** kPacketThreshold (RFC 9002 §6.1.1): tolerates mild reordering, yet reacts within a round trip. */
const PACKET_THRESHOLD = 3;

export class LossRecovery {
  /** Every packet in flight; an ack-eliciting one carries its congestion controller's record
   *  (the second per-packet value), a pure ack none. */
  readonly sent: SentRing;
  /** The connection's qlog trace, or undefined: one check per event. */
  trace: QlogTracer | undefined;
  spuriousLosses = 0;
  /** The packet threshold in force: kPacketThreshold (RFC 9002 §6.1.1), or REORDER_MAX_PACKETS
   *  once the path was seen to reorder (onReordering). */
  private packetThreshold = PACKET_THRESHOLD;
  /** A packet declared lost was acked from LATE_BEHIND or more behind the newest acked one:
   *  beyond the header's ack bits (the connection then caps its send window by span). */
  reordersFar = false;
  /** The newest of our packets acknowledged after it was declared lost (-1: none since its
   *  ACK_DELAY was read, onLateAckDelay): that report still tells the RTO how long the peer waits. */
  lateAckedSeq = -1;
  /** Ack-delay reports left before PEER_ACK_DELAY_MS may fall (onPeerAckDelay). */
  private peerAckDelayHold = 0;
  /** Packets acknowledged as of the last RTO expiry (-1: none yet): consecutive expiries back off. */
  private deliveredAtLastRto = -1;
  /** Sequences of recently lost eliciting packets (by sequence mod LOST_MEMORY), to recognize
   *  late acks; -1 = empty. */
  private recentlyLost: Int32Array | undefined;
  /** The controller's records of those packets (same slots), for onSpuriousLoss. */
  private recentlyLostRecords: (SentPacket | undefined)[] | undefined;
  /** How far behind the newest acknowledged packet each was when declared lost (same slots;
   *  0: nothing newer was acknowledged, a loss by the RTO). A late ack of one that was behind
   *  is reordering evidence. */
  private recentlyLostBehind: Uint16Array | undefined;
  /** The time threshold's reordering window (RFC 8985), allocated at the first loss. */
  private reordering: ReorderingWindow | undefined;
  /**
   * The newest packet the datagram being read acknowledged (the last ack record: they come
   * oldest first): -1 before any, NaN if it came in time, else its round trip, as it was acked
   * late (a candidate RTT sample: commitLateRttSample).
   */
  private lastAckLateMs = -1;
  /** A qualifying late-ack round trip waiting for a second one (NaN: none), and when it came. */
  private lateRttHeldMs = NaN;
  private lateRttHeldAt = 0;

  constructor(
    handler: DeliveryHandler<PacketContents, SentPacket>,
    /** The connection's state array (congestion/state-layout.ts). */
    private readonly s: number[],
    /** Where in `s` the connection's Retransmit timer is. */
    private readonly retransmitTimer: number,
    private readonly rtt: RttEstimator,
    private readonly cc: CongestionController,
    /** Our own ack delay (the least the peer is assumed to wait). */
    private readonly ackDelayMs: number,
    /** The engine and the connection's slot in it, where the sent ring lives. */
    engine: Engine,
    slot: number,
  ) {
    this.sent = new SentRing(engine, slot, handler);
    s[LOSS_DELAY_MS] = Infinity;
    this.rttChanged();
  }

  /** The cached RTO (with backoff and the peer's ack delay), ms. */
  get rtoMs(): number {
    return this.s[RTO_MS];
  }

  /** The loss-rate estimate (EWMA per ack-eliciting packet). */
  get lossRate(): number {
    return this.s[LOSS_RATE];
  }

  /** Packet `sequence`, carrying `contents` (and `record`, if ack-eliciting), was sealed at `now`
   *  (the engine entered it in the sent ring; sent.makeRoom came first). */
  onSent(now: number, sequence: number, contents: PacketContents, record: SentPacket | undefined): void {
    this.sent.onSealed(sequence, contents, record);
    const s = this.s;
    // RFC 6298 §5.1: armed by the first ack-eliciting packet in flight.
    if (record !== undefined && s[this.retransmitTimer] === Infinity) s[this.retransmitTimer] = now + s[RTO_MS];
  }

  /**
   * An engine Settled record (or a LATE_ACK frame's ack): the peer acknowledged `sequence`, in
   * flight or (LateAck) after it was declared lost; `largestAcked` is the newest acknowledged
   * sequence once it is counted.
   */
  onSettled(now: number, sequence: number, outcome: SettleOutcome, largestAcked: number): void {
    if (this.trace !== undefined) this.trace.packetAcked(now, sequence);
    this.lastAckLateMs = this.sent.settle(now, sequence, outcome) ? NaN : this.onLateAck(now, sequence, largestAcked);
  }

  /** A datagram's acks are all read. */
  onDatagramRead(now: number): void {
    if (this.lastAckLateMs !== -1) this.commitLateRttSample(now);
  }

  /** An acknowledged ack-eliciting packet, for the loss rate. */
  countDelivered(): void {
    this.s[LOSS_RATE] += LOSS_GAIN * (0 - this.s[LOSS_RATE]);
  }

  /**
   * The handler's onDropped for an ack-eliciting packet: count it in the loss rate and
   * remember it, so that a late ack of it is recognized as a spurious loss.
   */
  onLost(sequence: number, record: SentPacket): void {
    const s = this.s;
    s[LOSS_RATE] += LOSS_GAIN * (1 - s[LOSS_RATE]);
    // Allocated at the first loss: a connection that never loses a packet never needs it.
    const lost = (this.recentlyLost ??= new Int32Array(LOST_MEMORY).fill(-1));
    (this.reordering ??= new ReorderingWindow()).onLoss(this.sent.newestDispatched + 1);
    lost[sequence & (LOST_MEMORY - 1)] = sequence;
    (this.recentlyLostRecords ??= new Array<SentPacket | undefined>(LOST_MEMORY).fill(undefined))[sequence & (LOST_MEMORY - 1)] = record;
    const largest = this.sent.largestAckedSequence;
    (this.recentlyLostBehind ??= new Uint16Array(LOST_MEMORY))[sequence & (LOST_MEMORY - 1)] =
      largest >= 0 && sequenceGreaterThan(largest, sequence) ? (largest - sequence) & 0xffff : 0;
  }

  /** After a receive batch's acks: declare lost what the thresholds now say is, re-arm the timer. */
  afterAcks(now: number): void {
    if (this.lastAckLateMs !== -1) this.commitLateRttSample(now);
    // The acks may end a reordering round or a recovery (the window may shrink).
    if (this.reordering !== undefined && this.reordering.onAcked(this.sent.largestAckedSequence)) this.rttChanged();
    // Nothing in flight (the usual case once a light flow's packet is acknowledged): nothing to
    // declare lost, and the call, which is not inlined here, would box its two delays.
    if (this.sent.inFlight > 0) this.sent.detectLosses(now, this.s[RTO_MS], this.s[LOSS_DELAY_MS], this.packetThreshold);
    this.armLossTimer();
  }

  /**
   * The Retransmit timer. Time threshold first (RFC 9002 §6.1.2); if the oldest packet is also
   * past the RTO, it is a tail loss (nothing newer was acknowledged): RFC 6298 §5.4-5.6, declare
   * it lost (its data is resent in new packets at once) and back off. Returns true if packets
   * were declared lost.
   */
  onRetransmitTimer(now: number): boolean {
    const s = this.s;
    const sent = this.sent;
    // The timer was computed as sentTime + delay; (sentTime + delay) - sentTime can round
    // below delay, so the comparisons here allow for it.
    const rto = s[RTO_MS];
    const rtoDue = this.oldestElicitingSentTime() + rto <= now + TIME_EPSILON_MS;
    const lost = sent.detectLosses(now, rto - TIME_EPSILON_MS, s[LOSS_DELAY_MS] - TIME_EPSILON_MS, this.packetThreshold);
    if (rtoDue) {
      // Back off (RFC 6298 §5.5) only when the previous expiry was not followed by any ack:
      // a single tail loss in a live stream must not double the timer for the next packet
      // (a 30 Hz stream would then wait for the next ack instead of its RTO).
      if (sent.delivered === this.deliveredAtLastRto) {
        this.rtt.onRetransmitTimeout();
        this.rttChanged();
      }
      this.deliveredAtLastRto = sent.delivered;
    }
    this.armLossTimer();
    // Never leave the timer due: a pass that made no progress must not spin.
    if (s[this.retransmitTimer] <= now) s[this.retransmitTimer] = now + TIMER_GRANULARITY_MS;
    return lost > 0;
  }

  /**
   * The peer's reported wait before acknowledging an RTT sample's packet (already capped at
   * the longest its ack policy allows), followed for the RTO.
   */
  onPeerAckDelay(cappedMs: number): void {
    const s = this.s;
    const peer = s[PEER_ACK_DELAY_MS];
    if (cappedMs >= peer) s[PEER_ACK_DELAY_MS] = cappedMs;
    else if (this.peerAckDelayHold > 0) this.peerAckDelayHold--;
    else s[PEER_ACK_DELAY_MS] = peer + (cappedMs - peer) / 8;
  }

  /**
   * The peer's wait (capped) for `lateAckedSeq`, a packet declared lost before this ack came
   * (its ack waited for the peer's next data longer than our RTO allowed). It makes no RTT
   * sample, but the RTO must still learn the wait: otherwise, on a path without jitter, every
   * packet acked by the peer's data is declared lost first, only pure acks (which wait less)
   * give samples, and the RTO stays just short of the data acks for good, resending every
   * packet. The wait is then held for PEER_ACK_DELAY_HOLD reports: a peer whose waits repeat in
   * a pattern (its ticks against our packets' arrivals: 11 ms, 1 ms, 11 ms, ...) would take the
   * RTO below the next long wait after each short one, which with RTTVAR near 0 it misses by a
   * fraction of a millisecond. Held only on this evidence: a hold after every long wait kept
   * the RTO higher on lossy paths too and delayed their tail-loss recovery.
   */
  onLateAckDelay(cappedMs: number): void {
    this.lateAckedSeq = -1;
    this.onPeerAckDelay(cappedMs);
    this.peerAckDelayHold = PEER_ACK_DELAY_HOLD;
    this.rttChanged();
  }

  /** Recompute the cached RTO and loss delay after the RTT estimator changed. */
  rttChanged(): void {
    const rtt = this.rtt;
    const s = this.s;
    // Plus the peer's ack wait (RFC 9002's max_ack_delay): samples no longer include it
    // (ACK_DELAY takes it out). Not the configured piggyback maximum but the waits the peer
    // actually reports: a game's 30 Hz streams wait ~8 ms on a 50 ms path, and allowing the full
    // 15 ms there delays every tail-loss recovery.
    s[RTO_MS] = rtt.rtoMs() + Math.max(this.ackDelayMs, s[PEER_ACK_DELAY_MS]);
    if (rtt.sampleCount === 0) {
      s[LOSS_DELAY_MS] = Infinity;
    } else {
      const base = Math.max(rtt.smoothedMs, rtt.latestMs);
      const r = this.reordering;
      const window = r === undefined ? base / 8 : r.windowMs(rtt.minMs, rtt.smoothedMs, base);
      s[LOSS_DELAY_MS] = Math.max(base + window, TIMER_GRANULARITY_MS);
    }
  }

  /** Report every packet in flight lost (the connection closed). */
  dropAll(now: number): void {
    this.sent.dropAll(now);
  }

  /** Send time of the oldest ack-eliciting packet in flight (Infinity if none). */
  private oldestElicitingSentTime(): number {
    const sequence = this.sent.oldestRecordedSequence();
    return sequence < 0 ? Infinity : this.sent.sentTimeOf(sequence);
  }

  /** Re-arm the loss-detection timer from the oldest ack-eliciting packet in flight. */
  private armLossTimer(): void {
    const d = this.sent;
    const s = this.s;
    const sequence = d.oldestRecordedSequence();
    if (sequence < 0) {
      s[this.retransmitTimer] = Infinity;
      return;
    }
    const oldest = d.sentTimeOf(sequence);
    let at = oldest + s[RTO_MS];
    // RFC 9002 §6.2.1: a packet sent before the newest acknowledged one gets the loss timer
    // at sent time + loss delay. "Before" by sequence: a burst shares one send time.
    const largest = d.largestAckedSequence;
    // (The loss delay is Infinity before the first RTT sample: then only the RTO applies.)
    // Such a packet is not declared lost by the RTO (detectLosses), so its timer is the loss
    // delay alone, longer than the RTO on a path that reorders.
    if (largest >= 0 && sequenceGreaterThan(largest, sequence) && s[LOSS_DELAY_MS] !== Infinity) {
      at = oldest + s[LOSS_DELAY_MS];
    }
    s[this.retransmitTimer] = at;
  }

  /**
   * An ack for a packet already declared lost: the declaration was spurious. If it was an
   * ack-eliciting packet counted in the loss rate, take that loss back out of the estimate (the
   * EWMA's gain per outcome; the outcome is at most a few dozen packets old, so the decay since
   * is negligible). Without this, every timer that fired a little early inflated stats().lossRate.
   * Returns the packet's round trip (NaN if it is not one this connection declared lost).
   */
  private onLateAck(now: number, sequence: number, largestAcked: number): number {
    const slot = sequence & (LOST_MEMORY - 1);
    const lost = this.recentlyLost;
    if (lost === undefined || lost[slot] !== sequence) return NaN;
    lost[slot] = -1;
    this.lateAckedSeq = sequence;
    this.spuriousLosses++;
    if (this.trace !== undefined) this.trace.spuriousLoss(now, sequence);
    const records = this.recentlyLostRecords;
    const record = records?.[slot];
    if (records !== undefined) records[slot] = undefined;
    const behind = this.recentlyLostBehind?.[slot] ?? 0;
    if (behind > 0) this.onReordering(record === undefined || !record.appLimited, sequence, largestAcked);
    if (record !== undefined && this.cc.onSpuriousLoss !== undefined) this.cc.onSpuriousLoss(now, record);
    this.s[LOSS_RATE] = Math.max(0, this.s[LOSS_RATE] - LOSS_GAIN);
    return record !== undefined ? now - record.sentTime : NaN;
  }

  /**
   * A packet declared lost behind a newer acknowledged one arrived after all: the path
   * reorders. As in RFC 8985 (no DupThresh once reordering is seen), the packet threshold goes
   * to the receive window, so only a packet that can no longer be acknowledged is lost by it (a
   * threshold at the distance seen would declare each new, larger distance lost once more).
   * The time threshold's window grows (ReorderingWindow: once per round, by min RTT / 4, up
   * to SRTT; back to min RTT / 4 after 16 recoveries without a spurious loss) only on the
   * evidence of a packet sent while the flow was not application-limited (`grow`): for a
   * light stream a spurious resend costs one small datagram, while a wider window makes each
   * of its real losses wait longer (a 30 Hz stream's tail at 5 % loss grows when datagrams
   * held back now and then widen it).
   */
  private onReordering(grow: boolean, sequence: number, largestAcked: number): void {
    this.packetThreshold = REORDER_MAX_PACKETS;
    if (!this.reordersFar && ((largestAcked - sequence) & 0xffff) >= LATE_BEHIND) this.reordersFar = true;
    if (!grow) return;
    if ((this.reordering ??= new ReorderingWindow()).onSpuriousLoss(this.sent.newestDispatched + 1, this.rtt.minMs, this.rtt.smoothedMs)) this.rttChanged();
  }

  /**
   * Datagram read: a late ack's round trip counts toward an RTT sample only if it was the newest
   * packet the datagram newly acknowledged, and only when the next datagram's newest is late
   * too, soon after (the smaller of the two is taken). On a path slower than the RTO every ack
   * is late, datagram after datagram; a packet acked late because its first ack was lost, or
   * sent before an outage, is a one-off, often the only ack a quiet peer sends for seconds (an
   * idle lossy connection would read RTTs of several times the path's from keepalives acked by
   * the next one).
   */
  private commitLateRttSample(now: number): void {
    const ms = this.lastAckLateMs;
    const held = this.lateRttHeldMs;
    this.lastAckLateMs = -1;
    if (ms !== ms) {
      // The newest ack came in time: the path answers within the RTO.
      this.lateRttHeldMs = NaN;
    } else if (held === held && now - this.lateRttHeldAt <= Math.min(held, ms) / 4) {
      this.lateAckRttSample(now, Math.min(held, ms));
      this.lateRttHeldMs = NaN;
    } else {
      this.lateRttHeldMs = ms;
      this.lateRttHeldAt = now;
    }
  }

  /**
   * A late ack's round trip, as an RTT sample when the RTO cannot otherwise learn the path: with
   * no sample yet, or when the trip is longer than the RTO can back off to (maxRtoMs). Then
   * every packet is declared lost before its ack arrives, every later packet carries resent
   * data (no sample: see the connection's commitRttSample), and the RTO never grows: a path
   * over ~2 s round trip would stall for ever. The sample is valid (a sequence is never sent
   * twice), if long by the peer's ack wait; it is not taken otherwise, since an ordinary late
   * ack (its first acks lost) would lengthen the RTO on every lossy path.
   */
  private lateAckRttSample(now: number, sampleMs: number): void {
    const rtt = this.rtt;
    if (rtt.sampleCount > 0 && sampleMs <= Math.max(rtt.maxRtoMs, rtt.baseRto())) return;
    rtt.onSample(now, sampleMs);
    this.rttChanged();
  }
}
