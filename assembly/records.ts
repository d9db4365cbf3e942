// Result records: 8 x i32 each (src/engine/abi.ts RecordType / RecordField), and drop counters.

import { counterOffset, maxRecords, recordOffset } from "./layout";

export const RECORD_DATAGRAM_DROPPED: i32 = 1;
export const RECORD_PACKET_RECEIVED: i32 = 2;
export const RECORD_PACKET_ACKED: i32 = 3;
export const RECORD_CONTROL: i32 = 4;
export const RECORD_MESSAGE: i32 = 5;
export const RECORD_HOLD: i32 = 6;
export const RECORD_RELEASE: i32 = 7;
export const RECORD_FRAME_DROPPED: i32 = 8;
export const RECORD_UNKNOWN_PEER: i32 = 9;

/** Records written by the current processBatch. */
export let recordCount: u32 = 0;

export function resetRecords(): void {
  recordCount = 0;
}

@inline
export function writeRecord(type: i32, slot: i32, a: i32, b: i32, c: i32, d: i32, offset: i32, length: i32): void {
  const n = recordCount;
  assert(n < maxRecords); // the capacity rule in processBatch guarantees room
  const p = recordOffset + (<usize>n << 5);
  store<i32>(p, type);
  store<i32>(p, slot, 4);
  store<i32>(p, a, 8);
  store<i32>(p, b, 12);
  store<i32>(p, c, 16);
  store<i32>(p, d, 20);
  store<i32>(p, offset, 24);
  store<i32>(p, length, 28);
  recordCount = n + 1;
}

/** Increment the drop counter for a DropReason (u32 per reason at counterOffset). */
@inline
export function countDrop(reason: i32): void {
  const p = counterOffset + (<usize>reason << 2);
  store<u32>(p, load<u32>(p) + 1);
}
