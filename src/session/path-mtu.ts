/**
 * Path MTU discovery for one connection, after RFC 8899 (DPLPMTUD): the connection starts at
 * the configured `mtu` (the base, which every path is assumed to carry: 1200 by default, as in
 * QUIC) and probes upward with padding-only packets, one at a time, up to `maxMtu`.
 *
 * - A probe that is acknowledged raises the datagram size at once. A size whose probe is lost
 *   PROBE_ATTEMPTS times in a row is taken as too big; the search then halves the interval
 *   between the largest size that worked and the smallest that failed, down to SEARCH_STEP.
 * - Probes carry no data, so losing one loses nothing, and the session never counts them as
 *   congestion (RFC 8899 §4.4); they do count as packets dispatched and dropped.
 * - Black hole: when the path shrinks under the size in use, large packets vanish while small
 *   ones get through. BLACK_HOLE_BURSTS losses of packets larger than the base (more on a lossy
 *   path: burstsFor), each found at a different time (one retransmission timeout or one
 *   receive batch is one burst, however many packets it declares lost), with no large packet
 *   acknowledged in between and none sent after them acknowledged, drop the size back to the
 *   base at once (the data in them is resent: every frame is cut to fit the base). Heavy random
 *   loss can look the same (three large packets lost in a row happen 0.8 % of the time at 20 %
 *   loss, hence the longer runs there), so the next probe re-checks
 *   the size that failed: acknowledged, it is taken back (a false alarm cost a few datagrams at
 *   the base size); lost PROBE_ATTEMPTS times, the path did shrink and the search bisects below
 *   it.
 * - A finished search is tried again after RAISE_INTERVAL_MS (RFC 8899's PMTU_RAISE_TIMER:
 *   the path may have grown).
 *
 * - Below the base: a path may not even carry the base (tunnels, misconfigured links, a
 *   middlebox that drops large datagrams). At or below the base, the same rule watches packets
 *   larger than FLOOR_MTU: a run of bursts of lost packets with none as large acknowledged in
 *   between, nor any as large sent as late or later (SIZE_CLASS_BYTES classes of send times,
 *   below), while smaller ones get through, drops the size to FLOOR_MTU (`belowBase`). The
 *   size that failed is re-checked first, then the search bisects between the floor and it.
 *   Started messages with frames too big for the new size are sent again as new messages only
 *   once a probe at or below the base was lost PROBE_ATTEMPTS times (shrinkConfirmed): after a
 *   false alarm some of those frames did arrive, and a second copy would be delivered twice.
 *
 * Fragments are cut for min(current, base) when a message is queued; the channels re-cut the
 * queued ones and resend the started ones that no longer fit when the size falls below the base
 * (ChannelSet.fitTo).
 */

/** Probe losses in a row at one size before it counts as too big (RFC 8899 MAX_PROBES). */
export const PROBE_ATTEMPTS = 3;
/** The search stops when the sizes that worked and failed are this close. */
export const SEARCH_STEP = 16;
/** Bursts of large-packet loss with no large packet acknowledged between that show a black hole. */
export const BLACK_HOLE_BURSTS = 3;
/**
 * On a lossy path more bursts are needed: as many as make a run of random losses that long
 * rarer than this (at the loss rate seen when the run began), up to MAX_BLACK_HOLE_BURSTS.
 */
export const FALSE_BLACK_HOLE_ODDS = 0.001;
export const MAX_BLACK_HOLE_BURSTS = 8;
/**
 * The smallest datagram the connection falls back to under a black hole below the base: 576, the
 * IPv4 datagram every host must accept (RFC 791), less the IPv4 and UDP headers. (Every IPv6 path
 * carries 1280, so only IPv4 and tunnel paths need it.)
 */
export const FLOOR_MTU = 548;
/** Send times of acknowledged packets are kept per class of this many bytes (below the base). */
export const SIZE_CLASS_BYTES = 16;
/** A finished search starts again after this long. */
export const RAISE_INTERVAL_MS = 600_000;

/**
 * Bursts that show a black hole at a background loss rate: BLACK_HOLE_BURSTS, or more when runs
 * of that many random losses are not rare enough (0.3^6 < 0.001: six bursts at 30 % loss).
 */
export function burstsFor(lossRate: number): number {
  if (!(lossRate > 0)) return BLACK_HOLE_BURSTS;
  if (lossRate >= 1) return MAX_BLACK_HOLE_BURSTS;
  const n = Math.ceil(Math.log(FALSE_BLACK_HOLE_ODDS) / Math.log(lossRate) - 1e-9);
  return Math.min(MAX_BLACK_HOLE_BURSTS, Math.max(BLACK_HOLE_BURSTS, n));
}

export class PathMtu {
  /** The largest datagram in use now. */
  current: number;
  /** Smallest size known too big (maxMtu + 1 while none is). */
  private tooBig: number;
  /** Size of the probe in flight (0 = none) and its sequence. */
  private probeSize = 0;
  private probeSequence = -1;
  private lossesAtSize = 0;
  private lastProbedSize = 0;
  private lossBursts = 0;
  /** Bursts the current run needs (burstsFor the loss rate when it began). */
  private burstsNeeded = BLACK_HOLE_BURSTS;
  /** Time of the last burst counted (losses found at one time are one burst). */
  private lastBurstAt = -Infinity;
  /** After a black hole: the size that failed, probed again before any other (0 = none). */
  private recheck = 0;
  /** Send time of the newest acknowledged packet larger than the base (by send time, not
   *  sequence: a 16-bit sequence from minutes ago would look newer after a wrap). */
  private newestLargeAckedSentAt = -Infinity;
  /** After a black hole: tooBig as it was, restored if the re-check shows a false alarm. */
  private tooBigBeforeHole = 0;
  /** After a black hole: no probe until something is acknowledged (an outage looks like a
   *  black hole too, and probes into it would all be lost). */
  awaitingAck = false;
  /** Earliest time of the next probe. */
  private nextProbeAt = 0;
  /** Black holes seen (false alarms included; for tests). */
  blackHoles = 0;
  /** Of them, black holes found at or below the base (the size fell to the floor). */
  blackHolesBelowBase = 0;
  /** The size a black hole below the base falls to: FLOOR_MTU, or the base if that is smaller. */
  readonly floor: number;
  /**
   * Below the base, and a probe no larger than the base (the re-check of the size that failed,
   * or one of the search) was lost PROBE_ATTEMPTS times: the path really does not carry the
   * base (not random loss), so frames cut for it that were lost did not get through and the
   * channels may send their messages again as new ones without the receiver seeing them twice.
   */
  shrinkConfirmed = false;
  /** Below the base: the smallest size lost in the current run of bursts. */
  private runBytes = 0;
  /** Below the base: per size class above the floor, the newest send time of a packet that
   *  size acknowledged (created at the first one). */
  private ackedSentAt: Float64Array | undefined;

  constructor(
    readonly base: number,
    readonly max: number,
  ) {
    this.current = base;
    this.tooBig = max + 1;
    this.floor = Math.min(base, FLOOR_MTU);
  }

  /** Packets larger than this feed onAcked / onLost: the base above it, the floor at or below. */
  get largeFrom(): number {
    return this.current > this.base ? this.base : this.floor;
  }

  /** The size is below the base (a black hole under it was found). */
  get belowBase(): boolean {
    return this.current < this.base;
  }

  /** When probeDue may next return a size (Infinity while a probe is in flight). */
  nextCheckAt(): number {
    return this.probeSize !== 0 ? Infinity : this.nextProbeAt;
  }

  /** The size to probe now (0 if none is due). */
  probeDue(now: number): number {
    if (this.probeSize !== 0 || now < this.nextProbeAt) return 0;
    const size = this.candidate();
    if (size === 0) {
      // Search done: look again later, from the top.
      this.nextProbeAt = now + RAISE_INTERVAL_MS;
      this.tooBig = this.max + 1;
      return 0;
    }
    return size;
  }

  /** The next size to try: the maximum first (most paths carry it), then bisection. */
  private candidate(): number {
    if (this.recheck > 0) return this.recheck;
    if (this.current >= this.max) return 0;
    if (this.tooBig > this.max) return this.max;
    if (this.tooBig - this.current <= SEARCH_STEP) return 0;
    return this.current + Math.floor((this.tooBig - this.current) / 2);
  }

  onProbeSent(sequence: number, size: number): void {
    this.probeSize = size;
    this.probeSequence = sequence;
  }

  /** The probe `sequence` was acknowledged: its size works. */
  onProbeAcked(sequence: number, now: number): void {
    if (sequence !== this.probeSequence) return;
    // (A probe sent before a black hole may be acknowledged after it: not above what failed.)
    if (this.probeSize > this.current && this.probeSize < this.tooBig) this.current = this.probeSize;
    if (this.current >= this.base) this.shrinkConfirmed = false;
    if (this.probeSize === this.recheck) {
      // The black hole was random loss (or an outage) after all: back to where the search was.
      this.current = this.recheck;
      this.shrinkConfirmed = false;
      this.tooBig = Math.max(this.tooBigBeforeHole, this.recheck + 1);
      this.recheck = 0;
    }
    this.lossesAtSize = 0;
    this.lossBursts = 0;
    this.confirmIfDone();
    this.clearProbe(now);
  }

  /** The probe `sequence` was declared lost. */
  onProbeLost(sequence: number, now: number): void {
    if (sequence !== this.probeSequence) return;
    const size = this.probeSize;
    this.lossesAtSize = size === this.lastProbedSize ? this.lossesAtSize + 1 : 1;
    this.lastProbedSize = size;
    if (this.lossesAtSize >= PROBE_ATTEMPTS) {
      this.tooBig = size;
      this.lossesAtSize = 0;
      if (size === this.recheck) this.recheck = 0; // the path did shrink: search below it
      if (size <= this.base && this.current < this.base) this.shrinkConfirmed = true;
    }
    this.confirmIfDone();
    this.clearProbe(now);
  }

  /** A search that ends below the base without the base ever working: frames cut for the base
   *  will not get through either. */
  private confirmIfDone(): void {
    if (this.current < this.base && this.candidate() === 0) this.shrinkConfirmed = true;
  }

  /** No probe in flight; the next one may go at `nextAt`. */
  private clearProbe(nextAt: number): void {
    this.probeSize = 0;
    this.probeSequence = -1;
    this.nextProbeAt = nextAt;
  }

  /** An ack-eliciting packet of `bytes` sent at `sentAt` was acknowledged. */
  onAcked(bytes: number, sentAt: number): void {
    if (this.current <= this.base) return this.onAckedBelowBase(bytes, sentAt);
    if (bytes <= this.base) return;
    this.lossBursts = 0;
    if (sentAt > this.newestLargeAckedSentAt) this.newestLargeAckedSentAt = sentAt;
  }

  /** Something was acknowledged at `now` while awaitingAck: the path works, re-check now. */
  onPathAlive(now: number): void {
    this.awaitingAck = false;
    this.nextProbeAt = now;
  }

  /**
   * An ack-eliciting packet of `bytes` sent at `sentAt` was declared lost at `now`. Returns true
   * on a black hole (the size just dropped back to the base). A large packet lost while one sent
   * as late or later was acknowledged is random loss, not a black hole (losses are declared
   * after the acks of the same batch). `lossRate` is the connection's packet loss rate: the rate
   * when a run of bursts begins sets how long the run must be (burstsNeeded).
   */
  onLost(bytes: number, sentAt: number, now: number, lossRate = 0): boolean {
    if (this.current <= this.base) return this.onLostBelowBase(bytes, sentAt, now, lossRate);
    if (bytes <= this.base) return false;
    if (this.newestLargeAckedSentAt >= sentAt) return false;
    if (now === this.lastBurstAt) return false;
    this.lastBurstAt = now;
    if (this.lossBursts === 0) this.burstsNeeded = burstsFor(lossRate);
    if (++this.lossBursts < this.burstsNeeded) return false;
    this.blackHoles++;
    this.tooBigBeforeHole = this.tooBig;
    this.tooBig = this.current;
    this.recheck = this.current;
    this.current = this.base;
    // A probe still in flight was sent before the black hole: its outcome says nothing now.
    // No probe until onPathAlive.
    this.clearProbe(Infinity);
    this.awaitingAck = true;
    this.lossBursts = 0;
    this.lossesAtSize = 0;
    return true;
  }

  private sizeClass(bytes: number): number {
    return Math.floor((bytes - this.floor - 1) / SIZE_CLASS_BYTES);
  }

  /** At or below the base: remember when a packet of this size last got through. */
  private onAckedBelowBase(bytes: number, sentAt: number): void {
    if (bytes <= this.floor) return;
    if (this.lossBursts > 0 && bytes >= this.runBytes) this.lossBursts = 0;
    const classes = (this.ackedSentAt ??= new Float64Array(this.sizeClass(this.base) + 1).fill(-Infinity));
    const k = this.sizeClass(bytes);
    if (k < classes.length && sentAt > classes[k]) classes[k] = sentAt;
  }

  /**
   * At or below the base: a packet of `bytes` (over the floor) was lost. Random loss if a packet
   * at least as large (its size class or above), sent as late or later, got through; else one
   * more burst of the run. A full run falls to the floor.
   */
  private onLostBelowBase(bytes: number, sentAt: number, now: number, lossRate: number): boolean {
    if (bytes <= this.floor || this.current <= this.floor) return false;
    const classes = this.ackedSentAt;
    if (classes !== undefined) {
      for (let k = Math.min(this.sizeClass(bytes), classes.length - 1); k < classes.length; k++) {
        if (classes[k] >= sentAt) return false;
      }
    }
    if (now === this.lastBurstAt) {
      if (this.lossBursts > 0 && bytes < this.runBytes) this.runBytes = bytes;
      return false;
    }
    this.lastBurstAt = now;
    if (this.lossBursts === 0) {
      this.burstsNeeded = burstsFor(lossRate);
      this.runBytes = bytes;
    } else if (bytes < this.runBytes) this.runBytes = bytes;
    if (++this.lossBursts < this.burstsNeeded) return false;
    this.blackHoles++;
    this.blackHolesBelowBase++;
    this.tooBigBeforeHole = this.tooBig;
    // Sizes from the smallest one lost in the run up fail; that one is re-checked first.
    this.tooBig = Math.min(this.runBytes, this.current);
    this.recheck = this.tooBig;
    this.shrinkConfirmed = false;
    this.current = this.floor;
    this.clearProbe(Infinity);
    this.awaitingAck = true;
    this.lossBursts = 0;
    this.lossesAtSize = 0;
    return true;
  }
}
