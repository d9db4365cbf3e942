/**
 * A virtual network: many sans-IO nodes on one virtual clock, joined by seeded `Link`s.
 *
 * `step()` jumps the clock straight to the next thing that can happen (a datagram arriving or
 * a node's timer), so simulated hours cost only as much real time as the work done in them.
 * Everything is deterministic for a given seed and a given sequence of calls.
 */

import type { Address, SansIoNode, Transmit } from "../session/sans-io.js";
import { Link, type LinkConfig, type LinkCounters } from "./link.js";
import { Rng, type Seed } from "./rng.js";

export class NetworkError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = "NetworkError";
    this.code = code;
  }
}

export interface NetworkOptions<E = unknown> {
  /** Virtual time (ms) the clock starts at. Default 0. */
  origin?: number;
  /** Root seed; each directed link gets a stream forked from it by its endpoint addresses. */
  seed?: Seed;
  /** Config for any pair of nodes not given one with `link()`. Default: a perfect link. */
  defaultLink?: LinkConfig;
  /** Called for every event a node emits; if set, events are not also stored in the log. */
  onEvent?: (address: Address, event: E, now: number) => void;
}

export interface DriveOptions {
  /** Absolute virtual time (ms) not to go past. */
  until?: number;
  /** Virtual time budget (ms) from the current `now`. */
  maxTimeMs?: number;
  /** Bound on steps. Default 1,000,000. */
  maxSteps?: number;
}

export type DriveStop = "quiet" | "time" | "steps";

export interface DriveResult {
  /** Why driving stopped: nothing left to do, the time limit, or the step limit. */
  stop: DriveStop;
  steps: number;
  now: number;
}

export interface NetworkCounters {
  /** Datagrams addressed to an address with no node. */
  unroutable: number;
  /** Datagrams handed to links. */
  transmitted: number;
  /** Datagrams handed to nodes. */
  delivered: number;
  timeouts: number;
  steps: number;
}

/**
 * A datagram a node sends with a source address of its choosing, as a raw socket can forge
 * one: delivered as coming from `from` (over the link from `from`). Replies to an address no
 * node holds are counted `unroutable`.
 */
export interface SpoofedTransmit extends Transmit {
  from?: Address;
}

interface NodeEntry<E> {
  address: Address;
  node: SansIoNode<E>;
  events: E[];
}

interface LinkEntry {
  from: Address;
  to: Address;
  link: Link;
}

const DEFAULT_MAX_STEPS = 1_000_000;

export class Network<E = unknown> {
  private clock: number;
  private readonly rng: Rng;
  private readonly defaultLink: LinkConfig;
  private readonly onEvent?: (address: Address, event: E, now: number) => void;
  private readonly nodes = new Map<Address, NodeEntry<E>>();
  private readonly nodeList: NodeEntry<E>[] = [];
  private readonly links = new Map<string, LinkEntry>();
  private readonly linkList: LinkEntry[] = [];
  private readonly counters: NetworkCounters = { unroutable: 0, transmitted: 0, delivered: 0, timeouts: 0, steps: 0 };

  constructor(options: NetworkOptions<E> = {}) {
    const origin = options.origin ?? 0;
    if (!Number.isFinite(origin)) throw new NetworkError("ERR_SIM_ORIGIN", `origin must be a finite time in ms, got ${origin}`);
    this.clock = origin;
    this.rng = new Rng(options.seed ?? 1);
    this.defaultLink = { ...(options.defaultLink ?? {}) };
    // Validate the default once, up front, rather than at the first lazily created link.
    new Link({ ...this.defaultLink, seed: 0 });
    this.onEvent = options.onEvent;
  }

  /** Current virtual time in ms. */
  get now(): number {
    return this.clock;
  }

  get stats(): NetworkCounters {
    return { ...this.counters };
  }

  addNode<N extends SansIoNode<E>>(address: Address, node: N): N {
    if (this.nodes.has(address)) {
      throw new NetworkError("ERR_SIM_DUPLICATE_ADDRESS", `a node already has address ${address}; pick another address`);
    }
    const entry: NodeEntry<E> = { address, node, events: [] };
    this.nodes.set(address, entry);
    this.nodeList.push(entry);
    return node;
  }

  node(address: Address): SansIoNode<E> {
    return this.entry(address).node;
  }

  /**
   * Configure the link from `from` to `to` (one direction). Replaces an existing link of that
   * direction, dropping anything in flight on it. Returns the link (for its counters).
   * A config without a seed gets one forked from the network seed and the two addresses.
   */
  link(from: Address, to: Address, config: LinkConfig = {}): Link {
    const seed = config.seed ?? this.rng.fork(`${from}->${to}`).key;
    const link = new Link({ ...config, seed });
    const key = linkKey(from, to);
    const existing = this.links.get(key);
    if (existing) {
      existing.link = link;
    } else {
      const entry = { from, to, link };
      this.links.set(key, entry);
      this.linkList.push(entry);
    }
    return link;
  }

  /** Configure both directions between `a` and `b` with the same knobs (separate random streams). */
  linkBoth(a: Address, b: Address, config: LinkConfig = {}): [Link, Link] {
    const { seed, ...rest } = config;
    const forward = this.link(a, b, seed === undefined ? rest : { ...rest, seed: `${String(seed)}:${a}->${b}` });
    const backward = this.link(b, a, seed === undefined ? rest : { ...rest, seed: `${String(seed)}:${b}->${a}` });
    return [forward, backward];
  }

  /** The link from `from` to `to`, created with the default config if it does not exist yet. */
  linkBetween(from: Address, to: Address): Link {
    return (this.links.get(linkKey(from, to)) ?? this.addDefaultLink(from, to)).link;
  }

  /** Link counters for one direction (zeros if no datagram ever went that way). */
  linkStats(from: Address, to: Address): LinkCounters {
    return this.linkBetween(from, to).stats;
  }

  /** Events the node emitted so far (when no `onEvent` callback is set). */
  events(address: Address): readonly E[] {
    return this.entry(address).events;
  }

  /** Remove and return the node's logged events. */
  takeEvents(address: Address): E[] {
    const entry = this.entry(address);
    const out = entry.events;
    entry.events = [];
    return out;
  }

  /**
   * Drain every node's pending events and transmits onto the links at the current time.
   * `step()` and `drive()` do this themselves; call it after poking a node from a test.
   */
  flush(): void {
    for (const entry of this.nodeList) this.flushNode(entry);
  }

  /** Time of the next delivery or node timer, or undefined if the network is idle. */
  nextEventTime(): number | undefined {
    let next: number | undefined;
    for (const l of this.linkList) {
      const t = l.link.nextDelivery();
      if (t !== undefined && (next === undefined || t < next)) next = t;
    }
    for (const n of this.nodeList) {
      const t = n.node.pollTimeout();
      if (t !== undefined && !Number.isNaN(t) && (next === undefined || t < next)) next = t;
    }
    return next;
  }

  /**
   * Flush outputs, jump the clock to the earliest pending delivery or timer, and handle
   * everything due at that time. Returns false (and does nothing else) if the network is idle.
   * A timer in the past is handled at the current time; the clock never goes backwards.
   */
  step(): boolean {
    this.flush();
    const next = this.nextEventTime();
    if (next === undefined) return false;
    this.advanceTo(next);
    return true;
  }

  /**
   * Step until the network is quiet, or a time or step limit is reached. Always bounded: with no
   * limits given it stops after 1,000,000 steps. When a time limit is given and nothing more is
   * due before it, the clock is moved to that limit.
   */
  drive(options: DriveOptions = {}): DriveResult {
    const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
    if (!(maxSteps >= 0)) throw new NetworkError("ERR_SIM_DRIVE", `maxSteps must be >= 0, got ${maxSteps}`);
    let limit = options.until ?? Infinity;
    if (options.maxTimeMs !== undefined) {
      if (!(options.maxTimeMs >= 0)) throw new NetworkError("ERR_SIM_DRIVE", `maxTimeMs must be >= 0, got ${options.maxTimeMs}`);
      limit = Math.min(limit, this.clock + options.maxTimeMs);
    }
    if (Number.isNaN(limit)) throw new NetworkError("ERR_SIM_DRIVE", "until must be a number of ms");
    let steps = 0;
    for (;;) {
      this.flush();
      const next = this.nextEventTime();
      if (next === undefined || next > limit) {
        if (limit !== Infinity && limit > this.clock) this.clock = limit;
        return { stop: next === undefined ? "quiet" : "time", steps, now: this.clock };
      }
      if (steps >= maxSteps) return { stop: "steps", steps, now: this.clock };
      this.advanceTo(next);
      steps++;
    }
  }

  private advanceTo(next: number): void {
    if (next > this.clock) this.clock = next;
    const now = this.clock;
    this.counters.steps++;
    // Deliveries first (in link creation order, each link in arrival order), then timers:
    // the documented sans-IO drive order.
    for (const l of this.linkList) {
      for (let bytes = l.link.pollDelivery(now); bytes !== undefined; bytes = l.link.pollDelivery(now)) {
        const target = this.nodes.get(l.to);
        if (target === undefined) {
          this.counters.unroutable++;
          continue;
        }
        this.counters.delivered++;
        target.node.handleDatagram(now, l.from, bytes);
      }
    }
    for (const n of this.nodeList) {
      const t = n.node.pollTimeout();
      if (t !== undefined && t <= now) {
        this.counters.timeouts++;
        n.node.handleTimeout(now);
      }
    }
    this.flush();
  }

  private flushNode(entry: NodeEntry<E>): void {
    const now = this.clock;
    for (let ev = entry.node.pollEvent(); ev !== undefined; ev = entry.node.pollEvent()) {
      if (this.onEvent) this.onEvent(entry.address, ev, now);
      else entry.events.push(ev);
    }
    for (let tx = entry.node.pollTransmit(now); tx !== undefined; tx = entry.node.pollTransmit(now)) {
      if (!this.nodes.has(tx.to)) {
        this.counters.unroutable++;
        continue;
      }
      this.counters.transmitted++;
      // Link.send copies the bytes, so a view into the node's send arena is safe here.
      this.linkBetween((tx as SpoofedTransmit).from ?? entry.address, tx.to).send(now, tx.bytes);
    }
  }

  private addDefaultLink(from: Address, to: Address): LinkEntry {
    this.link(from, to, this.defaultLink);
    return this.links.get(linkKey(from, to)) as LinkEntry;
  }

  private entry(address: Address): NodeEntry<E> {
    const entry = this.nodes.get(address);
    if (entry === undefined) throw new NetworkError("ERR_SIM_UNKNOWN_ADDRESS", `no node at ${address}; add it with addNode() first`);
    return entry;
  }
}

function linkKey(from: Address, to: Address): string {
  return `${from}\u0000${to}`;
}

export interface PairOptions<E = unknown> {
  serverAddress?: Address;
  clientAddress?: Address;
  seed?: Seed;
  origin?: number;
  /** Config for both directions (each direction gets its own random stream). */
  link?: LinkConfig;
  /** Overrides `link` for client -> server. */
  toServer?: LinkConfig;
  /** Overrides `link` for server -> client. */
  toClient?: LinkConfig;
  onEvent?: (address: Address, event: E, now: number) => void;
}

/**
 * Two nodes on a virtual network, in the manner of quinn-proto's test `Pair`: a server and a
 * client, a link each way, one clock.
 */
export class Pair<S extends SansIoNode<E>, C extends SansIoNode<E>, E = unknown> {
  readonly network: Network<E>;
  readonly serverAddress: Address;
  readonly clientAddress: Address;
  readonly toServer: Link;
  readonly toClient: Link;

  constructor(
    readonly server: S,
    readonly client: C,
    options: PairOptions<E> = {},
  ) {
    this.serverAddress = options.serverAddress ?? "10.0.0.1:7777";
    this.clientAddress = options.clientAddress ?? "10.0.0.2:50000";
    this.network = new Network<E>({ seed: options.seed, origin: options.origin, onEvent: options.onEvent });
    this.network.addNode(this.serverAddress, server);
    this.network.addNode(this.clientAddress, client);
    // A seed in the shared config is split per direction so the two ways lose different packets.
    const base = options.link ?? {};
    const perDirection = (label: string): LinkConfig =>
      base.seed === undefined ? base : { ...base, seed: `${String(base.seed)}:${label}` };
    this.toServer = this.network.link(this.clientAddress, this.serverAddress, options.toServer ?? perDirection("toServer"));
    this.toClient = this.network.link(this.serverAddress, this.clientAddress, options.toClient ?? perDirection("toClient"));
  }

  get now(): number {
    return this.network.now;
  }

  step(): boolean {
    return this.network.step();
  }

  drive(options?: DriveOptions): DriveResult {
    return this.network.drive(options);
  }

  /** Drive for `ms` of virtual time (the clock ends exactly `ms` later). */
  advance(ms: number): DriveResult {
    return this.network.drive({ maxTimeMs: ms });
  }

  serverEvents(): E[] {
    return this.network.takeEvents(this.serverAddress);
  }

  clientEvents(): E[] {
    return this.network.takeEvents(this.clientAddress);
  }
}
