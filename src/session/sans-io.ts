/**
 * The sans-IO surface every ackwire node exposes to whatever drives it (a runtime adapter,
 * the simulator's virtual network, a user's own carrier such as a WebRTC data channel).
 *
 * Shape follows quinn-proto: inputs are `handle*`, outputs are `poll*`, time is always passed in
 * as milliseconds on the caller's clock (any monotonic origin). Nothing here reads a clock,
 * owns a socket or arms a timer.
 *
 * Drive order for one wake-up:
 *   1. `handleDatagram(now, from, bytes)` for every datagram that arrived (may be many);
 *   2. `handleTimeout(now)` if `now >= pollTimeout()` (calling it early is a harmless no-op);
 *   3. drain `pollEvent()` until undefined;
 *   4. drain `pollTransmit(now)` until undefined, sending each datagram;
 *   5. arm one timer for `pollTimeout()`.
 */

import type { ClientIdentity } from "../secure/server-security.js";

/** A peer address as text: `"127.0.0.1:7777"` or `"[::1]:7777"`. Used as a map key. */
export type Address = string;

/**
 * One datagram to send. `bytes` may be a view into the node's send arena: it is valid only
 * until the next call into the node. Send it (or copy it) before calling in again.
 */
export interface Transmit {
  to: Address;
  bytes: Uint8Array;
}

export interface SansIoNode<Event = unknown> {
  /**
   * `identity`: who a layer in front of this node authenticated the datagram's sender as (the
   * secure layer's client); an Endpoint hands it to its accept hook and "connect" event.
   */
  handleDatagram(now: number, from: Address, bytes: Uint8Array, identity?: ClientIdentity): void;
  handleTimeout(now: number): void;
  pollTransmit(now: number): Transmit | undefined;
  /** Absolute time (ms) at which `handleTimeout` must be called next, or undefined if idle. */
  pollTimeout(): number | undefined;
  pollEvent(): Event | undefined;
}

/**
 * A node in front of another (a relay route table, the secure layer, a recorder in a test): it
 * changes what goes in and out, and passes time and events through untouched.
 */
export abstract class WrappingNode<Event> implements SansIoNode<Event> {
  readonly inner: SansIoNode<Event>;

  constructor(inner: SansIoNode<Event>) {
    this.inner = inner;
  }

  abstract handleDatagram(now: number, from: Address, bytes: Uint8Array): void;
  abstract pollTransmit(now: number): Transmit | undefined;

  handleTimeout(now: number): void {
    this.inner.handleTimeout(now);
  }

  pollTimeout(): number | undefined {
    return this.inner.pollTimeout();
  }

  pollEvent(): Event | undefined {
    return this.inner.pollEvent();
  }
}
