/**
 * Sender side of XOR parity (PROTOCOL §3, PARITY): DATA datagrams that carry a frame of an
 * `fec` channel join the open group as they are sealed (their bytes XORed into one running
 * block); once the group holds its size, a parity is due and the connection sends it as the
 * next datagram, through the congestion window and the pacer like any other.
 */
import { DATA_OVERHEAD_BYTES } from "../engine/abi.js";
import { PARITY_FIELDS_BYTES, writeParityFields } from "../wire/system.js";
import { GROUP_SPAN, MAX_MEMBER_BYTES, PARITY_FRAME_OVERHEAD, adaptiveGroupSize } from "./parity-frame.js";

/** Parity datagrams whose outcome is awaited (a power of 2). */
const PARITY_TRACKED = 64;
/** EWMA gain of the parity loss rate per parity outcome. */
const PARITY_LOSS_GAIN = 1 / 64;

export class ParitySender {
  /** 1 for each channel whose frames put a datagram into a group. */
  readonly channels = new Uint8Array(256);
  /** Parity datagrams written, and their bytes (the parity's share of the wire). */
  paritySent = 0;
  parityBytes = 0;
  /** Datagrams that joined a group. */
  members = 0;
  /** A parity waits to be sent (the group is complete). */
  due = false;
  /** Fixed group size, or 0: it follows the measured loss. */
  private readonly fixed: number;
  private block: Uint8Array | undefined;
  private count = 0;
  private target = 0;
  private first = 0;
  private mask = 0;
  private lengthXor = 0;
  private longest = 0;
  /**
   * Loss among parity datagrams (EWMA; NaN before the first outcome). The connection's own
   * loss estimate cannot see the losses parity repaired (those packets are acknowledged), and
   * a parity is never itself repaired: its losses measure the path.
   */
  parityLossRate = NaN;
  /** Sequences of parity datagrams awaiting an outcome, by sequence mod 64 (-1: none). */
  private readonly outstanding = new Int32Array(PARITY_TRACKED).fill(-1);
  /** Parity datagrams declared lost, by sequence mod 64, until a late ack undoes it (-1: none). */
  private readonly declaredLost = new Int32Array(PARITY_TRACKED).fill(-1);

  /** `options[c]`: channel c's validated fec option (0 off, -1 adaptive, 1..16 fixed). */
  constructor(options: readonly number[]) {
    let fixed = 0;
    options.forEach((o, c) => {
      if (o === 0) return;
      this.channels[c] = 1;
      // Several fixed sizes: the smallest, so every such channel gets at least its protection.
      if (o > 0 && (fixed === 0 || o < fixed)) fixed = o;
    });
    this.fixed = fixed;
  }

  /** Any channel asks for parity. */
  static wanted(options: readonly number[]): boolean {
    return options.some((o) => o !== 0);
  }

  /** The group size a new group starts with at this measured loss rate (0: no parity). */
  groupSize(lossRate: number): number {
    if (this.fixed > 0) return this.fixed;
    // The larger of the two: the connection's own estimate misses what parity repaired, and the
    // parity estimate stops moving while parity is off (NaN before the first parity).
    const parityLoss = this.parityLossRate;
    return adaptiveGroupSize(parityLoss > lossRate ? parityLoss : lossRate);
  }

  /** The parity just written went out as DATA packet `sequence`. */
  onParitySent(sequence: number, lossRate: number): void {
    if (this.parityLossRate !== this.parityLossRate) this.parityLossRate = lossRate;
    this.outstanding[sequence & (PARITY_TRACKED - 1)] = sequence;
  }

  /** Packet `sequence` (with no frames of its own) was acknowledged or declared lost. */
  onOutcome(sequence: number, lost: boolean): void {
    const i = sequence & (PARITY_TRACKED - 1);
    if (this.outstanding[i] !== sequence) return;
    this.outstanding[i] = -1;
    if (lost) this.declaredLost[i] = sequence;
    const x = lost ? 1 : 0;
    const r = this.parityLossRate;
    // Starts from the connection's estimate at the first parity (see groupSize), not from 0.
    this.parityLossRate = r + PARITY_LOSS_GAIN * (x - r);
  }

  /**
   * A DATA datagram `bytes[offset, offset + length)` with sequence `sequence` was sealed and
   * carries a frame of an fec channel: it joins the open group, or starts one.
   */
  onSealed(bytes: Uint8Array, offset: number, length: number, sequence: number, lossRate: number, mtu: number): void {
    // While a parity waits, datagrams go unprotected (there is one running block): the parity
    // leaves right after its group's last datagram unless the window holds everything back.
    if (this.due) return;
    // Its parity datagram would not fit the path: a datagram this long is not protected.
    if (length > mtu - DATA_OVERHEAD_BYTES - PARITY_FRAME_OVERHEAD) return;
    let span = 0;
    if (this.count === 0) {
      const k = this.groupSize(lossRate);
      if (k === 0) return;
      this.target = k;
      this.first = sequence;
    } else {
      span = (sequence - this.first) & 0xffff;
      if (span >= GROUP_SPAN) {
        // Too far from the group's first datagram for the mask (other packets went between):
        // the group closes as it is, and this datagram waits for the next.
        this.due = true;
        return;
      }
    }
    const block = (this.block ??= new Uint8Array(MAX_MEMBER_BYTES));
    for (let i = 0; i < length; i++) block[i] ^= bytes[offset + i];
    if (length > this.longest) this.longest = length;
    this.lengthXor ^= length;
    this.mask |= 1 << span;
    this.members++;
    if (++this.count >= this.target) this.due = true;
  }

  /**
   * Write the due PARITY system message (type byte onwards) at `bytes[at]`, room permitting;
   * returns its length (0: nothing due). The group is then closed.
   */
  writeMessage(bytes: Uint8Array, at: number, room: number): number {
    if (!this.due || this.count === 0) {
      this.due = false;
      return 0;
    }
    const n = this.longest;
    const length = PARITY_FIELDS_BYTES + n;
    if (length > room) {
      // The path shrank under the group (a failed MTU probe): drop it rather than send a part.
      this.reset();
      return 0;
    }
    writeParityFields(bytes, at, this.first, this.mask, this.lengthXor);
    bytes.set((this.block as Uint8Array).subarray(0, n), at + PARITY_FIELDS_BYTES);
    this.reset();
    this.paritySent++;
    return length;
  }

  /**
   * Packet `sequence` was acknowledged. If it is a parity declared lost, the declaration was
   * spurious: a parity that leaves last, behind its group, often waits for the peer's next
   * packet to be acknowledged, past the loss timer. The loss it counted is taken back.
   */
  onAcked(sequence: number): void {
    const i = sequence & (PARITY_TRACKED - 1);
    if (this.declaredLost[i] !== sequence) return;
    this.declaredLost[i] = -1;
    this.parityLossRate = Math.max(0, this.parityLossRate - PARITY_LOSS_GAIN);
  }

  private reset(): void {
    if (this.block !== undefined) this.block.fill(0, 0, this.longest);
    this.count = 0;
    this.mask = 0;
    this.lengthXor = 0;
    this.longest = 0;
    this.due = false;
  }
}
