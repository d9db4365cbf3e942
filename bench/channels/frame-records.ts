/**
 * Engine-like Message records for the plain, unfragmented frames of one packet, decoded here
 * without an engine (the channel benches feed ChannelSet.onRecord with them, as the engine's
 * batch would). Frame layout: docs/PROTOCOL.md §3 (channel, flags, u16 messageSeq, u16 length).
 * `slot` is the connection slot the records name. Returns how many records were written.
 */
import { RECORD_INTS, writeMessageRecord } from "../../src/engine/abi.js";

export function frameRecords(bytes: Uint8Array, start: number, end: number, records: Int32Array, slot = 0): number {
  let p = start;
  let n = 0;
  while (p < end && (n + 1) * RECORD_INTS <= records.length) {
    const length = bytes[p + 4] | (bytes[p + 5] << 8);
    writeMessageRecord(records, n * RECORD_INTS, slot, bytes[p], bytes[p + 2] | (bytes[p + 3] << 8), 0, 0, p + 6, length);
    n++;
    p += 6 + length;
  }
  return n;
}
