// The received-packet window: a bitmap of the PACKET_WINDOW sequences up to the newest
// received, bit seq % PACKET_WINDOW. Bits are cleared as the newest moves past them, so a set
// bit always stands for the sequence of the window with that index. Ack + ackBits are read
// from it.

import { sequenceDistance, sequenceGreaterThan } from "./sequence";
import {
  DROP_DUPLICATE_PACKET, DROP_STALE_PACKET, PACKET_WINDOW, SLOT_FLAGS, SLOT_FLAG_RECEIVED, SLOT_MOST_RECENT_RECEIVED,
  SLOT_RECEIVED_WINDOW,
} from "./abi.generated";

/** receiveCheck's answer when the packet may be accepted; otherwise it returns a DropReason. */
export const ACCEPT: i32 = 0;

@inline
function word(slot: usize, sequence: u32): usize {
  return slot + SLOT_RECEIVED_WINDOW + (<usize>((sequence & (PACKET_WINDOW - 1)) >> 5) << 2);
}

@inline
function received(slot: usize, sequence: u32): bool {
  return ((load<u32>(word(slot, sequence)) >> (sequence & 31)) & 1) != 0;
}

@inline
function setBit(slot: usize, sequence: u32): void {
  const w = word(slot, sequence);
  store<u32>(w, load<u32>(w) | (<u32>1 << (sequence & 31)));
}

@inline
function clearBit(slot: usize, sequence: u32): void {
  const w = word(slot, sequence);
  store<u32>(w, load<u32>(w) & ~(<u32>1 << (sequence & 31)));
}

@inline
export function hasReceived(slot: usize): bool {
  return (load<u32>(slot, SLOT_FLAGS) & SLOT_FLAG_RECEIVED) != 0;
}

/** May `sequence` be accepted? ACCEPT, DROP_STALE_PACKET (a window or more behind the newest) or DROP_DUPLICATE_PACKET. */
export function receiveCheck(slot: usize, sequence: u32): i32 {
  if (!hasReceived(slot)) return ACCEPT;
  const newest = load<u32>(slot, SLOT_MOST_RECENT_RECEIVED);
  if (sequenceGreaterThan(sequence, newest)) return ACCEPT;
  if (sequenceDistance(newest, sequence) >= PACKET_WINDOW) return DROP_STALE_PACKET;
  return received(slot, sequence) ? DROP_DUPLICATE_PACKET : ACCEPT;
}

/**
 * Record `sequence` as received. When it is newer than the newest, the bits it skips over
 * (newest+1 .. sequence-1) are cleared: they now stand for sequences not received.
 */
export function receiveRecord(slot: usize, sequence: u32): void {
  if (!hasReceived(slot)) {
    store<u32>(slot, SLOT_FLAG_RECEIVED, SLOT_FLAGS);
    store<u32>(slot, sequence, SLOT_MOST_RECENT_RECEIVED);
  } else {
    const newest = load<u32>(slot, SLOT_MOST_RECENT_RECEIVED);
    if (sequenceGreaterThan(sequence, newest)) {
      const gap = sequenceDistance(sequence, newest);
      if (gap >= PACKET_WINDOW) {
        memory.fill(slot + SLOT_RECEIVED_WINDOW, 0, PACKET_WINDOW >> 3);
      } else {
        for (let k: u32 = 1; k < gap; k++) clearBit(slot, newest + k);
      }
      store<u32>(slot, sequence, SLOT_MOST_RECENT_RECEIVED);
    }
  }
  setBit(slot, sequence);
}

@inline
export function mostRecentReceived(slot: usize): u32 {
  return load<u32>(slot, SLOT_MOST_RECENT_RECEIVED);
}

/** Bit i set <=> sequence (ack - 1 - i) was received, i = 0..31 (docs/PROTOCOL.md §2); `ack`
 *  is the newest received, so all 32 lie in the window. */
export function ackBits(slot: usize, ack: u32): u32 {
  let bits: u32 = 0;
  for (let i: u32 = 0; i < 32; i++) {
    if (received(slot, ack - 1 - i)) bits |= <u32>1 << i;
  }
  return bits;
}
