/**
 * The promise each delivery mode makes, checked at every arrival (either end):
 * - reliable-ordered: message n of a stream is the n-th to arrive (exactly once, in order);
 * - reliable-unordered: each message at most once (all of them, checked when the life ends);
 * - unreliable-sequenced: never one older than, or the same as, one already delivered;
 * - latest-state: a key's value only if newer than the newest delivered for that key.
 * And every message intact (its checksum) and on the stream and life it names.
 */
import type { Failures, LifeLedger } from "./ledger.js";
import { STREAM_NAMES } from "./ledger.js";
import { decodeSoak, Stream, type StreamId } from "./payload.js";

/** ackwire channels (DEFAULT_CHANNELS) each stream travels on. */
export const Channel = { Ordered: 0, Sequenced: 1, Unordered: 3, State: 5, Bulk: 6 } as const;

/** The stream a message on `channel` belongs to, going up (client -> server) or down. */
export function streamOf(channel: number, up: boolean): StreamId | undefined {
  switch (channel) {
    case Channel.Ordered:
      return up ? Stream.UpOrdered : Stream.DownOrdered;
    case Channel.Sequenced:
      return up ? Stream.UpMove : Stream.DownSnapshot;
    case Channel.Unordered:
      return up ? Stream.UpUnordered : undefined;
    case Channel.State:
      return up ? Stream.UpState : undefined;
    case Channel.Bulk:
      return up ? Stream.UpBulk : Stream.DownBulk;
    default:
      return undefined;
  }
}

/** Checks one arrival against the life's ledger; returns false (and adds a failure) if it breaks a promise. */
export function checkArrival(ledger: LifeLedger, channel: number, up: boolean, data: Uint8Array, now: number, failures: Failures): boolean {
  const where = `life ${ledger.id} ${up ? "up" : "down"} channel ${channel}`;
  const stream = streamOf(channel, up);
  const m = decodeSoak(data);
  if (stream === undefined || m === undefined || m.life !== ledger.id || m.stream !== stream) {
    failures.add(`${where}: ${m === undefined ? "a corrupt message" : `a message of life ${m.life} stream ${m.stream}`} (${data.length} B)`);
    return false;
  }
  const name = STREAM_NAMES[stream];
  switch (stream) {
    case Stream.UpOrdered:
    case Stream.UpBulk:
    case Stream.DownOrdered:
    case Stream.DownBulk: {
      const expected = ledger.count(ledger.arrived, stream);
      if (m.seq !== expected) {
        failures.add(`${where}: ${name} message ${m.seq} arrived where ${expected} was next`);
        return false;
      }
      break;
    }
    case Stream.UpUnordered:
      if (ledger.unorderedSeen.has(m.seq)) {
        failures.add(`${where}: ${name} message ${m.seq} arrived twice`);
        return false;
      }
      ledger.unorderedSeen.add(m.seq);
      break;
    case Stream.UpMove:
    case Stream.DownSnapshot: {
      const newest = ledger.newest.get(stream);
      if (newest !== undefined && m.seq <= newest) {
        failures.add(`${where}: ${name} message ${m.seq} arrived after ${newest}`);
        return false;
      }
      ledger.newest.set(stream, m.seq);
      break;
    }
    case Stream.UpState: {
      const held = ledger.serverState.get(m.key);
      if (held !== undefined && m.seq <= held) {
        failures.add(`${where}: key ${m.key} version ${m.seq} arrived after version ${held}`);
        return false;
      }
      ledger.serverState.set(m.key, m.seq);
      break;
    }
  }
  ledger.bump(ledger.arrived, stream);
  if (stream === Stream.UpOrdered || stream === Stream.UpUnordered || stream === Stream.UpBulk) ledger.upProgressAt = now;
  else if (stream === Stream.DownOrdered || stream === Stream.DownBulk) ledger.downProgressAt = now;
  return true;
}
