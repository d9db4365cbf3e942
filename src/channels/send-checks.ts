/**
 * The checks of send()'s arguments that need no channel state, shared by the channel set and the
 * worker's front end (src/worker/connection.ts), which throws the same errors on the caller's
 * thread before the message crosses to the network worker.
 */
import { InvalidDeadlineError, InvalidDelayError, InvalidKeyError } from "./errors.js";

/** Throws InvalidKeyError unless `key` fits the channel: an integer in 0..2^32-1 on a
 *  latest-state channel, absent on any other. */
export function checkSendKey(channel: number, latestState: boolean, key: unknown): void {
  if (latestState) {
    if (typeof key !== "number" || !Number.isInteger(key) || key < 0 || key > 0xffffffff) {
      throw new InvalidKeyError(channel, `latest-state sends need { key } as an integer in 0..4294967295, got ${String(key)}`);
    }
  } else if (key !== undefined) {
    throw new InvalidKeyError(channel, `a key is only meaningful on latest-state channels; drop { key } or use a latest-state channel`);
  }
}

/** Throws InvalidDelayError unless `delayMs` is absent or a finite number >= 0. */
export function checkSendDelay(delayMs: unknown): void {
  if (delayMs !== undefined && !(typeof delayMs === "number" && Number.isFinite(delayMs) && delayMs >= 0)) {
    throw new InvalidDelayError(delayMs as number);
  }
}

/**
 * Throws InvalidDeadlineError unless `deadlineMs` is absent or a finite number > 0, and absent
 * on a latest-state channel (where the key's current value is what is resent: a deadline would
 * give up a value the peer must still get).
 */
export function checkSendDeadline(deadlineMs: unknown, latestState: boolean): void {
  if (deadlineMs === undefined) return;
  if (!(typeof deadlineMs === "number" && Number.isFinite(deadlineMs) && deadlineMs > 0)) throw new InvalidDeadlineError(deadlineMs as number);
  if (latestState) {
    throw new InvalidDeadlineError(
      deadlineMs,
      `deadlineMs is not taken on latest-state channels: the key's current value is resent until a newer one replaces it; ` +
        `send the key's next value instead of setting a deadline`,
    );
  }
}
