// Result records (their types and fields: the ABI definition, assembly/abi.generated.ts) and the
// drop counters.

import { counterOffset, maxRecords, recordOffset } from "./layout";

/** Records written by the current processBatch. */
export let recordCount: u32 = 0;

export function resetRecords(): void {
  recordCount = 0;
}

/** Where the next record goes. The capacity rule in processBatch guarantees room. */
@inline
export function nextRecord(): usize {
  const n = recordCount;
  assert(n < maxRecords);
  recordCount = n + 1;
  return recordOffset + (<usize>n << 5);
}

/** Increment the drop counter for a DropReason (u32 per reason at counterOffset). */
@inline
export function countDrop(reason: i32): void {
  const p = counterOffset + (<usize>reason << 2);
  store<u32>(p, load<u32>(p) + 1);
}
