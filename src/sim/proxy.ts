/**
 * Sans-IO core of the UDP impairment proxy.
 *
 * Clients send to the proxy; each distinct client address becomes a *flow* with its own
 * upstream socket (owned by the runtime adapter), so replies from the upstream server can be
 * routed back to the right client. Each direction of each flow runs through its own `Link`,
 * seeded from the proxy seed and the flow's opening order, so a run is reproducible when clients
 * arrive in the same order.
 *
 * The adapter drives it like any sans-IO node:
 *   handleFromClient / handleFromUpstream -> handleTimeout when due -> drain pollEvent (to close
 *   upstream sockets of expired flows) -> drain pollTransmit -> arm one timer for pollTimeout.
 */

import type { Address } from "../session/sans-io.js";
import { Link, emptyLinkCounters as emptyCounters, validateLinkConfig, type LinkConfig, type LinkCounters } from "./link.js";
import { SampleRecorder } from "./recorder.js";
import { Rng, type Seed } from "./rng.js";

export class ProxyError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = "ProxyError";
    this.code = code;
  }
}

export interface ProxyCoreOptions {
  /** Where client datagrams are forwarded, e.g. "127.0.0.1:7777". */
  upstream: Address;
  /** Impairments from clients to the upstream server. Its `seed` is ignored (use `seed`). */
  toUpstream?: LinkConfig;
  /** Impairments from the upstream server back to clients. Its `seed` is ignored. */
  toClient?: LinkConfig;
  seed?: Seed;
  /** A flow with no traffic either way for this long (ms) is closed. Default 60,000. */
  idleTimeoutMs?: number;
  /** Most concurrent flows; datagrams from further new clients are dropped. Default 1024. */
  maxFlows?: number;
}

export type ProxyDirection = "toUpstream" | "toClient";

export interface ProxyTransmit {
  direction: ProxyDirection;
  /** The flow's client address: the destination when `toClient`, the flow key either way. */
  client: Address;
  /** Destination address (the upstream, or the client). */
  to: Address;
  bytes: Uint8Array;
}

export type ProxyEvent =
  | { type: "flowOpened"; client: Address; flow: number }
  | { type: "flowClosed"; client: Address; flow: number; reason: "idle" };

export interface ProxyStats {
  flowsOpen: number;
  flowsOpened: number;
  flowsClosed: number;
  /** Datagrams from new clients dropped because `maxFlows` flows were open. */
  flowsRejected: number;
  /** Upstream datagrams for a client with no open flow. */
  unknownFlow: number;
  toUpstream: LinkCounters;
  toClient: LinkCounters;
  /** Queueing delay at the bottleneck, both directions (ms). */
  queueDelay: { count: number; p50: number; p95: number; max: number };
}

interface Flow {
  id: number;
  client: Address;
  up: Link;
  down: Link;
  lastActivity: number;
}


function addCounters(into: LinkCounters, from: LinkCounters): void {
  for (const key of Object.keys(into) as (keyof LinkCounters)[]) into[key] += from[key];
}

export class ProxyCore {
  readonly upstream: Address;
  private readonly toUpstreamConfig: LinkConfig;
  private readonly toClientConfig: LinkConfig;
  private readonly rng: Rng;
  private readonly idleTimeoutMs: number;
  private readonly maxFlows: number;
  private readonly flows = new Map<Address, Flow>();
  private readonly events: ProxyEvent[] = [];
  private nextFlowId = 0;
  private readonly retiredUp = emptyCounters();
  private readonly retiredDown = emptyCounters();
  private readonly queueDelay = new SampleRecorder(100_000, "proxy-queue");
  private flowsClosed = 0;
  private flowsRejected = 0;
  private unknownFlow = 0;

  constructor(options: ProxyCoreOptions) {
    if (typeof options?.upstream !== "string" || options.upstream.length === 0) {
      throw new ProxyError("ERR_PROXY_CONFIG", "upstream address is required, e.g. \"127.0.0.1:7777\"");
    }
    this.upstream = options.upstream;
    this.toUpstreamConfig = { ...(options.toUpstream ?? {}) };
    this.toClientConfig = { ...(options.toClient ?? {}) };
    validateLinkConfig(this.toUpstreamConfig);
    validateLinkConfig(this.toClientConfig);
    this.rng = new Rng(options.seed ?? 1);
    this.idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
    if (!(this.idleTimeoutMs > 0)) {
      throw new ProxyError("ERR_PROXY_CONFIG", `idleTimeoutMs must be > 0, got ${options.idleTimeoutMs}`);
    }
    this.maxFlows = options.maxFlows ?? 1024;
    if (!Number.isInteger(this.maxFlows) || this.maxFlows < 1) {
      throw new ProxyError("ERR_PROXY_CONFIG", `maxFlows must be an integer >= 1, got ${options.maxFlows}`);
    }
  }

  /** A datagram from `client` arrived at the proxy's listening socket. */
  handleFromClient(now: number, client: Address, bytes: Uint8Array): void {
    let flow = this.flows.get(client);
    if (flow === undefined) {
      if (this.flows.size >= this.maxFlows) {
        this.flowsRejected++;
        return;
      }
      flow = this.openFlow(client, now);
    }
    flow.lastActivity = now;
    flow.up.send(now, bytes);
    this.recordQueueDelay(flow.up);
  }

  /** A datagram from the upstream server arrived on the upstream socket of `client`'s flow. */
  handleFromUpstream(now: number, client: Address, bytes: Uint8Array): void {
    const flow = this.flows.get(client);
    if (flow === undefined) {
      this.unknownFlow++;
      return;
    }
    flow.lastActivity = now;
    flow.down.send(now, bytes);
    this.recordQueueDelay(flow.down);
  }

  /** Close flows that have been idle for `idleTimeoutMs` and have nothing in flight. */
  handleTimeout(now: number): void {
    for (const flow of this.flows.values()) {
      if (now - flow.lastActivity >= this.idleTimeoutMs && flow.up.pending === 0 && flow.down.pending === 0) {
        this.closeFlow(flow, "idle");
      }
    }
  }

  /** The next datagram due to leave the proxy by `now`, or undefined. O(open flows). */
  pollTransmit(now: number): ProxyTransmit | undefined {
    for (const flow of this.flows.values()) {
      const up = flow.up.pollDelivery(now);
      if (up !== undefined) return { direction: "toUpstream", client: flow.client, to: this.upstream, bytes: up };
      const down = flow.down.pollDelivery(now);
      if (down !== undefined) return { direction: "toClient", client: flow.client, to: flow.client, bytes: down };
    }
    return undefined;
  }

  /** Earliest time anything is due: a delivery or an idle expiry. Undefined when no flows. */
  pollTimeout(): number | undefined {
    let next: number | undefined;
    const consider = (t: number | undefined): void => {
      if (t !== undefined && (next === undefined || t < next)) next = t;
    };
    for (const flow of this.flows.values()) {
      consider(flow.up.nextDelivery());
      consider(flow.down.nextDelivery());
      consider(flow.lastActivity + this.idleTimeoutMs);
    }
    return next;
  }

  pollEvent(): ProxyEvent | undefined {
    return this.events.shift();
  }

  hasFlow(client: Address): boolean {
    return this.flows.has(client);
  }

  stats(): ProxyStats {
    const toUpstream = { ...this.retiredUp };
    const toClient = { ...this.retiredDown };
    for (const flow of this.flows.values()) {
      addCounters(toUpstream, flow.up.stats);
      addCounters(toClient, flow.down.stats);
    }
    return {
      flowsOpen: this.flows.size,
      flowsOpened: this.nextFlowId,
      flowsClosed: this.flowsClosed,
      flowsRejected: this.flowsRejected,
      unknownFlow: this.unknownFlow,
      toUpstream,
      toClient,
      queueDelay: {
        count: this.queueDelay.count,
        p50: this.queueDelay.percentile(50),
        p95: this.queueDelay.percentile(95),
        max: this.queueDelay.max,
      },
    };
  }

  private openFlow(client: Address, now: number): Flow {
    const id = this.nextFlowId++;
    const flow: Flow = {
      id,
      client,
      up: new Link({ ...this.toUpstreamConfig, seed: this.rng.fork(`flow${id}:up`).key }),
      down: new Link({ ...this.toClientConfig, seed: this.rng.fork(`flow${id}:down`).key }),
      lastActivity: now,
    };
    this.flows.set(client, flow);
    this.events.push({ type: "flowOpened", client, flow: id });
    return flow;
  }

  private closeFlow(flow: Flow, reason: "idle"): void {
    addCounters(this.retiredUp, flow.up.stats);
    addCounters(this.retiredDown, flow.down.stats);
    this.flows.delete(flow.client);
    this.flowsClosed++;
    this.events.push({ type: "flowClosed", client: flow.client, flow: flow.id, reason });
  }

  private recordQueueDelay(link: Link): void {
    if (link.lastQueueDelay !== undefined) this.queueDelay.record(link.lastQueueDelay);
  }
}
