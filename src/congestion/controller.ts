/**
 * The congestion-controller interface the session drives, and the factory.
 *
 * Contract (all times in ms on the caller's clock, `now` passed in, never read from a clock):
 *
 *   // before sending a datagram of `bytes`:
 *   if (cc.canSend(inFlight, bytes) && cc.nextSendTime(now) <= now) {
 *     const record = cc.onSent(now, bytes, inFlight, reusable?);   // keep `record` with the packet
 *     inFlight += bytes;
 *   }
 *   // when packets are acked (all the acks one datagram brought, oldest first):
 *   //   for each: inFlight -= bytes; acks.add(record);   then: cc.onAcks(now, acks, inFlight); acks.clear();
 *   // when a packet is declared lost:       inFlight -= bytes; cc.onLoss(now, record, inFlight);
 *   // when the send queue ran empty while canSend() was true:  cc.onAppLimited(now, inFlight);
 *
 * - `inFlight` is always the session's count of bytes sent and neither acked nor declared lost,
 *   EXCLUDING the packets the call is about (so: before adding it in onSent, after removing them
 *   in onAcks/onLoss). The controller does not keep its own copy; the session is the one owner.
 * - Each packet is in exactly one onAcks summary or one onLoss. A packet acked after it was
 *   declared lost is not reported to onAcks; the session reports it to the optional
 *   `onSpuriousLoss` instead (so a controller can undo its reaction), and never counts it as
 *   delivered.
 * - onAcks comes once per datagram that acknowledged anything, not once per packet: a bulk
 *   flow's ack acknowledges a dozen packets or more. What a controller does per packet inside
 *   the call is its own (the default one keeps a rate sample per packet and runs its state
 *   machine once).
 * - `nextSendTime(now)` is the pacing gate: the earliest time the next datagram may leave.
 *   A result <= now means "now". It is always finite. It must be consulted only when the session
 *   actually has something to send; idle time is what lets light traffic pass undelayed.
 * - RTT: a packet's round trip is now - its sentTime (the newest's is the shortest of the
 *   datagram's) unless the summary's `rttMs` overrides it. Karn's rule is the caller's: never
 *   feed a sample for a packet that was transmitted twice (ackwire never does: a sequence is
 *   sent once, data is resent in new packets).
 * - Each call reflects `now`; time must not run backwards between calls (earlier values are
 *   tolerated and treated as "no time passed").
 */
import { BinaryController, type BinaryConfig } from "./binary.js";
import { DefaultController, type DefaultConfig } from "./default.js";
import { CongestionConfigError } from "./errors.js";
import { FixedRateController, NoController, type FixedConfig } from "./fixed.js";

/**
 * Per-packet state the controller fills in `onSent` and reads back in `onAcks` / `onLoss`.
 * The session stores it with its sent-packet record and must not modify it.
 */
export interface SentPacket {
  /** `now` of onSent. */
  sentTime: number;
  /** Size in bytes as passed to onSent. */
  bytes: number;
  /** Bytes in flight when the packet was sent, this packet included. */
  inFlightAtSend: number;
  /** Controller's delivered-bytes counter when the packet was sent (delivery-rate estimation). */
  delivered: number;
  /** Time of the last delivery before this packet was sent. */
  deliveredTime: number;
  /** Send time of the first packet of the current send interval (delivery-rate estimation). */
  firstSentTime: number;
  /** True if the sender was application-limited when this packet was sent. */
  appLimited: boolean;
  /** The peer's receive time (its clock, ms) of the newest delivery reported when this packet
   *  was sent (NaN: none known; see onReceiveTime). */
  deliveredRecvTime: number;
  /** The controller's delivered-bytes counter at that report: a report-timed sample counts
   *  bytes from one report to another, as it counts time. */
  deliveredAtReport: number;
  /**
   * -1, unless the controller counted this packet's loss in its figures (bbr-lite: the number
   * of the loss event that counted it; onSpuriousLoss takes back only such a loss, and only
   * while those figures are the current round's). A lost packet's record is kept, not recycled.
   */
  lossEvent: number;
}

/**
 * What one datagram's acks acknowledged, for `onAcks`: the session adds each packet's record as
 * its ack is read (oldest first) and hands the list over once the datagram's acks are all read.
 */
export class AckSummary {
  /** The acked packets' records, oldest first; the last is the newest. */
  readonly packets: SentPacket[] = [];
  /** Their bytes, as passed to onSent. */
  bytes = 0;
  /** NaN: each packet's round trip is now - sentTime; else this (a caller's override). */
  rttMs = NaN;

  add(packet: SentPacket): void {
    this.bytes += packet.bytes;
    this.packets.push(packet);
  }

  clear(): void {
    this.bytes = 0;
    this.packets.length = 0;
    this.rttMs = NaN;
  }
}

/** Reports one packet's ack to `cc` on its own (a summary of one). */
export function ackPacket(cc: CongestionController, now: number, packet: SentPacket, inFlightBytes: number, rttMs = NaN): void {
  const acks = new AckSummary();
  acks.add(packet);
  acks.rttMs = rttMs;
  cc.onAcks(now, acks, inFlightBytes);
}

export interface CongestionController {
  /** Algorithm name, e.g. "bbr-lite", "binary", "fixed", "none". */
  readonly name: string;
  /**
   * Fills and returns `out` if given (a record the caller recycles: no allocation per packet),
   * else a new record. The caller must not reuse a record while the controller may still hold
   * it: only after onAcks (controllers keep no reference to acked packets; a lost packet's record
   * may be kept for onSpuriousLoss and must not be recycled).
   */
  onSent(now: number, bytes: number, inFlightBytes: number, out?: SentPacket): SentPacket;
  /** The packets one datagram acknowledged (never empty). The summary is the caller's: read it
   *  during the call only. */
  onAcks(now: number, acks: AckSummary, inFlightBytes: number): void;
  onLoss(now: number, packet: SentPacket, inFlightBytes: number): void;
  /**
   * Optional: `packet`, reported to onLoss earlier, has been acknowledged after all (the loss
   * declaration was spurious, e.g. an ack delayed past the loss timer). A controller may undo
   * the reaction that loss caused (in the manner of Linux's F-RTO / RACK undo; RFC 9002 has no
   * undo). Called at most once per packet, only for packets reported to onLoss.
   */
  onSpuriousLoss?(now: number, packet: SentPacket): void;
  /**
   * Optional, with setPeerAckThreshold: how many ack-eliciting packets the controller wants the
   * peer to receive before it acks at once (1..16). The session asks the peer for it (the
   * ACK_FREQUENCY system message, docs/PROTOCOL.md §3) whenever it changes.
   */
  peerAckThreshold?(): number;
  /**
   * Optional: the threshold the peer applies now. Raised at once when more is asked (waiting
   * for more packets than assumed cannot stall the sender: its window floor grows first);
   * lowered only once the peer has received the request.
   */
  setPeerAckThreshold?(packets: number): void;
  /**
   * Optional: the packet just sent emptied the session's send queue. Unlike onAppLimited it
   * marks no delivery-rate sample; it tells a controller that the application, not the network,
   * is limiting the flow right now (a 30 Hz stream does this with every packet).
   */
  onSendQueueEmpty?(now: number): void;
  /**
   * Optional: the connection moved to another address (a NAT rebinding, a network switch).
   * What the controller reports of the old path's capacity should not outlive it; its model
   * adapts through its own filters.
   */
  onPathChange?(now: number): void;
  /**
   * Optional: the flow fills a slow path, where a datagram above the base size costs more delay
   * (its serialization, in front of every later datagram) than its saved header bytes are
   * worth. The session then sends datagrams of the base size only and does not probe the path
   * MTU upward.
   */
  slowPath?(): boolean;
  /**
   * Optional: after the acks of one datagram, the peer's receive time (its own clock, ms,
   * unwrapped: only differences count) of the newest packet that datagram newly acknowledged.
   * The session asks the peer for these (ACK_FREQUENCY, docs/PROTOCOL.md §3) while the network
   * limits the flow, and they ride only on packets that carry frames anyway. Delivery-rate
   * samples timed by them measure the path's delivery at the receiver: acks compressed on the
   * way back (behind the peer's own upload in its queue) cannot inflate them.
   */
  onReceiveTime?(now: number, receiveTimeMs: number): void;
  /** Optional, with onReceiveTime: does the controller want receive-time reports now (its flow
   *  is network-limited)? The session asks the peer for them only then. */
  wantsReceiveTimes?(): boolean;
  /** The session had nothing to send although it was allowed to: samples taken now are app-limited. */
  onAppLimited(now: number, inFlightBytes: number): void;
  /** Window check: may a datagram of `bytes` be sent with `inFlightBytes` already in flight? */
  canSend(inFlightBytes: number, bytes: number): boolean;
  /** Pacing: earliest time the next datagram may leave; <= now means now. Always finite. */
  nextSendTime(now: number): number;
  /** Congestion window in bytes (Infinity if the algorithm has none). */
  windowBytes(): number;
  /** Current pacing rate in bytes per second (Infinity if unpaced). */
  pacingRateBytesPerSec(): number;
  /** Estimated path bandwidth in bits per second (0 while unknown). */
  bandwidthEstimateBps(): number;
}

export type CongestionAlgorithm = "default" | "binary" | "fixed" | "none";

export interface CongestionConfig {
  algorithm?: CongestionAlgorithm;
  default?: DefaultConfig;
  binary?: BinaryConfig;
  fixed?: FixedConfig;
}

/** Builds the controller named by `config.algorithm` (default: "default"). `state`: the
 *  connection's state array (state-layout.ts) the default controller keeps its numbers in. */
export function createController(config: CongestionConfig = {}, state?: number[]): CongestionController {
  const algorithm = config.algorithm ?? "default";
  switch (algorithm) {
    case "default":
      return new DefaultController(config.default, state);
    case "binary":
      return new BinaryController(config.binary);
    case "fixed":
      return new FixedRateController(config.fixed);
    case "none":
      return new NoController();
    default:
      throw new CongestionConfigError(
        `unknown congestion algorithm ${JSON.stringify(algorithm)}; use "default", "binary", "fixed" or "none"`,
      );
  }
}

/** Fills a SentPacket (`out`, or a new one) for controllers that do not estimate delivery rate. */
export function plainSentPacket(now: number, bytes: number, inFlightBytes: number, out?: SentPacket): SentPacket {
  return fillSentPacket(out, now, bytes, inFlightBytes + bytes, 0, now, now, false);
}

/** Writes the fields into `out` (or a new record) and returns it. */
export function fillSentPacket(
  out: SentPacket | undefined,
  sentTime: number,
  bytes: number,
  inFlightAtSend: number,
  delivered: number,
  deliveredTime: number,
  firstSentTime: number,
  appLimited: boolean,
): SentPacket {
  if (out === undefined) {
    return { sentTime, bytes, inFlightAtSend, delivered, deliveredTime, firstSentTime, appLimited, deliveredRecvTime: NaN, deliveredAtReport: 0, lossEvent: -1 };
  }
  out.sentTime = sentTime;
  out.bytes = bytes;
  out.inFlightAtSend = inFlightAtSend;
  out.delivered = delivered;
  out.deliveredTime = deliveredTime;
  out.firstSentTime = firstSentTime;
  out.appLimited = appLimited;
  out.deliveredRecvTime = NaN;
  out.deliveredAtReport = 0;
  out.lossEvent = -1;
  return out;
}
