/** One application message on its way out (internal to src/channels). */
import type { DeliveryKind } from "../engine/abi.js";

/** Per-fragment send state. */
export const enum FragState {
  /** Not yet written, or lost and waiting to be resent. */
  NeedsSend = 0,
  InFlight = 1,
  Acked = 2,
}

export class OutMessage {
  /** Message sequence of fragment 0, unwrapped (wire value is `& 0xffff`); -1 until started. */
  seqBase = -1;
  /** First-time send cursor: fragments below it were written at least once. */
  nextFrag = 0;
  acked = 0;
  /** Lowest fragment index not yet acknowledged (for the flow-control window). */
  firstUnacked = 0;
  /** All fragments acknowledged (reliable) or everything settled (unreliable). */
  done = false;
  /** No longer wanted: superseded (sequenced / LatestState) or the connection closed. */
  abandoned = false;
  /** Unreliable receipt already reported lost. */
  lossReported = false;
  states: Uint8Array;

  constructor(
    readonly channel: number,
    readonly kind: DeliveryKind,
    public data: Uint8Array,
    public fragCount: number,
    readonly fragPayload: number,
    readonly key: number,
    /** LatestState: the key's version this transmission carries. */
    public version: number,
    /** Receipt id, 0 = none. */
    public receipt: number,
  ) {
    this.states = new Uint8Array(fragCount);
  }

  /** Replace the payload of a message that has not started (LatestState coalescing). */
  replace(data: Uint8Array, fragCount: number, version: number): void {
    this.data = data;
    this.version = version;
    if (fragCount !== this.fragCount) {
      this.fragCount = fragCount;
      this.states = new Uint8Array(fragCount);
    }
  }

  get fragmented(): boolean {
    return this.fragCount > 1;
  }

  /** Payload bytes of fragment `i`. */
  fragmentStart(i: number): number {
    return i * this.fragPayload;
  }
  fragmentLength(i: number): number {
    if (this.fragCount === 1) return this.data.length;
    return Math.min(this.fragPayload, this.data.length - i * this.fragPayload);
  }

  /** Started and still holding the channel's flow-control window. */
  get live(): boolean {
    return this.seqBase !== -1 && !this.done && !this.abandoned;
  }
}
