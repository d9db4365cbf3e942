// What every peer driver exports: how it is built, and how to get a connected pair.

import type { ImplKind, MessagePair } from "../driver.js";

export interface PeerDriver {
  /** npm package name, as listed in bench/package.json. */
  readonly name: string;
  readonly impl: ImplKind;
  /** What is measured: the delivery mode and the carrier. */
  readonly mode: string;
  /**
   * Cap on bytes the driver keeps unacknowledged, for a library that stalls past some
   * amount in flight; the README of the bench says which and why.
   */
  readonly maxInFlightBytes?: number;
  /** The same, counted in messages (for a library that sends one datagram per message). */
  readonly maxInFlightMessages?: number;
  pair(): Promise<MessagePair>;
}
