/**
 * A peer's side of the relay, sans-IO: which virtual addresses are peers reached through a relay
 * (./wire.ts), and the wrapping of datagrams to and from them. The API's RelayingSocket
 * (src/api/relay-socket.ts) applies it to a Server's socket, so the Endpoint sees a relayed peer
 * as one more address.
 *
 * A route is (relay address, this side's token). Sending to its virtual address sends
 * `[token | datagram]` to the relay; a datagram from the relay address carrying the token is the
 * peer's, delivered from the virtual address, except a CHALLENGE (PROTOCOL §8), which is
 * answered: its CONFIRM waits in takeControl() for the socket to send. Datagrams from a relay address with a token of no
 * route are counted and dropped. At most MAX_RELAY_ROUTES routes: adding one more drops the one
 * used longest ago (a live connection uses its route at every keepalive). Virtual addresses are
 * numbered per RelayRoutes and never reused, so a route added again after it was dropped is a
 * new address (the old connection through it does not come back to life).
 */
import type { Address } from "../session/sans-io.js";
import { RelayConfigError } from "./errors.js";
import {
  canonicalAddress, isVirtualAddress, MAX_RELAY_DATAGRAM, RELAY_BIND, RELAY_CHALLENGE, RELAY_CONFIRM, RELAY_CONTROL_BYTES, RELAY_TOKEN_BYTES,
  relayControlKind, tokenKey, virtualAddress, writeRelayControl,
} from "./wire.js";

/** CONFIRMs waiting to be sent at most (a relay answers at most 10 challenges a second per route). */
const MAX_PENDING_CONFIRMS = 64;

/** A relay control datagram to send (a BIND or a CONFIRM). */
export interface RelayControlTransmit {
  relay: Address;
  bytes: Uint8Array;
}

export const MAX_RELAY_ROUTES = 64;

export interface RelayRoute {
  readonly relay: Address;
  readonly token: Uint8Array;
  readonly virtual: Address;
  /** A counter of uses (not time): the least recently used route is evicted first. */
  usedAt: number;
}

/**
 * The relay address of a route in its one spelling, after checking both arguments as add()
 * does (RelayConfigError). For a front end that numbers routes itself (ackwire/worker).
 */
export function checkRoute(relayAddress: Address, token: Uint8Array): Address {
  const relay = typeof relayAddress === "string" ? canonicalAddress(relayAddress) : undefined;
  if (relay === undefined) throw new RelayConfigError(`a relay address must be "ip:port" or "[ipv6]:port" with an IP literal, got ${JSON.stringify(relayAddress)}`);
  if (!(token instanceof Uint8Array) || token.length !== RELAY_TOKEN_BYTES) throw new RelayConfigError(`a relay token is ${RELAY_TOKEN_BYTES} bytes`);
  return relay;
}

export class RelayRoutes {
  /** Called with each route evicted to make room (not with routes removed by remove()). */
  onEvict: ((route: RelayRoute) => void) | undefined = undefined;
  /**
   * dropped: datagrams from a relay with no route's token, or too large to wrap; unrouted:
   * sends to a virtual address with no route; fromVirtual: datagrams that really came from
   * 100::/64.
   */
  readonly counters = { wrapped: 0, unwrapped: 0, dropped: 0, evicted: 0, unrouted: 0, fromVirtual: 0, challenges: 0 };
  /** CONFIRMs owed to relays' CHALLENGEs, sent by the socket after the batch (takeControl()). */
  readonly #control: RelayControlTransmit[] = [];
  readonly #byVirtual = new Map<Address, RelayRoute>();
  readonly #byToken = new Map<string, RelayRoute>();
  /** Relay address -> routes through it (a datagram from elsewhere is never unwrapped). */
  readonly #relays = new Map<Address, number>();
  #uses = 0;
  #nextId = 1;

  get size(): number {
    return this.#byVirtual.size;
  }

  /**
   * Routes to the peer behind `relay` ("ip:port") that shares an allocation with `token`;
   * returns the peer's virtual address. Adding the same token again returns the same address.
   * `id` (a positive integer) picks the route's number instead of the next one: a front end on
   * another thread numbers the routes (ackwire/worker) and this side follows it, replacing a
   * route of the same token under another virtual address, or another token under this one.
   */
  add(relayAddress: Address, token: Uint8Array, id?: number): Address {
    const relay = checkRoute(relayAddress, token);
    if (id !== undefined && !(Number.isSafeInteger(id) && id > 0)) throw new RelayConfigError(`a relay route number must be a positive integer, got ${String(id)}`);
    const port = Number(relay.slice(relay.lastIndexOf(":") + 1));
    const key = tokenKey(token);
    const existing = this.#byToken.get(key);
    const wanted = id === undefined ? undefined : virtualAddress(id, port);
    if (existing !== undefined && existing.relay !== relay) throw new RelayConfigError("this relay token is already routed through another relay");
    if (existing !== undefined && (wanted === undefined || existing.virtual === wanted)) {
      existing.usedAt = ++this.#uses;
      return existing.virtual;
    }
    if (existing !== undefined) this.remove(existing.virtual);
    if (wanted !== undefined) this.remove(wanted);
    if (this.#byVirtual.size >= MAX_RELAY_ROUTES) this.#evictLeastUsed();
    const number = id ?? this.#nextId;
    this.#nextId = Math.max(this.#nextId, number + 1);
    const route: RelayRoute = { relay, token: token.slice(), virtual: wanted ?? virtualAddress(number, port), usedAt: ++this.#uses };
    this.#byVirtual.set(route.virtual, route);
    this.#byToken.set(key, route);
    this.#relays.set(relay, (this.#relays.get(relay) ?? 0) + 1);
    return route.virtual;
  }

  remove(virtual: Address): void {
    const route = this.#byVirtual.get(virtual);
    if (route === undefined) return;
    this.#byVirtual.delete(virtual);
    this.#byToken.delete(tokenKey(route.token));
    const left = (this.#relays.get(route.relay) ?? 1) - 1;
    if (left === 0) this.#relays.delete(route.relay);
    else this.#relays.set(route.relay, left);
  }

  /** The route of a virtual address, or undefined (a real address). */
  get(virtual: Address): RelayRoute | undefined {
    return this.#byVirtual.get(virtual);
  }

  /**
   * Writes `[token | datagram]` for `route` into `out`; its length, or -1 (counted) if it would
   * exceed MAX_RELAY_DATAGRAM.
   */
  wrap(route: RelayRoute, datagram: Uint8Array, out: Uint8Array): number {
    const length = RELAY_TOKEN_BYTES + datagram.length;
    if (length > MAX_RELAY_DATAGRAM || length > out.length) {
      this.counters.dropped++;
      return -1;
    }
    out.set(route.token, 0);
    out.set(datagram, RELAY_TOKEN_BYTES);
    route.usedAt = ++this.#uses;
    this.counters.wrapped++;
    return length;
  }

  /**
   * Where a datagram for `to` goes: its route (wrap() it for the route's relay), null (a real
   * address: send it as it is), or undefined (a virtual address with no route: dropped,
   * counted, never sent to the address itself).
   */
  outbound(to: Address): RelayRoute | null | undefined {
    if (!isVirtualAddress(to)) return null;
    const route = this.#byVirtual.get(to);
    if (route === undefined) this.counters.unrouted++;
    return route;
  }

  /**
   * What a received datagram is: a relayed peer's (its route: it comes from route.virtual, the
   * datagram after the token), a real sender's (null: as it is), or nothing (undefined: a relay
   * datagram with no route's token, or a datagram that really comes from 100::/64, which could
   * otherwise pose as a relayed peer; dropped and counted).
   */
  inbound(from: Address, bytes: Uint8Array): RelayRoute | null | undefined {
    if (this.#relays.has(from)) return this.unwrap(from, bytes);
    if (!isVirtualAddress(from)) return null;
    this.counters.fromVirtual++;
    return undefined;
  }

  /** True if datagrams from `from` are relay datagrams (it is the relay of some route). */
  isRelay(from: Address): boolean {
    return this.#relays.has(from);
  }

  /**
   * A datagram from a relay: its route (the sender is route.virtual, the datagram is the rest), or
   * undefined (counted as dropped; or a CHALLENGE, whose CONFIRM is queued for takeControl()).
   */
  unwrap(from: Address, bytes: Uint8Array): RelayRoute | undefined {
    const route = bytes.length > RELAY_TOKEN_BYTES ? this.#byToken.get(tokenKey(bytes)) : undefined;
    if (route === undefined || route.relay !== from) {
      this.counters.dropped++;
      return undefined;
    }
    if (relayControlKind(bytes) === RELAY_CHALLENGE) {
      // The relay asks this socket to show it receives here: echo the cookie (PROTOCOL §8).
      this.counters.challenges++;
      if (this.#control.length < MAX_PENDING_CONFIRMS) {
        const confirm = new Uint8Array(RELAY_CONTROL_BYTES);
        writeRelayControl(confirm, route.token, RELAY_CONFIRM, bytes, RELAY_TOKEN_BYTES + 1);
        this.#control.push({ relay: route.relay, bytes: confirm });
      }
      return undefined;
    }
    route.usedAt = ++this.#uses;
    this.counters.unwrapped++;
    return route;
  }

  /** A BIND for the route of `virtual` (PROTOCOL §8), or undefined if the route is gone. */
  bindOf(virtual: Address): RelayControlTransmit | undefined {
    const route = this.#byVirtual.get(virtual);
    if (route === undefined) return undefined;
    const bytes = new Uint8Array(RELAY_CONTROL_BYTES);
    writeRelayControl(bytes, route.token, RELAY_BIND);
    return { relay: route.relay, bytes };
  }

  /** The next CONFIRM owed to a relay's CHALLENGE, or undefined. */
  takeControl(): RelayControlTransmit | undefined {
    return this.#control.shift();
  }

  #evictLeastUsed(): void {
    let oldest: RelayRoute | undefined;
    for (const route of this.#byVirtual.values()) if (oldest === undefined || route.usedAt < oldest.usedAt) oldest = route;
    if (oldest === undefined) return;
    this.remove(oldest.virtual);
    this.counters.evicted++;
    this.onEvict?.(oldest);
  }
}
