/**
 * NAT traversal through the lobby (the matchmaking server, as an introducer), sans-IO.
 *
 * Two hosts behind NATs that filter unsolicited packets cannot connect to each other directly,
 * but both can reach the lobby. The lobby introduces them:
 *
 *   host (registered from its game socket,          joiner (connected to the lobby from the
 *         gamePort 0, so the lobby knows its               socket it will play from)
 *         public game address)
 *                         lobby  <---- nat.introduce { id, local } ----
 *   <-- nat.introduce { address, local,              ---- { address, local,
 *                       token, peerToken }                       token, peerToken } ---->
 *       (the joiner's public address as the lobby         (the host's public address as the
 *        saw it, its local addresses)                      lobby saw it, its local addresses)
 *
 * The lobby makes two fresh 8-byte tokens, one per side: each side's punches carry its own
 * (`token`) and it listens for the other's (`peerToken`), so a device that receives only one
 * side's punches cannot answer as the other. Local addresses are passed on only between peers
 * the lobby sees behind one public IP (the same home network): elsewhere they would not help,
 * and they would send punches, and a token, to whatever device holds that address on the other
 * side's network.
 *
 * Then both send NAT_PUNCH (PROTOCOL §7, src/session/punch.ts) to every address of the other,
 * a few times. Each punch opens its sender's NAT for the peer; once both have punched, punches
 * arrive. The joiner connects (a normal handshake from the same socket) to the first address a
 * punch came from, or to the host's public address if none came in time (a host not behind a
 * NAT, or a NAT that does not filter). Local addresses find a host on the same network, where
 * a NAT that does not hairpin would drop packets sent to its own public address.
 *
 * What punching cannot do: a NAT that gives each destination its own public port (a
 * "symmetric" NAT, endpoint-dependent mapping) sends the punches from a port the lobby never
 * saw, so the peer's NAT drops them. For such a pair the lobby can hand out a relay allocation
 * with the introduction (`relay` option: a RelayServer from listenRelay(), PROTOCOL §8): each
 * side gets the relay's address and its own relay token. The host binds at once; the joiner,
 * when no punch came and the direct connect timed out, connects through the relay instead.
 * Without a relay that connect fails with ConnectTimeoutError (test/interop/nat-traversal.test.ts
 * shows the cases).
 *
 * This file is the lobby's side (`NatIntroducer`, `natHandlers`) and the punch schedule
 * (`PunchRuns`); ./nat-socket.ts runs them on a Server.
 */
import { host } from "../api/host.js";
import type { Address } from "../session/sans-io.js";
import type { Value } from "./codec.js";
import { GameError, GameUsageError } from "./errors.js";
import { canonicalAddress } from "../relay/wire.js";
import { checkLocalAddresses, ipOf, isIpAddress, type LobbyRegistry } from "./lobby.js";
import type { RpcHandler } from "./rpc.js";

/** What each side of an introduction learns of the other. */
export interface NatIntroduction {
  /** The peer's public address, as the lobby saw it. */
  address: Address;
  /** The peer's addresses on its own networks. */
  local: Address[];
  /** 8 random bytes this side's punches carry. */
  token: Uint8Array;
  /** The peer's: a punch carrying it came from the peer. */
  peerToken: Uint8Array;
  /** A relay allocation, if the lobby has a relay: its address and this side's token. */
  relay?: { address: Address; token: Uint8Array };
}

/** What the introducer needs of a relay (a RelayServer from listenRelay() is one). */
export interface RelayAllocator {
  /** The address peers reach the relay at. */
  readonly publicAddress: Address;
  /** Two tokens, one per side, or undefined when the relay is full. (On the relay's own clock.) */
  allocate(): { tokens: [Uint8Array, Uint8Array] } | undefined;
  /**
   * Whether the allocation with this token still exists. Without it the introducer cannot
   * count an IP's live allocations, and `relayPerIp` does not apply.
   */
  isAlive?(token: Uint8Array): boolean;
}

/** The notification the host receives, and the joiner's answer: the same shape. */
export const INTRODUCE_METHOD = "nat.introduce";

/** Introduce: no live host with that id, or it registered without NAT support (not attached). */
export class NatHostUnavailableError extends GameError {
  constructor(id: number) {
    super("ERR_NAT_HOST_UNAVAILABLE", `host ${id} is not in the lobby, or its lobby connection cannot be introduced (register it from its game socket with NAT support)`);
  }
}

/** Introduce: this connection, or all joiners of this host together, asked faster than the lobby allows. */
export class NatRateLimitedError extends GameError {
  constructor(perSecond: number, per = "per connection") {
    super("ERR_NAT_RATE_LIMITED", `at most ${perSecond} introductions per second ${per}: wait and retry`);
  }
}

export interface NatIntroducerOptions {
  /** Introductions a connection may ask for per second (token bucket). Default 2. */
  ratePerSecond?: number;
  /** Bucket size. Default 4. */
  burst?: number;
  /**
   * Introductions to one host per second, from all joiners together. Default 5 (burst 10):
   * a host runs at most 32 punch runs of 2 s at once (PunchRuns), and many connections asking
   * for one host must not crowd out its runs.
   */
  hostRatePerSecond?: number;
  /** 16 random bytes per introduction (the two tokens). Default: Web Crypto. */
  random?: () => Uint8Array;
  /** A relay to allocate from for introductions (the fallback for symmetric NATs). */
  relay?: RelayAllocator;
  /**
   * Live relay allocations the joiners at one IP address may hold together. Default 16. Past
   * it, introductions go on without a relay: one client cannot take the relay's allocations
   * (reconnecting to the lobby does not help it), while players behind one carrier-grade NAT,
   * which is where symmetric NATs are common, still get theirs.
   */
  relayPerIp?: number;
}

/** A token bucket; NaN refilledAt: full, not yet used. */
interface Bucket {
  tokens: number;
  refilledAt: number;
}

interface Attached {
  address: Address;
  notify: (method: string, params: Value) => void;
  asking: Bucket;
  asked: Bucket;
}

/** Joiner IPs whose relay allocations are remembered; past it the least recently used is forgotten. */
const MAX_RELAY_IPS = 4096;

/** The lobby server's side: which connections can be introduced, and the introductions. */
export class NatIntroducer {
  readonly ratePerSecond: number;
  readonly burst: number;
  readonly hostRatePerSecond: number;
  readonly relayPerIp: number;
  /**
   * relayed: introductions with a relay allocation; relayFull and relayCapped: made without
   * one because the relay was full, or the joiner's IP holds relayPerIp live ones.
   */
  readonly counters = { introductions: 0, rateLimited: 0, unavailable: 0, relayed: 0, relayFull: 0, relayCapped: 0 };
  readonly #registry: LobbyRegistry;
  readonly #attached = new Map<number, Attached>();
  readonly #random: () => Uint8Array;
  readonly #relay: RelayAllocator | undefined;
  /** Joiner IP -> a token of each relay allocation made for it, in least-recently-used order. */
  readonly #relayByIp = new Map<string, Uint8Array[]>();

  constructor(registry: LobbyRegistry, options: NatIntroducerOptions = {}) {
    this.#registry = registry;
    this.ratePerSecond = positive("ratePerSecond", options.ratePerSecond ?? 2);
    this.burst = positive("burst", options.burst ?? 4);
    this.hostRatePerSecond = positive("hostRatePerSecond", options.hostRatePerSecond ?? 5);
    this.#random = options.random ?? (() => host.crypto.getRandomValues(new Uint8Array(16)));
    this.#relay = options.relay;
    this.relayPerIp = positive("relayPerIp", options.relayPerIp ?? 16);
  }

  /**
   * `owner`'s lobby connection, seen from `address` (its public address), can be introduced:
   * `notify` sends it an RPC notification. Call `detach(owner)` when it ends.
   */
  attach(owner: number, address: Address, notify: (method: string, params: Value) => void): void {
    this.#attached.set(owner, {
      address,
      notify,
      asking: { tokens: this.burst, refilledAt: Number.NaN },
      asked: { tokens: 2 * this.hostRatePerSecond, refilledAt: Number.NaN },
    });
  }

  detach(owner: number): void {
    this.#attached.delete(owner);
  }

  /**
   * `owner` (a joiner) asks to be introduced to host `id`, declaring its own local addresses.
   * The host is notified; the joiner gets the host's side. Throws NatHostUnavailableError,
   * NatRateLimitedError or GameUsageError (bad local addresses, or introducing itself).
   */
  introduce(now: number, owner: number, id: number, local: unknown, wantsRelay = true): NatIntroduction {
    const joiner = this.#attached.get(owner);
    if (joiner === undefined) throw new GameUsageError("this lobby connection is not attached to the NAT introducer");
    if (!take(now, joiner.asking, this.ratePerSecond, this.burst)) {
      this.counters.rateLimited++;
      throw new NatRateLimitedError(this.ratePerSecond);
    }
    const joinerLocal = checkLocalAddresses(local);
    const entry = this.#registry.get(now, id);
    const hostSide = entry === undefined ? undefined : this.#attached.get(entry.owner);
    if (entry === undefined || hostSide === undefined) {
      this.counters.unavailable++;
      throw new NatHostUnavailableError(id);
    }
    if (entry.owner === owner) throw new GameUsageError("a host cannot be introduced to itself");
    if (!take(now, hostSide.asked, this.hostRatePerSecond, 2 * this.hostRatePerSecond)) {
      this.counters.rateLimited++;
      throw new NatRateLimitedError(this.hostRatePerSecond, "for this host");
    }
    // Local addresses only between peers behind one public IP (one home network, whose router
    // may not hairpin): the only case they help, and elsewhere a declared address would aim the
    // other side's punches at a device on its own network.
    const sameNetwork = ipOf(joiner.address) === ipOf(hostSide.address);
    const random = this.#random();
    if (random.length < 16) throw new GameUsageError("the introducer's random() must return 16 bytes");
    const hostToken = random.slice(0, 8);
    const joinerToken = random.slice(8, 16);
    const toHost: NatIntroduction = { address: joiner.address, local: sameNetwork ? joinerLocal : [], token: hostToken, peerToken: joinerToken };
    const toJoiner: NatIntroduction = { address: entry.address, local: sameNetwork ? entry.local.slice() : [], token: joinerToken, peerToken: hostToken };
    if (this.#relay !== undefined && wantsRelay) {
      const live = this.#liveRelays(ipOf(joiner.address));
      const allocation = live.length < this.relayPerIp ? this.#relay.allocate() : null;
      if (allocation === null) {
        this.counters.relayCapped++;
      } else if (allocation === undefined) {
        this.counters.relayFull++;
      } else {
        if (this.#relay.isAlive !== undefined) live.push(allocation.tokens[0]);
        toHost.relay = { address: this.#relay.publicAddress, token: allocation.tokens[0] };
        toJoiner.relay = { address: this.#relay.publicAddress, token: allocation.tokens[1] };
        this.counters.relayed++;
      }
    }
    hostSide.notify(INTRODUCE_METHOD, toWire(toHost));
    this.counters.introductions++;
    return toJoiner;
  }

  /** The live relay allocations of joiners at `ip` (the dead ones dropped; the map is bounded). */
  #liveRelays(ip: string): Uint8Array[] {
    const relay = this.#relay!;
    let live = this.#relayByIp.get(ip);
    if (live !== undefined) {
      this.#relayByIp.delete(ip);
      if (relay.isAlive !== undefined) live = live.filter((token) => relay.isAlive!(token));
    } else {
      live = [];
      if (this.#relayByIp.size >= MAX_RELAY_IPS) this.#relayByIp.delete(this.#relayByIp.keys().next().value!);
    }
    this.#relayByIp.set(ip, live);
    return live;
  }
}

/** Takes one from `bucket` (refilled at `perSecond`, up to `size`) if it has one. */
function take(now: number, bucket: Bucket, perSecond: number, size: number): boolean {
  if (Number.isNaN(bucket.refilledAt)) bucket.refilledAt = now;
  bucket.tokens = Math.min(size, bucket.tokens + ((now - bucket.refilledAt) * perSecond) / 1000);
  bucket.refilledAt = now;
  if (bucket.tokens < 1) return false;
  bucket.tokens--;
  return true;
}

function positive(name: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0)) throw new GameUsageError(`NatIntroducer ${name} must be a positive number, got ${String(value)}`);
  return value;
}

/** The "nat.introduce" RPC method for `owner`'s lobby connection (mount beside lobbyHandlers). */
export function natHandlers(introducer: NatIntroducer, owner: number, now: () => number): Record<string, RpcHandler> {
  return {
    [INTRODUCE_METHOD]: (params) => {
      const p = (params ?? {}) as { id?: unknown; local?: unknown; relay?: unknown };
      if (typeof p.id !== "number" || !Number.isInteger(p.id) || p.id < 1) throw new GameUsageError("nat.introduce needs { id } of a lobby entry");
      // { relay: false }: the joiner will not use one, so none is allocated for it.
      return toWire(introducer.introduce(now(), owner, p.id, p.local, p.relay !== false));
    },
  };
}

/** An introduction as an RPC value (the relay field only when there is one). */
function toWire(intro: NatIntroduction): Value {
  const value: Record<string, Value> = { address: intro.address, local: intro.local, token: intro.token, peerToken: intro.peerToken };
  if (intro.relay !== undefined) value.relay = { address: intro.relay.address, token: intro.relay.token };
  return value;
}

/** Reads an introduction off the wire (the host's notification or the joiner's answer). */
export function parseIntroduction(value: unknown): NatIntroduction {
  const v = (value ?? {}) as { address?: unknown; local?: unknown; token?: unknown; peerToken?: unknown; relay?: unknown };
  if (typeof v.address !== "string" || !isIpAddress(v.address)) throw new GameUsageError(`an introduction's address must be "ip:port", got ${JSON.stringify(v.address)}`);
  for (const t of [v.token, v.peerToken]) if (!(t instanceof Uint8Array) || t.length !== 8) throw new GameUsageError("an introduction's token and peerToken must be 8 bytes each");
  const intro: NatIntroduction = { address: v.address, local: checkLocalAddresses(v.local), token: v.token as Uint8Array, peerToken: v.peerToken as Uint8Array };
  // A relay that is not an IP address with an 8-byte token is left out, not fatal: punching
  // does not need it.
  const r = (v.relay ?? {}) as { address?: unknown; token?: unknown };
  const relayAddress = typeof r.address === "string" ? canonicalAddress(r.address) : undefined;
  if (relayAddress !== undefined && r.token instanceof Uint8Array && r.token.length === 8) intro.relay = { address: relayAddress, token: r.token };
  return intro;
}

/** Every address of an introduction, the public one first, each once. */
export function candidates(intro: NatIntroduction): Address[] {
  return [...new Set([intro.address, ...intro.local])];
}

export interface PunchSchedule {
  /** Punches per address. Default 20. */
  count?: number;
  /** Between two rounds. Default 100 ms (20 rounds: 2 s, longer than a handshake retry). */
  intervalMs?: number;
}

interface Run {
  targets: Address[];
  token: Uint8Array;
  acceptToken: Uint8Array;
  /** A relay route's virtual address to bind each round (the host's), if any. */
  bind: Address | undefined;
  left: number;
  next: number;
  intervalMs: number;
}

/** Concurrent punch runs; start() refuses more (a run already started is never cut short). */
export const MAX_PUNCH_RUNS = 32;

/**
 * Punch runs, sans-IO: each punches every address of an introduction once per round, for a
 * bounded number of rounds. Drive it with `pollTimeout()` / `handleTimeout(now, punch)`.
 */
export class PunchRuns {
  readonly #runs: Run[] = [];

  get size(): number {
    return this.#runs.length;
  }

  /**
   * Starts punching `targets` with `token`, listening for `acceptToken`; the first round goes
   * out at the next handleTimeout. False (nothing started) when MAX_PUNCH_RUNS are running.
   */
  start(now: number, targets: Address[], token: Uint8Array, acceptToken: Uint8Array, schedule: PunchSchedule = {}, bind?: Address): boolean {
    const count = schedule.count ?? 20;
    const intervalMs = schedule.intervalMs ?? 100;
    if (!Number.isInteger(count) || count < 1 || count > 1000) throw new GameUsageError(`punch count must be an integer in 1..1000, got ${String(count)}`);
    if (!(intervalMs >= 10 && intervalMs <= 10_000)) throw new GameUsageError(`punch intervalMs must be in 10..10000, got ${String(intervalMs)}`);
    if (this.#runs.length >= MAX_PUNCH_RUNS) return false;
    this.#runs.push({ targets: targets.slice(), token: token.slice(), acceptToken: acceptToken.slice(), bind, left: count, next: now, intervalMs });
    return true;
  }

  /** Stops the runs with this token (the connection is up, or was given up). */
  stop(token: Uint8Array): void {
    for (let i = this.#runs.length - 1; i >= 0; i--) if (sameToken(this.#runs[i]!.token, token)) this.#runs.splice(i, 1);
  }

  pollTimeout(): number | undefined {
    let earliest: number | undefined;
    for (const run of this.#runs) if (earliest === undefined || run.next < earliest) earliest = run.next;
    return earliest;
  }

  /**
   * Sends the rounds that are due: `punch` per target, and `bind` with the run's relay route
   * if it has one (so the relay learns, and keeps, the host's address before the joiner falls
   * back to it).
   */
  handleTimeout(now: number, punch: (address: Address, token: Uint8Array, acceptToken: Uint8Array) => void, bind?: (virtual: Address) => void): void {
    for (let i = 0; i < this.#runs.length; ) {
      const run = this.#runs[i]!;
      if (run.next <= now) {
        for (const target of run.targets) punch(target, run.token, run.acceptToken);
        if (run.bind !== undefined) bind?.(run.bind);
        run.left--;
        run.next = now + run.intervalMs;
      }
      if (run.left <= 0) this.#runs.splice(i, 1);
      else i++;
    }
  }
}

export function sameToken(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
