/**
 * Ack frequency (docs/PROTOCOL.md §3, ACK_FREQUENCY; after QUIC's ACK_FREQUENCY extension): the
 * sender of data tells its peer after how many ack-eliciting packets to ack at once.
 *
 * Why: a receiver acks at once after 8 packets, else after its ack-delay timer. A sender's window
 * must then hold at least 8 + 2 packets, or it stalls waiting for the timer every round trip.
 * On a slow link (1 Mbit/s: 10 packets are 96 ms) that floor stands in the bottleneck's queue,
 * in front of every other message on the connection. The congestion controller decides the
 * threshold it wants (CongestionController.peerAckThreshold: twice per min RTT for the default
 * controller), and this class gets it to the peer and tells the controller when it applies.
 *
 * Both halves of the exchange live here, one instance per connection:
 * - as the receiver of requests: `threshold`, the peer's latest request (8 until it asks);
 * - as the sender of requests: one request in flight at a time, in a DATA packet. Its ack
 *   confirms it; its loss sends it again. A higher threshold is applied to the controller's
 *   window floor at once (a larger floor cannot stall), a lower one only once confirmed.
 *
 * Wire payload after the system type byte: u8 request sequence (wraps; a receiver applies only
 * a request newer than the last it applied, so a reordered or resent old one changes nothing),
 * u8 threshold (1..MAX_ACK_THRESHOLD) | RECEIVE_TIMES_FLAG (src/wire/system.ts).
 *
 * The flag asks the receiver to report receive times (RECEIVE_TIME, PROTOCOL §3) on the packets
 * it sends with frames anyway: the sender asks for them, as for a lower threshold, only while
 * the network limits its flow and its controller takes them (onReceiveTime).
 */
import type { CongestionController } from "../congestion/controller.js";
import { RECEIVE_TIMES_FLAG } from "../wire/system.js";

/** The highest threshold a peer may ask for: well inside the 33 packets one ack covers. */
export const MAX_ACK_THRESHOLD = 16;
/** How long after data last waited for the window or the pacer a lowered threshold holds. */
const BLOCKED_HOLD_MS = 1000;

export class AckFrequency {
  /** Receiver: ack at once after this many ack-eliciting packets (the peer's latest request). */
  threshold: number;
  /** Receiver: the peer's latest request asked for receive times. */
  reportTimes = false;
  /** Receiver: the sequence of the last request applied (-1: none yet). */
  private applied = -1;

  /** Sender: the threshold last asked for (with RECEIVE_TIMES_FLAG if times were asked for),
   *  and the threshold the peer has confirmed. */
  private asked: number;
  private confirmed: number;
  private sequence = 0;
  /** Sender: a request waits for the next DATA packet. */
  due = false;
  /** Sender: the packet sequence carrying the request in flight (-1: none). */
  private packet = -1;
  /** Sender: when data last had to wait for the window or the pacer (set by the session). */
  blockedAt = -Infinity;

  constructor(private readonly defaultThreshold: number) {
    this.threshold = defaultThreshold;
    this.asked = defaultThreshold;
    this.confirmed = defaultThreshold;
  }

  /** Receiver: a request arrived (its threshold byte as sent). Returns false if it is
   *  malformed (the caller counts it). */
  onRequest(sequence: number, code: number): boolean {
    const threshold = code & ~RECEIVE_TIMES_FLAG;
    if (threshold < 1 || threshold > MAX_ACK_THRESHOLD) return false;
    const newer = this.applied < 0 || (((sequence - this.applied) & 0xff) > 0 && ((sequence - this.applied) & 0xff) < 128);
    if (newer) {
      this.applied = sequence;
      this.threshold = threshold;
      this.reportTimes = (code & RECEIVE_TIMES_FLAG) !== 0;
    }
    return true;
  }

  /**
   * Sender, after a receive batch: ask for what the controller now wants, if it changed. Only
   * while the network, not the application, limits the flow (data waited for the window or the
   * pacer within the last BLOCKED_HOLD_MS): a light flow (a 30 Hz stream) never fills a window,
   * and a lower threshold would only turn the peer's acks, which mostly wait for its own next
   * message, into pure acks.
   */
  update(cc: CongestionController, now: number): void {
    if (cc.peerAckThreshold === undefined || this.due || this.packet >= 0) return;
    const blocked = now - this.blockedAt < BLOCKED_HOLD_MS;
    const wanted = blocked ? cc.peerAckThreshold() : this.defaultThreshold;
    // A controller without an ack-clock floor (threshold 0) wants nothing: the default.
    const want = wanted >= 1 ? Math.min(MAX_ACK_THRESHOLD, Math.floor(wanted)) : this.defaultThreshold;
    // Receive times too while the controller says the network limits the flow (not merely
    // that data waited: a game's occasional snapshot burst must not turn reports on and off).
    const code = blocked && cc.wantsReceiveTimes?.() === true ? want | RECEIVE_TIMES_FLAG : want;
    if (code === this.asked) return;
    this.asked = code;
    this.sequence = (this.sequence + 1) & 0xff;
    this.due = true;
    if (want > this.confirmed) cc.setPeerAckThreshold?.(want);
  }

  /** Sender: the request to write (its sequence and threshold). */
  get requestSequence(): number {
    return this.sequence;
  }
  /** Sender: receive times are asked for (the peer's reports are used only then). */
  get asksTimes(): boolean {
    return (this.asked & RECEIVE_TIMES_FLAG) !== 0;
  }

  /** The threshold byte: the threshold, with RECEIVE_TIMES_FLAG if times are asked for. */
  get requestThreshold(): number {
    return this.asked;
  }

  /** Sender: the due request left in the packet `sequence`. */
  onSent(sequence: number): void {
    this.due = false;
    this.packet = sequence;
  }

  /** Sender: packet `sequence` was acknowledged. */
  onAcked(sequence: number, cc: CongestionController): void {
    if (sequence !== this.packet) return;
    this.packet = -1;
    this.confirmed = this.asked & ~RECEIVE_TIMES_FLAG;
    cc.setPeerAckThreshold?.(this.confirmed);
  }

  /** Sender: packet `sequence` was declared lost: the same request goes again. */
  onLost(sequence: number): void {
    if (sequence !== this.packet) return;
    this.packet = -1;
    this.due = true;
  }
}
