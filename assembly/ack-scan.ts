// The scan of an incoming ack + ackBits against our sent-packet buffer: every sequence we sent
// that is still in flight is reported exactly once — clearing its entry makes it so — oldest
// first (ack-32 .. ack-1, then ack). Acks of sequences not in flight are no-ops.

import { storePacketAckedRecord, PACKET_WINDOW, SLOT_SENT_WINDOW, WINDOW_ENTRY_PRESENT } from "./abi.generated";
import { nextRecord } from "./records";

@inline
function entry(slot: usize, sequence: u32): usize {
  return slot + SLOT_SENT_WINDOW + (<usize>(sequence & (PACKET_WINDOW - 1)) << 2);
}

@inline
function ackOne(slotBase: usize, slotIndex: i32, sequence: u32): void {
  const e = entry(slotBase, sequence);
  if (load<u32>(e) == (WINDOW_ENTRY_PRESENT | sequence)) {
    store<u32>(e, 0);
    storePacketAckedRecord(nextRecord(), slotIndex, <i32>sequence);
  }
}

export function scanAcks(slotBase: usize, slotIndex: i32, ack: u32, ackBits: u32): void {
  let bits = ackBits;
  while (bits != 0) {
    // Highest set bit first: bit i is sequence ack - 1 - i, so this walks oldest to newest.
    const i = 31 - clz<u32>(bits);
    bits ^= <u32>1 << i;
    ackOne(slotBase, slotIndex, (ack - 1 - i) & 0xffff);
  }
  ackOne(slotBase, slotIndex, ack);
}

/** Remember an outgoing sequence as in flight (overwrites whatever was 256 packets ago). */
@inline
export function rememberSent(slotBase: usize, sequence: u32): void {
  store<u32>(entry(slotBase, sequence), WINDOW_ENTRY_PRESENT | sequence);
}
