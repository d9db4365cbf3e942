// The received-packet sequence buffer: 256 u32 entries indexed by sequence % 256,
// each 0 (empty) or 0x10000 | the sequence received there. Ack + ackBits are read from it.

import { sequenceDistance, sequenceGreaterThan } from "./sequence";
import {
  DROP_DUPLICATE_PACKET, DROP_STALE_PACKET, PACKET_WINDOW, SLOT_FLAGS, SLOT_FLAG_RECEIVED, SLOT_MOST_RECENT_RECEIVED,
  SLOT_RECEIVED_WINDOW, WINDOW_ENTRY_PRESENT,
} from "./abi.generated";

/** receiveCheck's answer when the packet may be accepted; otherwise it returns a DropReason. */
export const ACCEPT: i32 = 0;

@inline
function entry(slot: usize, sequence: u32): usize {
  return slot + SLOT_RECEIVED_WINDOW + (<usize>(sequence & (PACKET_WINDOW - 1)) << 2);
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
  return load<u32>(entry(slot, sequence)) == (WINDOW_ENTRY_PRESENT | sequence) ? DROP_DUPLICATE_PACKET : ACCEPT;
}

/**
 * Record `sequence` as received. When it is newer than the newest, the entries it skips over
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
        memory.fill(slot + SLOT_RECEIVED_WINDOW, 0, PACKET_WINDOW << 2);
      } else {
        for (let k: u32 = 1; k < gap; k++) store<u32>(entry(slot, newest + k), 0);
      }
      store<u32>(slot, sequence, SLOT_MOST_RECENT_RECEIVED);
    }
  }
  store<u32>(entry(slot, sequence), WINDOW_ENTRY_PRESENT | sequence);
}

@inline
export function mostRecentReceived(slot: usize): u32 {
  return load<u32>(slot, SLOT_MOST_RECENT_RECEIVED);
}

/** Bit i set <=> sequence (ack - 1 - i) was received, i = 0..31 (docs/PROTOCOL.md §2). */
export function ackBits(slot: usize, ack: u32): u32 {
  let bits: u32 = 0;
  for (let i: u32 = 0; i < 32; i++) {
    const s = (ack - 1 - i) & 0xffff;
    if (load<u32>(entry(slot, s)) == (WINDOW_ENTRY_PRESENT | s)) bits |= <u32>1 << i;
  }
  return bits;
}
