/**
 * Copies of received payloads out of the engine's arena (internal to src/channels).
 *
 * A delivered message must outlive the arena (it is reused by the next batch), so its bytes are
 * copied into memory of its own. A new ArrayBuffer per message was the largest cost of the
 * receive path (an off-heap allocation for anything over 64 bytes), so the unfragmented messages
 * of one datagram share one: when the first of them is copied, the engine records that follow it
 * are looked at, and the run of unfragmented Message/Hold records of the same connection whose
 * payloads follow each other within one datagram's length is measured; one buffer of exactly
 * their total length is allocated, and each message, when its own record is handled, is copied
 * into the next part of it and delivered as a view of that part.
 *
 * So a kept message may keep its datagram's other messages alive (at most one datagram's payload
 * bytes, all from the same peer, in the same connection), and `data.byteOffset` may be non-zero.
 * Nothing is ever copied before its own record is handled: records past the end of the batch
 * (left from an earlier one) may be counted in the run's length, which then only leaves
 * unused bytes at the end of the buffer, never other bytes.
 *
 * On Bun (JavaScriptCore) each message is instead copied into a buffer of its own (see
 * own-copies.ts): there the shared run costs more than it saves.
 */
import { MAX_DATAGRAM_BYTES, RECORD_INTS, RecordField, RecordType } from "../engine/abi.js";
import { ownSmallCopies } from "./own-copies.js";


/**
 * A view of `length` bytes of `bytes` from `offset`. `subarray` looks up the species constructor
 * on every call, about twice the cost of this on Bun and Node (measured for transmit views);
 * per received message that showed as ~10 % of a Bun aggregated-100 B profile.
 */
function view(bytes: Uint8Array, offset: number, length: number): Uint8Array {
  return new Uint8Array(bytes.buffer, bytes.byteOffset + offset, length);
}

/** One copy of arena bytes into a new buffer of its own. */
export function copyOut(arena: Uint8Array, offset: number, length: number): Uint8Array {
  // slice() allocates without zero-filling and needs no subarray view; only on a plain
  // Uint8Array (a Node Buffer's slice() is a view, and a subclass would build its own kind).
  if (arena.constructor === Uint8Array) return arena.slice(offset, offset + length);
  const out = new Uint8Array(length);
  if (length > 0) out.set(view(arena, offset, length));
  return out;
}

// The run being handed out (one at a time in the process: runs are used up within one
// synchronous dispatch of a batch, so interleaving connections only ever start new runs). A run
// left unfinished (its last records dropped, or past the batch) keeps these references until the
// next run starts: at most one records array, arena and ChannelSet in the whole process.
let runOwner: object | undefined;
let runRecords: Int32Array | undefined;
let runArena: Uint8Array | undefined;
let runSlot = -1;
/** Records [runNext, runEnd) may take the rest of runBuffer. */
let runNext = 0;
let runEnd = 0;
let runBuffer: Uint8Array | undefined;
/** runBuffer's own ArrayBuffer (runBuffer starts at 0 of it) and runArena's buffer and offset,
 *  kept so a message's copy makes its two views without reading a `.buffer` getter. */
let runStore: ArrayBuffer | undefined;
let runArenaStore: ArrayBufferLike | undefined;
let runArenaOffset = 0;
let runPos = 0;

function endRun(): void {
  runOwner = undefined;
  runRecords = undefined;
  runArena = undefined;
  runBuffer = undefined;
  runStore = undefined;
  runArenaStore = undefined;
}

/**
 * Copy the payload of the engine record at `index` (an unfragmented Message or Hold of channel
 * set `owner`, payload arena[offset .. offset + length), already bounds-checked) out of the arena.
 * `channelCount` bounds the channels a following record may name to join the run.
 */
export function copyRecordPayload(
  owner: object,
  records: Int32Array,
  index: number,
  arena: Uint8Array,
  offset: number,
  length: number,
  channelCount: number,
): Uint8Array {
  if (length === 0) return new Uint8Array(0);
  if (ownSmallCopies()) return copyOut(arena, offset, length);
  const slot = records[index + RecordField.Slot];
  let buffer = runBuffer;
  if (
    buffer !== undefined &&
    owner === runOwner &&
    records === runRecords &&
    arena === runArena &&
    slot === runSlot &&
    index >= runNext &&
    index < runEnd &&
    runPos + length <= buffer.length
  ) {
    // The next message of the run (records skipped since, e.g. dropped duplicates, leave their
    // share unused at the end).
    const at = runPos;
    const store = runStore!;
    buffer.set(new Uint8Array(runArenaStore!, runArenaOffset + offset, length), at);
    runPos = at + length;
    runNext = index + RECORD_INTS;
    if (runPos === buffer.length || runNext >= runEnd) endRun();
    return new Uint8Array(store, at, length);
  }
  // A new run: this record and the unfragmented messages of the same connection right after it.
  let total = length;
  let end = offset + length;
  const limit = Math.min(offset + MAX_DATAGRAM_BYTES, arena.length);
  let next = index + RECORD_INTS;
  while (next + RECORD_INTS <= records.length) {
    const type = records[next + RecordField.Type];
    if (type !== RecordType.Message && type !== RecordType.Hold) break;
    if (records[next + RecordField.Slot] !== slot || records[next + RecordField.C] !== 0) break;
    const channel = records[next + RecordField.A];
    if (channel < 0 || channel >= channelCount) break;
    const o = records[next + RecordField.Offset];
    const l = records[next + RecordField.Length];
    if (o < end || l <= 0 || o + l > limit) break;
    total += l;
    end = o + l;
    next += RECORD_INTS;
  }
  if (total === length) return copyOut(arena, offset, length);
  const store = new ArrayBuffer(total);
  buffer = new Uint8Array(store);
  const arenaStore = arena.buffer;
  buffer.set(new Uint8Array(arenaStore, arena.byteOffset + offset, length), 0);
  runStore = store;
  runArenaStore = arenaStore;
  runArenaOffset = arena.byteOffset;
  runOwner = owner;
  runRecords = records;
  runArena = arena;
  runSlot = slot;
  runNext = index + RECORD_INTS;
  runEnd = next;
  runBuffer = buffer;
  runPos = length;
  return new Uint8Array(store, 0, length);
}
