/**
 * What the soak knows about each client life, written by both ends (they run in one process):
 * how many messages each stream sent and how many arrived, the latest-state values on each
 * side, and how the life ended. Every check the soak makes reads from here, and every broken
 * promise is a line in `Failures`.
 */
import type { Connection } from "../../src/index.js";
import { Stream, type StreamId } from "./payload.js";

/** Failure lines kept in full (the count goes on). */
const MAX_FAILURE_LINES = 50;

export class Failures {
  readonly lines: string[] = [];
  count = 0;

  add(line: string): void {
    this.count++;
    if (this.lines.length < MAX_FAILURE_LINES) this.lines.push(line);
  }
}

/** How a life ends: a goodbye after everything reliable arrived, or gone without one. */
export type LifeEnd = "graceful" | "vanished";

export class LifeLedger {
  readonly id: number;
  readonly end: LifeEnd;
  /** Per stream: messages sent and messages that arrived (checked) at the other end. */
  readonly sent = new Map<StreamId, number>();
  readonly arrived = new Map<StreamId, number>();
  /** Newest sequence that arrived per sequenced stream (moves and snapshots). */
  readonly newest = new Map<StreamId, number>();
  /** Unordered stream: sequences that arrived (each at most once). */
  readonly unorderedSeen = new Set<number>();
  /** Latest-state values: the client's newest version per key, and the server's. */
  readonly clientState = new Map<number, number>();
  readonly serverState = new Map<number, number>();
  /** The server's side of this life, from its "connection" event on. */
  serverConnection: Connection | undefined;
  connectedAt = 0;
  /** From here on neither end sends (the life is ending). */
  leaving = false;
  /** When a reliable message last arrived at each end (for the stall check). */
  upProgressAt = 0;
  downProgressAt = 0;
  stallReported = false;
  /** The server's disconnect reason and when it came. */
  serverReason: string | undefined;
  serverEndedAt: number | undefined;

  constructor(id: number, end: LifeEnd) {
    this.id = id;
    this.end = end;
  }

  count(map: Map<StreamId, number>, stream: StreamId): number {
    return map.get(stream) ?? 0;
  }

  bump(map: Map<StreamId, number>, stream: StreamId): number {
    const n = (map.get(stream) ?? 0) + 1;
    map.set(stream, n);
    return n - 1;
  }

  /** Reliable streams whose sent and arrived counts differ, as "name sent/arrived" words. */
  unsettled(): string[] {
    const out: string[] = [];
    for (const stream of RELIABLE_STREAMS) {
      const s = this.count(this.sent, stream);
      const a = this.count(this.arrived, stream);
      if (s !== a) out.push(`${STREAM_NAMES[stream]} ${a}/${s}`);
    }
    for (const [key, version] of this.clientState) {
      if (this.serverState.get(key) !== version) out.push(`state key ${key} at ${this.serverState.get(key) ?? "none"} of ${version}`);
    }
    return out;
  }
}

export const RELIABLE_STREAMS: readonly StreamId[] = [Stream.UpOrdered, Stream.UpUnordered, Stream.UpBulk, Stream.DownOrdered, Stream.DownBulk];

export const STREAM_NAMES: Record<StreamId, string> = {
  [Stream.UpOrdered]: "up-ordered",
  [Stream.UpUnordered]: "up-unordered",
  [Stream.UpMove]: "up-move",
  [Stream.UpState]: "up-state",
  [Stream.UpBulk]: "up-bulk",
  [Stream.DownOrdered]: "down-ordered",
  [Stream.DownSnapshot]: "down-snapshot",
  [Stream.DownBulk]: "down-bulk",
};
