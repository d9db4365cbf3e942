/**
 * One packed array of doubles (doubles.ts) per connection, holding the numeric state of every
 * per-connection estimator at fixed offsets: the default controller's, the RTT estimator's,
 * the ping tracker's, loss recovery's, and a region its owner (the session's connection) keeps its own numbers
 * in. With a thousand connections a datagram finds its connection cold in cache; one array
 * allocated in one piece keeps what an ack touches on a few neighbouring lines instead of one
 * array object plus its elements per module, each somewhere else.
 *
 * Fixed (literal) offsets, not a base field per module: every access stays `s[CONSTANT]`.
 * A module constructed on its own (tests, tools) allocates an array reaching to the end of its
 * region and uses the same offsets.
 *
 * Order: the slots an ack touches first; the ping rings (one slot per sample) last.
 */
import { doubleArray } from "./doubles.js";

/** DefaultController (default.ts, its `S` slots; checked there). */
export const CONTROLLER_BASE = 0;
export const CONTROLLER_SLOTS = 48;
/** RttEstimator (rtt.ts). */
export const RTT_BASE = 48;
export const RTT_SLOTS = 16;
/** Free for the array's owner: the connection's per-datagram numbers. */
export const OWNER_BASE = 64;
export const OWNER_SLOTS = 32;
/** LossRecovery (recovery/loss-recovery.ts): the RTO, the loss delay, the loss rate. */
export const RECOVERY_BASE = 96;
export const RECOVERY_SLOTS = 8;
/** PingTracker (ping.ts): its two windows' bookkeeping, then their interleaved rings. */
export const PING_META_BASE = 104;
export const PING_META_SLOTS = 8;
export const PING_RING_BASE = 112;
export const PING_RING_SLOTS = 128;
export const STATE_SLOTS = 240;

/** A zeroed state array for one connection (each module initializes its own slots). */
export function newStateArray(): number[] {
  return doubleArray(STATE_SLOTS, 0);
}
