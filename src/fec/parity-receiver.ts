/**
 * Receiver side of XOR parity (PROTOCOL §3, PARITY). Once the peer has sent a parity, the
 * connection makes one of these and keeps a copy of each DATA datagram it accepts in a ring of GROUP_SPAN slots (by
 * sequence), at most GROUP_SPAN x 1500 bytes. A parity whose group lacks exactly one datagram
 * rebuilds it; the connection reads the rebuilt bytes as a datagram that has just arrived, so
 * the CRC, the duplicate filter and every frame check apply to it as to any other.
 */
import { PacketType } from "../engine/abi.js";
import { sequenceGreaterThan } from "../engine/sequence.js";
import { readDataSequence, readPacketType } from "../wire/datagram.js";
import { PARITY_FIELDS_BYTES, readParityFirst, readParityLengthXor, readParityMask, SYSTEM_PARITY } from "../wire/system.js";
import { GROUP_SPAN, MAX_MEMBER_BYTES, MIN_MEMBER_BYTES } from "./parity-frame.js";

/** What a parity frame came to. */
export const enum ParityOutcome {
  /** One datagram of the group was missing: rebuilt (see `rebuilt()`). */
  Rebuilt,
  /** Nothing missing: the parity was not needed. */
  Complete,
  /** Two or more missing: XOR cannot rebuild them (the sender resends as usual). */
  Unrecoverable,
  /** The group starts before this side kept copies, or its slots hold newer datagrams now. */
  TooOld,
  /** Malformed, or the group does not match what was received: a counted drop. */
  Invalid,
}

interface Slot {
  sequence: number;
  length: number;
  bytes: Uint8Array;
}

export class ParityReceiver {
  /** Outcomes so far. */
  rebuiltCount = 0;
  complete = 0;
  unrecoverable = 0;
  tooOld = 0;
  invalid = 0;
  private readonly slots: Slot[] = Array.from({ length: GROUP_SPAN }, () => ({ sequence: -1, length: 0, bytes: new Uint8Array(0) }));
  private readonly out = new Uint8Array(MAX_MEMBER_BYTES);
  private outLength = 0;

  /**
   * Made with the connection when its own channels use parity (peers usually configure the
   * same channels), else when the first parity arrives: groups starting before `keptFrom` (the
   * sequence after the newest packet received then) predate the copies. -1: none do.
   */
  constructor(private readonly keptFrom: number) {}

  /** A DATA datagram `bytes[at, at + length)` with `sequence` was accepted. */
  remember(bytes: Uint8Array, at: number, length: number, sequence: number): void {
    if (length > MAX_MEMBER_BYTES) return;
    const slot = this.slots[sequence & (GROUP_SPAN - 1)];
    // An older packet arriving late must not evict a newer one from its slot.
    if (slot.sequence >= 0 && sequenceGreaterThan(slot.sequence, sequence)) return;
    if (slot.bytes.length < length) slot.bytes = new Uint8Array(Math.min(MAX_MEMBER_BYTES, Math.max(length, 2 * slot.bytes.length)));
    slot.bytes.set(bytes.subarray(at, at + length));
    slot.length = length;
    slot.sequence = sequence;
  }

  /**
   * A PARITY system message at `bytes[at, at + length)` (type byte included). On Rebuilt, the
   * datagram is `rebuilt()` until the next call.
   */
  onParity(bytes: Uint8Array, at: number, length: number): ParityOutcome {
    const n = length - PARITY_FIELDS_BYTES;
    if (bytes[at] !== SYSTEM_PARITY || n < MIN_MEMBER_BYTES || n > MAX_MEMBER_BYTES) return this.count(ParityOutcome.Invalid);
    const first = readParityFirst(bytes, at);
    const mask = readParityMask(bytes, at);
    const lengthXor = readParityLengthXor(bytes, at);
    if ((mask & 1) === 0) return this.count(ParityOutcome.Invalid);
    const slots = this.slots;
    if (this.keptFrom >= 0 && sequenceGreaterThan(this.keptFrom, first)) return this.count(ParityOutcome.TooOld);
    let missing = -1;
    let missingCount = 0;
    let lengths = lengthXor;
    for (let i = 0; i < GROUP_SPAN; i++) {
      if ((mask & (1 << i)) === 0) continue;
      const sequence = (first + i) & 0xffff;
      const slot = slots[sequence & (GROUP_SPAN - 1)];
      if (slot.sequence === sequence) {
        // A member longer than the parity: this parity is not of what we received.
        if (slot.length > n) return this.count(ParityOutcome.Invalid);
        lengths ^= slot.length;
      } else if (slot.sequence >= 0 && sequenceGreaterThan(slot.sequence, sequence)) {
        return this.count(ParityOutcome.TooOld);
      } else {
        missing = sequence;
        missingCount++;
      }
    }
    if (missingCount === 0) return this.count(ParityOutcome.Complete);
    if (missingCount > 1) return this.count(ParityOutcome.Unrecoverable);
    if (lengths < MIN_MEMBER_BYTES || lengths > n) return this.count(ParityOutcome.Invalid);
    const out = this.out;
    out.set(bytes.subarray(at + PARITY_FIELDS_BYTES, at + length));
    for (let i = 0; i < GROUP_SPAN; i++) {
      if ((mask & (1 << i)) === 0) continue;
      const sequence = (first + i) & 0xffff;
      if (sequence === missing) continue;
      const slot = slots[sequence & (GROUP_SPAN - 1)];
      const b = slot.bytes;
      for (let k = 0; k < slot.length; k++) out[k] ^= b[k];
    }
    // The padding beyond the rebuilt datagram's length must have cancelled out, and its header
    // must name the missing DATA packet: else the parity does not match this group.
    for (let k = lengths; k < n; k++) if (out[k] !== 0) return this.count(ParityOutcome.Invalid);
    if (readPacketType(out, 0) !== PacketType.Data || readDataSequence(out, 0) !== missing) return this.count(ParityOutcome.Invalid);
    this.outLength = lengths;
    return this.count(ParityOutcome.Rebuilt);
  }

  /** The datagram the last Rebuilt outcome rebuilt (valid until the next onParity). */
  rebuilt(): Uint8Array {
    return this.out.subarray(0, this.outLength);
  }

  /** Bytes held for copies (bounded by GROUP_SPAN x 1500). */
  heldBytes(): number {
    let sum = 0;
    for (const s of this.slots) sum += s.bytes.length;
    return sum;
  }

  private count(outcome: ParityOutcome): ParityOutcome {
    switch (outcome) {
      case ParityOutcome.Rebuilt:
        this.rebuiltCount++;
        break;
      case ParityOutcome.Complete:
        this.complete++;
        break;
      case ParityOutcome.Unrecoverable:
        this.unrecoverable++;
        break;
      case ParityOutcome.TooOld:
        this.tooOld++;
        break;
      default:
        this.invalid++;
    }
    return outcome;
  }
}
