/**
 * A small virtual-network driver for the congestion scenarios, built on the simulator's `Link`.
 *
 * Why not `src/sim`'s `Network`: the scenarios need two things it does not offer (yet):
 *  - a SHARED bottleneck: one `Link` carrying the datagrams of several (from, to) routes, so two
 *    connections compete for the same queue (Network makes one Link per directed pair);
 *  - per-node clocks: the clock scenario drives the server with `now + offset`, so the client
 *    has a real server clock to estimate.
 * Everything else follows Network's drive order (deliveries, then due timers, then flush of
 * events and transmits) on one virtual clock, seeded and deterministic.
 *
 * Application actions (a game sending at 30 Hz, a bulk sender topping up its queue) are
 * scheduled with `at(time, fn)`; they run after the network work due at that time.
 */
import type { Address, SansIoNode } from "../../src/session/sans-io.js";
import { Link } from "../../src/sim/link.js";

export interface WorldNode<E> {
  address: Address;
  node: SansIoNode<E>;
  /** This node's clock = world clock + offset (ms). */
  clockOffsetMs: number;
}

interface Route {
  link: Link;
}

interface LinkState {
  link: Link;
  /** Calls made to link.send so far (= the Link's own send index of the next datagram). */
  sendCount: number;
  /** send index -> where the datagram goes (a shared link carries several routes). */
  destinations: Map<number, { from: Address; to: Address }>;
}

interface AppTimer {
  time: number;
  order: number;
  fn: () => void;
}

export interface WorldOptions<E> {
  onEvent?: (address: Address, event: E, now: number) => void;
  /** Every datagram a node hands out, before the link sees it. */
  onTransmit?: (from: Address, to: Address, bytes: Uint8Array, now: number) => void;
}

export class WorldError extends Error {
  readonly code = "ERR_BENCH_SIM_WORLD";
  constructor(message: string) {
    super(message);
    this.name = "WorldError";
  }
}

export class World<E> {
  private clock = 0;
  private readonly nodes = new Map<Address, WorldNode<E>>();
  private readonly nodeList: WorldNode<E>[] = [];
  private readonly routes = new Map<string, Route>();
  private readonly linkStates = new Map<Link, LinkState>();
  private linkList: LinkState[] = [];
  private timers: AppTimer[] = [];
  private timerOrder = 0;
  steps = 0;
  unroutable = 0;

  constructor(private readonly options: WorldOptions<E> = {}) {}

  get now(): number {
    return this.clock;
  }

  addNode(address: Address, node: SansIoNode<E>, clockOffsetMs = 0): void {
    if (this.nodes.has(address)) throw new WorldError(`a node already has address ${address}`);
    const entry = { address, node, clockOffsetMs };
    this.nodes.set(address, entry);
    this.nodeList.push(entry);
  }

  /** The node's own clock at the current world time. */
  nodeNow(address: Address): number {
    const n = this.nodes.get(address);
    if (n === undefined) throw new WorldError(`no node at ${address}`);
    return this.clock + n.clockOffsetMs;
  }

  /**
   * Send datagrams from `from` to `to` over `link`. The same Link object may serve several
   * routes (a shared bottleneck). Replacing a route's link leaves datagrams already on the old
   * link in flight; they are still delivered.
   */
  route(from: Address, to: Address, link: Link): Link {
    this.routes.set(`${from}\u0000${to}`, { link });
    if (!this.linkStates.has(link)) {
      const state: LinkState = { link, sendCount: 0, destinations: new Map() };
      this.linkStates.set(link, state);
      this.linkList.push(state);
    }
    return link;
  }

  /** Run `fn` at world time `time` (or now, if that is past), after the network work due then. */
  at(time: number, fn: () => void): void {
    this.timers.push({ time: Math.max(time, this.clock), order: this.timerOrder++, fn });
    this.timers.sort((a, b) => a.time - b.time || a.order - b.order);
  }

  /** Drain events and transmits of every node at the current time. */
  flush(): void {
    for (const n of this.nodeList) this.flushNode(n);
  }

  nextEventTime(): number | undefined {
    let next: number | undefined;
    for (const s of this.linkList) {
      const t = s.link.nextDelivery();
      if (t !== undefined && (next === undefined || t < next)) next = t;
    }
    for (const n of this.nodeList) {
      const local = n.node.pollTimeout();
      if (local === undefined || Number.isNaN(local)) continue;
      const t = local - n.clockOffsetMs;
      if (next === undefined || t < next) next = t;
    }
    const timer = this.timers[0];
    if (timer !== undefined && (next === undefined || timer.time < next)) next = timer.time;
    return next;
  }

  /**
   * Advance to `until` (world ms), handling everything due on the way; the clock ends at
   * `until`. Bounded by `maxSteps`; throws if that bound is hit (a node re-arming a timer in
   * the past forever would otherwise spin).
   */
  runUntil(until: number, maxSteps = 5_000_000): void {
    let steps = 0;
    for (;;) {
      this.flush();
      const next = this.nextEventTime();
      if (next === undefined || next > until) break;
      if (++steps > maxSteps) throw new WorldError(`runUntil(${until}) exceeded ${maxSteps} steps at t=${this.clock}`);
      this.advanceTo(next);
    }
    if (until > this.clock) this.clock = until;
  }

  private advanceTo(next: number): void {
    if (next > this.clock) this.clock = next;
    const now = this.clock;
    this.steps++;
    for (const s of this.linkList) {
      for (let d = s.link.pollDeliveryRecord(now); d !== undefined; d = s.link.pollDeliveryRecord(now)) {
        const dest = s.destinations.get(d.sendIndex);
        if (dest === undefined) continue;
        if (!d.duplicate && s.link.config.duplicateRate === undefined) s.destinations.delete(d.sendIndex);
        const target = this.nodes.get(dest.to);
        if (target === undefined) {
          this.unroutable++;
          continue;
        }
        target.node.handleDatagram(now + target.clockOffsetMs, dest.from, d.bytes);
      }
    }
    for (const n of this.nodeList) {
      const local = n.node.pollTimeout();
      if (local !== undefined && local - n.clockOffsetMs <= now) n.node.handleTimeout(now + n.clockOffsetMs);
    }
    while (this.timers.length > 0 && this.timers[0].time <= now) {
      const timer = this.timers.shift() as AppTimer;
      this.flush(); // the app sees every event due before it acts
      timer.fn();
    }
    this.flush();
  }

  private flushNode(n: WorldNode<E>): void {
    const now = this.clock;
    const local = now + n.clockOffsetMs;
    for (let ev = n.node.pollEvent(); ev !== undefined; ev = n.node.pollEvent()) this.options.onEvent?.(n.address, ev, now);
    for (let tx = n.node.pollTransmit(local); tx !== undefined; tx = n.node.pollTransmit(local)) {
      const route = this.routes.get(`${n.address}\u0000${tx.to}`);
      if (route === undefined || !this.nodes.has(tx.to)) {
        this.unroutable++;
        continue;
      }
      this.options.onTransmit?.(n.address, tx.to, tx.bytes, now);
      const state = this.linkStates.get(route.link) as LinkState;
      const index = state.sendCount++;
      // Link.send copies the bytes, so a view into the endpoint's send arena is fine here.
      if (route.link.send(now, tx.bytes) === "queued") state.destinations.set(index, { from: n.address, to: tx.to });
    }
  }
}
