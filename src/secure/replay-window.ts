/**
 * Which packet numbers a receiver has already accepted (RFC 6479's sliding window, as IPsec and
 * WireGuard keep it): the highest accepted number and a bitmap of the WINDOW numbers below it.
 * A sealed datagram captured on the path and sent again authenticates like the original, so
 * without this it would be delivered twice; the inner ackwire datagram may be a control packet
 * that is not sequenced (DISCONNECT, REBIND), so the engine's own duplicate check is not enough.
 *
 * Numbers more than WINDOW below the highest are refused as too old: reordering deeper than
 * 1024 datagrams is treated as loss.
 */
export const REPLAY_WINDOW = 1024;
const WORDS = REPLAY_WINDOW / 32;

export class ReplayWindow {
  /** Highest accepted packet number; -1 before the first. */
  #highest = -1;
  /** Bit (pn mod WINDOW) is set when pn, within WINDOW of #highest, was accepted. */
  readonly #bits = new Uint32Array(WORDS);

  /** Whether `pn` could still be accepted (not seen, not too old). Cheap: check before decrypting. */
  fresh(pn: number): boolean {
    if (pn > this.#highest) return true;
    if (pn <= this.#highest - REPLAY_WINDOW) return false;
    const slot = pn % REPLAY_WINDOW;
    return (this.#bits[slot >>> 5]! & (1 << (slot & 31))) === 0;
  }

  /** Records an authenticated `pn` (the caller checked fresh() first). */
  accept(pn: number): void {
    if (pn > this.#highest) {
      // Clear the slots of the numbers skipped over (highest+1 .. pn-1) and of pn itself: they
      // held numbers WINDOW or more below pn. A jump of WINDOW or more clears everything.
      if (pn - this.#highest >= REPLAY_WINDOW) this.#bits.fill(0);
      else for (let n = this.#highest + 1; n <= pn; n++) this.#clear(n % REPLAY_WINDOW);
      this.#highest = pn;
    }
    const slot = pn % REPLAY_WINDOW;
    this.#bits[slot >>> 5]! |= 1 << (slot & 31);
  }

  get highest(): number {
    return this.#highest;
  }

  #clear(slot: number): void {
    this.#bits[slot >>> 5]! &= ~(1 << (slot & 31));
  }
}
