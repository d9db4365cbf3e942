// What every peer driver exports: how it is built, and how to get a connected pair.

import type { ImplKind, MessagePair } from "../driver.js";

export interface PeerDriver {
  /** npm package name, as listed in bench/package.json. */
  readonly name: string;
  readonly impl: ImplKind;
  /** What is measured: the delivery mode and the carrier. */
  readonly mode: string;
  pair(): Promise<MessagePair>;
}
