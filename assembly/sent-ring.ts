// The sent-packet ring of a slot and everything that settles it: the entry a sealed packet
// leaves, the ack scan (each packet in flight is settled exactly once, oldest first), and loss
// detection by the packet and time thresholds and the retransmission timeout.
//
// One u32 per sequence (SLOT_SENT_WINDOW, index seq % PACKET_WINDOW) holds the sequence, the
// packet's size and its state bits, so the ack scan reads one cache line per 16 packets; the
// send times are a parallel f64 array (SLOT_SENT_TIMES). The host keeps what each packet
// carried under the same sequence and acts on the Settled records and the lost lists.
//
// What counts as "before" is the sequence, not the send time: packets sealed in one host pass
// share one `now`, and a send-time rule would declare a whole burst lost at its first ack.

import {
  storeSettledRecord, PACKET_WINDOW, SENT_BYTES_SHIFT, SENT_ELICITING, SENT_LOST, SETTLED_ACKED, SETTLED_LATE_ACK,
  SETTLED_NONE, SLOT_BYTES_IN_FLIGHT, SLOT_DELIVERED, SLOT_DISPATCHED, SLOT_DROPPED, SLOT_IN_FLIGHT, SLOT_LARGEST_ACKED,
  SLOT_LATE_ACKS, SLOT_NEXT_SEND_SEQUENCE, SLOT_OLDEST_SENT, SLOT_SENT_TIMES, SLOT_SENT_WINDOW, WINDOW_ENTRY_PRESENT,
} from "./abi.generated";
import { nextRecord } from "./records";
import { sequenceGreaterThan } from "./sequence";

const SEQUENCE_MASK: u32 = 0xffff;
const BYTES_MASK: u32 = 0x7ff;
/** An in-flight entry's sequence and in-flight bit: what a settlement compares. */
const IN_FLIGHT_MATCH: u32 = WINDOW_ENTRY_PRESENT | SEQUENCE_MASK;
/** A declared-lost entry's sequence and lost bit. */
const LOST_MATCH: u32 = SENT_LOST | SEQUENCE_MASK;

@inline
function entryAt(slotBase: usize, sequence: u32): usize {
  return slotBase + SLOT_SENT_WINDOW + (<usize>(sequence & (PACKET_WINDOW - 1)) << 2);
}

@inline
function timeAt(slotBase: usize, sequence: u32): usize {
  return slotBase + SLOT_SENT_TIMES + (<usize>(sequence & (PACKET_WINDOW - 1)) << 3);
}

@inline
function add(slotBase: usize, field: usize, delta: u32): void {
  store<u32>(slotBase + field, load<u32>(slotBase + field) + delta);
}

@inline
function subtract(slotBase: usize, field: usize, delta: u32): void {
  store<u32>(slotBase + field, load<u32>(slotBase + field) - delta);
}

/** The newest acknowledged sequence, or -1 before any ack. */
@inline
function largestAcked(slotBase: usize): i32 {
  const v = load<u32>(slotBase, SLOT_LARGEST_ACKED);
  return v == 0 ? -1 : <i32>(v & SEQUENCE_MASK);
}

/** Whether the entry the next sealed packet takes is free of a packet in flight (else the
 *  host must evictNext first: sealData refuses). */
export function nextEntryFree(slotBase: usize): bool {
  const sequence = (load<u32>(slotBase, SLOT_NEXT_SEND_SEQUENCE) - PACKET_WINDOW) & SEQUENCE_MASK;
  return (load<u32>(entryAt(slotBase, sequence)) & IN_FLIGHT_MATCH) != (WINDOW_ENTRY_PRESENT | sequence);
}

/** Record packet `sequence` (`bytes` long, sealed at `now`) as in flight (its entry is free:
 *  nextEntryFree). */
export function rememberSent(slotBase: usize, sequence: u32, bytes: u32, now: f64, eliciting: bool): void {
  if (load<u32>(slotBase, SLOT_DISPATCHED) == 0) store<u32>(slotBase, sequence, SLOT_OLDEST_SENT);
  store<u32>(entryAt(slotBase, sequence), sequence | (bytes << SENT_BYTES_SHIFT) | (eliciting ? SENT_ELICITING : 0) | WINDOW_ENTRY_PRESENT);
  store<f64>(timeAt(slotBase, sequence), now);
  add(slotBase, SLOT_DISPATCHED, 1);
  add(slotBase, SLOT_IN_FLIGHT, 1);
  add(slotBase, SLOT_BYTES_IN_FLIGHT, bytes);
}

/** Settle `sequence` as acknowledged: a SettleOutcome. */
export function settleAck(slotBase: usize, sequence: u32): i32 {
  const e = entryAt(slotBase, sequence);
  const entry = load<u32>(e);
  if ((entry & IN_FLIGHT_MATCH) == (WINDOW_ENTRY_PRESENT | sequence)) {
    store<u32>(e, 0);
    subtract(slotBase, SLOT_IN_FLIGHT, 1);
    subtract(slotBase, SLOT_BYTES_IN_FLIGHT, (entry >> SENT_BYTES_SHIFT) & BYTES_MASK);
    add(slotBase, SLOT_DELIVERED, 1);
    const largest = largestAcked(slotBase);
    if (largest < 0 || sequenceGreaterThan(sequence, <u32>largest)) store<u32>(slotBase, WINDOW_ENTRY_PRESENT | sequence, SLOT_LARGEST_ACKED);
    return SETTLED_ACKED;
  }
  if ((entry & LOST_MATCH) == (SENT_LOST | sequence)) {
    store<u32>(e, 0);
    add(slotBase, SLOT_LATE_ACKS, 1);
    return SETTLED_LATE_ACK;
  }
  return SETTLED_NONE;
}

@inline
function settleAndRecord(slotBase: usize, slotIndex: i32, sequence: u32): void {
  const outcome = settleAck(slotBase, sequence);
  if (outcome != SETTLED_NONE) storeSettledRecord(nextRecord(), slotIndex, <i32>sequence, outcome, largestAcked(slotBase));
}

/** The scan of an incoming ack + ackBits: oldest first (ack-32 .. ack-1, then ack). */
export function scanAcks(slotBase: usize, slotIndex: i32, ack: u32, ackBits: u32): void {
  let bits = ackBits;
  while (bits != 0) {
    // Highest set bit first: bit i is sequence ack - 1 - i, so this walks oldest to newest.
    const i = 31 - clz<u32>(bits);
    bits ^= <u32>1 << i;
    settleAndRecord(slotBase, slotIndex, (ack - 1 - i) & SEQUENCE_MASK);
  }
  settleAndRecord(slotBase, slotIndex, ack);
}

/**
 * Move OldestSent over settled entries to the oldest packet in flight (InFlight > 0). Every
 * packet in flight lies in the PACKET_WINDOW sequences before the next one (sealData makes
 * room), so the walk starts there at the earliest and ends within them.
 */
@inline
function oldestInFlight(slotBase: usize): u32 {
  let oldest = load<u32>(slotBase, SLOT_OLDEST_SENT);
  const next = load<u32>(slotBase, SLOT_NEXT_SEND_SEQUENCE);
  if (((next - oldest) & SEQUENCE_MASK) > PACKET_WINDOW) oldest = (next - PACKET_WINDOW) & SEQUENCE_MASK;
  for (let i: u32 = 0; i < PACKET_WINDOW; i++) {
    if ((load<u32>(entryAt(slotBase, oldest)) & IN_FLIGHT_MATCH) == (WINDOW_ENTRY_PRESENT | oldest)) break;
    oldest = (oldest + 1) & SEQUENCE_MASK;
  }
  store<u32>(slotBase, oldest, SLOT_OLDEST_SENT);
  return oldest;
}

/** Declare the in-flight `sequence` lost and append it to the lost list at `list`, entry `n`. */
@inline
function declareLost(slotBase: usize, sequence: u32, list: usize, n: u32): void {
  const e = entryAt(slotBase, sequence);
  const entry = load<u32>(e);
  store<u32>(e, sequence | SENT_LOST);
  subtract(slotBase, SLOT_IN_FLIGHT, 1);
  subtract(slotBase, SLOT_BYTES_IN_FLIGHT, (entry >> SENT_BYTES_SHIFT) & BYTES_MASK);
  add(slotBase, SLOT_DROPPED, 1);
  store<i32>(list + (<usize>n << 2), <i32>sequence);
}

/**
 * Declare lost, oldest first, every packet in flight that was sent before the newest
 * acknowledged one and is `packetThreshold` sequences behind it or `timeThresholdMs` old
 * (RFC 9002 §6.1), and every other one `timeoutMs` old (the RTO; -Infinity: all of them). A
 * packet before an acknowledged one is judged by the thresholds alone while the time threshold
 * is known: on a reordering path it waits longer than the RTO. Writes the sequences as i32s at `list`;
 * returns how many (at most PACKET_WINDOW).
 */
export function detectLosses(slotBase: usize, now: f64, timeoutMs: f64, timeThresholdMs: f64, packetThreshold: u32, list: usize): i32 {
  const largest = largestAcked(slotBase);
  let n: u32 = 0;
  while (load<u32>(slotBase, SLOT_IN_FLIGHT) > 0) {
    const sequence = oldestInFlight(slotBase);
    const age = now - load<f64>(timeAt(slotBase, sequence));
    const beforeLargest = largest >= 0 && sequenceGreaterThan(<u32>largest, sequence);
    const byThreshold = beforeLargest && ((((<u32>largest - sequence) & SEQUENCE_MASK) >= packetThreshold) || age >= timeThresholdMs);
    // (A timeout of -Infinity declares every packet lost, whatever its send time: dropAll.)
    const byTimeout = (age >= timeoutMs || timeoutMs == -Infinity) && !(beforeLargest && timeThresholdMs != Infinity);
    if (!byThreshold && !byTimeout) break;
    declareLost(slotBase, sequence, list, n++);
  }
  return <i32>n;
}

/** If the entry the next sealed packet takes is still in flight (256 packets old), declare it
 *  lost to make room: its sequence, else -1. */
export function evictNext(slotBase: usize, list: usize): i32 {
  if (nextEntryFree(slotBase)) return -1;
  const sequence = (load<u32>(slotBase, SLOT_NEXT_SEND_SEQUENCE) - PACKET_WINDOW) & SEQUENCE_MASK;
  declareLost(slotBase, sequence, list, 0);
  return <i32>sequence;
}
