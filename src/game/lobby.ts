/**
 * A small matchmaking list (a matchmaking server keeping a list of game hosts).
 * Hosts register over an ackwire connection and heartbeat; clients list and filter; an entry
 * whose host stops heartbeating (or disconnects) goes away.
 *
 * Two parts:
 * - `LobbyRegistry`: the list itself, sans-IO (time passed in), bounded (maxEntries), one entry
 *   per owner (a connection id), expiring `ttlMs` after the last heartbeat;
 * - `lobbyHandlers(registry, owner, address)`: the RPC methods (./rpc.ts) a lobby server mounts on
 *   each connection, and `LobbyHost`, the host side that registers and heartbeats on schedule.
 * The host's address in the list is the one the server saw (its public address behind NAT, the
 * seed's reason for a matchmaker) with the game port it announced.
 *
 * RPC methods (params -> result):
 *   lobby.register   { name, gamePort, players, maxPlayers, tags?, appData? } -> { id, ttlMs }
 *   lobby.heartbeat  { players? } -> { id }
 *   lobby.unregister null -> null
 *   lobby.list       { name?, tag?, notFull?, limit? } -> [{ id, address, name, players, maxPlayers, tags, appData }]
 */
import { isIpv4Literal, isIpv6Literal } from "../api/address.js";
import { isValidAddress } from "../session/address.js";
import type { Address } from "../session/sans-io.js";
import type { Value } from "./codec.js";
import { GameUsageError, LobbyFullError, LobbyNotRegisteredError } from "./errors.js";
import type { RpcHandler } from "./rpc.js";

export interface LobbyHostInfo {
  name: string;
  /**
   * The port players connect to; 0: the port the lobby sees this registration come from. A
   * host behind a NAT registers from its game socket (`server.connect()` to the lobby) with 0,
   * so the listed address is its game socket's public one (NAT traversal: ./nat.ts).
   */
  gamePort: number;
  players: number;
  maxPlayers: number;
  tags?: string[];
  appData?: Uint8Array;
  /** The game socket's addresses on the host's own networks (at most 4 "ip:port", private
   *  ranges only): given only to players the lobby introduces (./nat.ts), who try them too
   *  (same LAN, no hairpinning). */
  local?: string[];
}

export interface LobbyEntry extends Required<LobbyHostInfo> {
  id: number;
  owner: number;
  /** The address players connect to: the host's IP as the server saw it, and its game port. */
  address: Address;
  registeredAt: number;
  lastHeartbeat: number;
}

export interface LobbyFilter {
  /** Case-insensitive substring of the name. */
  name?: string;
  tag?: string;
  notFull?: boolean;
  /** At most this many entries (1..100). Default 50. */
  limit?: number;
}

const MAX_NAME = 64;
const MAX_TAGS = 8;
const MAX_TAG = 32;
const MAX_APP_DATA = 512;
const MAX_LIST = 100;

export class LobbyRegistry {
  readonly ttlMs: number;
  readonly maxEntries: number;
  readonly #byOwner = new Map<number, LobbyEntry>();
  #nextId = 1;

  constructor(options: { ttlMs?: number; maxEntries?: number } = {}) {
    this.ttlMs = options.ttlMs ?? 15_000;
    // NaN would keep every entry forever (no comparison with it is true).
    if (!(typeof this.ttlMs === "number" && this.ttlMs > 0 && this.ttlMs <= 2 ** 31 - 1)) throw new GameUsageError(`ttlMs must be a number of ms in (0, ${2 ** 31 - 1}], got ${String(this.ttlMs)}`);
    this.maxEntries = checkInt("maxEntries", options.maxEntries ?? 1024, 1, 1_048_576);
  }

  get size(): number {
    return this.#byOwner.size;
  }

  /**
   * Adds (or replaces) `owner`'s host. `seenPort` is the port the registration came from (used
   * for gamePort 0). Throws GameUsageError on bad info, LobbyFullError when full.
   */
  register(now: number, owner: number, ip: string, info: LobbyHostInfo, seenPort?: number): LobbyEntry {
    const clean = validateInfo(info);
    if (clean.gamePort === 0) {
      if (seenPort === undefined) throw new GameUsageError("gamePort 0 (the port the lobby sees) needs the lobby to know the connection's port (lobbyHandlers' port argument)");
      clean.gamePort = seenPort;
    }
    const previous = this.#byOwner.get(owner);
    if (previous === undefined && this.#byOwner.size >= this.maxEntries) {
      this.handleTimeout(now);
      if (this.#byOwner.size >= this.maxEntries) throw new LobbyFullError(this.maxEntries);
    }
    const entry: LobbyEntry = {
      ...clean,
      id: previous?.id ?? this.#nextId++,
      owner,
      address: ip.includes(":") ? `[${ip}]:${clean.gamePort}` : `${ip}:${clean.gamePort}`,
      registeredAt: previous?.registeredAt ?? now,
      lastHeartbeat: now,
    };
    this.#byOwner.set(owner, entry);
    return entry;
  }

  /** Refreshes `owner`'s entry (and its player count). Throws LobbyNotRegisteredError if it has none. */
  heartbeat(now: number, owner: number, players?: number): LobbyEntry {
    const entry = this.#byOwner.get(owner);
    if (entry === undefined || now - entry.lastHeartbeat > this.ttlMs) {
      this.#byOwner.delete(owner);
      throw new LobbyNotRegisteredError();
    }
    if (players !== undefined) entry.players = checkInt("players", players, 0, entry.maxPlayers);
    entry.lastHeartbeat = now;
    return entry;
  }

  /** The live entry with this id, if any. A scan of at most maxEntries: per request, not per frame. */
  get(now: number, id: number): LobbyEntry | undefined {
    for (const entry of this.#byOwner.values()) if (entry.id === id) return now - entry.lastHeartbeat > this.ttlMs ? undefined : entry;
    return undefined;
  }

  /** Removes `owner`'s entry (unregister, or its connection ended). */
  remove(owner: number): void {
    this.#byOwner.delete(owner);
  }

  /** Live entries matching the filter, oldest registration first. */
  list(now: number, filter: LobbyFilter = {}): LobbyEntry[] {
    const limit = checkInt("limit", filter.limit ?? 50, 1, MAX_LIST);
    const needle = filter.name?.toLowerCase();
    const out: LobbyEntry[] = [];
    for (const entry of this.#byOwner.values()) {
      if (now - entry.lastHeartbeat > this.ttlMs) continue;
      if (needle !== undefined && !entry.name.toLowerCase().includes(needle)) continue;
      if (filter.tag !== undefined && !entry.tags.includes(filter.tag)) continue;
      if (filter.notFull === true && entry.players >= entry.maxPlayers) continue;
      out.push(entry);
      if (out.length >= limit) break;
    }
    return out;
  }

  /** When the next entry expires, if any. A scan: call it after changes, not per frame. */
  pollTimeout(): number | undefined {
    let earliest: number | undefined;
    for (const e of this.#byOwner.values()) {
      const at = e.lastHeartbeat + this.ttlMs;
      if (earliest === undefined || at < earliest) earliest = at;
    }
    return earliest;
  }

  /** Removes expired entries. */
  handleTimeout(now: number): void {
    for (const [owner, e] of this.#byOwner) if (now - e.lastHeartbeat > this.ttlMs) this.#byOwner.delete(owner);
  }
}

/** "ip:port" or "[ipv6]:port" with an IP literal. */
export function isIpAddress(address: string): boolean {
  if (!isValidAddress(address)) return false;
  const host = ipOf(address);
  return host.startsWith("[") ? isIpv6Literal(host.slice(1, -1)) : isIpv4Literal(host);
}

/** The IP part of "ip:port" / "[ipv6]:port", brackets kept. */
export function ipOf(address: Address): string {
  return address.slice(0, address.lastIndexOf(":"));
}

function checkInt(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) throw new GameUsageError(`${field} must be an integer in ${min}..${max}, got ${String(value)}`);
  return value;
}

function checkString(field: string, value: unknown, max: number): string {
  if (typeof value !== "string" || value.length === 0 || value.length > max) throw new GameUsageError(`${field} must be a non-empty string of at most ${max} characters`);
  return value;
}

/** Validates info that may come straight off the wire (RPC params). */
function validateInfo(info: unknown): Required<LobbyHostInfo> {
  if (typeof info !== "object" || info === null) throw new GameUsageError("host info must be an object { name, gamePort, players, maxPlayers, tags?, appData? }");
  const i = info as Record<string, unknown>;
  const maxPlayers = checkInt("maxPlayers", i.maxPlayers, 1, 1024);
  const tags = i.tags ?? [];
  if (!Array.isArray(tags) || tags.length > MAX_TAGS) throw new GameUsageError(`tags must be an array of at most ${MAX_TAGS} strings`);
  const appData = i.appData ?? new Uint8Array(0);
  if (!(appData instanceof Uint8Array) || appData.length > MAX_APP_DATA) throw new GameUsageError(`appData must be a Uint8Array of at most ${MAX_APP_DATA} bytes`);
  return {
    name: checkString("name", i.name, MAX_NAME),
    gamePort: checkInt("gamePort", i.gamePort, 0, 65535),
    players: checkInt("players", i.players, 0, maxPlayers),
    maxPlayers,
    tags: tags.map((t) => checkString("tag", t, MAX_TAG)),
    appData: appData.slice(),
    local: checkLocalAddresses(i.local),
  };
}

const MAX_LOCAL_ADDRESSES = 4;

/**
 * At most 4 "ip:port" addresses on private networks, or none. Only private ranges: a peer that
 * is introduced punches these, so a joiner declaring a public address could aim a host's
 * punches at a third party.
 */
export function checkLocalAddresses(value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > MAX_LOCAL_ADDRESSES) throw new GameUsageError(`local must be an array of at most ${MAX_LOCAL_ADDRESSES} "ip:port" addresses`);
  return value.map((a) => {
    if (typeof a !== "string" || !isIpAddress(a) || !isPrivateAddress(a)) {
      throw new GameUsageError(
        `local address ${JSON.stringify(a)} is not "ip:port" or "[ipv6]:port" with a private IP (10/8, 172.16/12, 192.168/16, 169.254/16, 127/8, fc00::/7, fe80::/10, ::1)`,
      );
    }
    return a;
  });
}

/**
 * An "ip:port" (isIpAddress) on a private, link-local or loopback network. IPv4 must be strict
 * dotted decimal (no leading zeros, each part 0..255): some runtimes read "010.8.8.8" as octal,
 * i.e. 8.8.8.8, so a loose parse would let a public address through.
 */
function isPrivateAddress(address: string): boolean {
  const host = ipOf(address);
  if (host.startsWith("[")) {
    const v6 = host.slice(1, -1).toLowerCase();
    if (!/^[0-9a-f:]+$/.test(v6)) return false;
    // ::1, fc00::/7 (a full first group fcXX or fdXX), fe80::/10 (fe80..febf).
    return v6 === "::1" || /^f[cd][0-9a-f]{2}:/.test(v6) || /^fe[89ab][0-9a-f]:/.test(v6);
  }
  const parts = host.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^(0|[1-9][0-9]{0,2})$/.test(p) && Number(p) <= 255)) return false;
  const [a, b] = parts.map(Number) as [number, number];
  return a === 10 || a === 127 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254);
}

/** What a client sees of an entry (no owner ids, server times or local addresses). */
function publicEntry(e: LobbyEntry): Value {
  return { id: e.id, address: e.address, name: e.name, players: e.players, maxPlayers: e.maxPlayers, tags: e.tags, appData: e.appData };
}

/**
 * The RPC methods for one connection to the lobby server. `owner` identifies the connection
 * (its id), `ip` is the peer's IP as the server saw it, `now` the server's clock, `port` the
 * peer's port as the server saw it (lets hosts register with gamePort 0). When the connection
 * ends, call `registry.remove(owner)`.
 */
export function lobbyHandlers(registry: LobbyRegistry, owner: number, ip: string, now: () => number, port?: number): Record<string, RpcHandler> {
  return {
    "lobby.register": (params) => {
      const entry = registry.register(now(), owner, ip, params as unknown as LobbyHostInfo, port);
      return { id: entry.id, ttlMs: registry.ttlMs };
    },
    "lobby.heartbeat": (params) => {
      const players = (params as { players?: unknown } | null)?.players;
      return { id: registry.heartbeat(now(), owner, players === undefined ? undefined : checkInt("players", players, 0, 1024)).id };
    },
    "lobby.unregister": () => {
      registry.remove(owner);
      return null;
    },
    "lobby.list": (params) => {
      const f = (params ?? {}) as Record<string, unknown>;
      const filter: LobbyFilter = {};
      if (f.name !== undefined) filter.name = checkString("name", f.name, MAX_NAME);
      if (f.tag !== undefined) filter.tag = checkString("tag", f.tag, MAX_TAG);
      if (f.notFull !== undefined) filter.notFull = f.notFull === true;
      if (f.limit !== undefined) filter.limit = checkInt("limit", f.limit, 1, MAX_LIST);
      return registry.list(now(), filter).map(publicEntry);
    },
  };
}

/** The host side: registers, then heartbeats every `heartbeatMs` (default ttl / 3) with its player count. */
export class LobbyHost {
  readonly #call: (method: string, params?: unknown) => Promise<Value>;
  #info: LobbyHostInfo;
  #heartbeatMs: number | undefined;
  #next: number | undefined;
  /** Heartbeats that failed (the host re-registers after LobbyNotRegisteredError). */
  failures = 0;

  /** Throws GameUsageError for info the lobby would refuse (the same checks as the registry's). */
  constructor(call: (method: string, params?: unknown) => Promise<Value>, info: LobbyHostInfo, options: { heartbeatMs?: number } = {}) {
    validateInfo(info);
    if (options.heartbeatMs !== undefined) checkInt("heartbeatMs", options.heartbeatMs, 1, 2 ** 31 - 1);
    this.#call = call;
    this.#info = { ...info };
    this.#heartbeatMs = options.heartbeatMs;
  }

  async register(now: number): Promise<number> {
    const result = (await this.#call("lobby.register", this.#info as unknown as Value)) as { id: number; ttlMs: number };
    this.#heartbeatMs ??= Math.max(100, Math.floor(result.ttlMs / 3));
    this.#next = now + this.#heartbeatMs;
    return result.id;
  }

  /** The player count the next heartbeat reports: an integer in 0..maxPlayers, else
   *  GameUsageError (the lobby would refuse every heartbeat, and the entry would expire). */
  setPlayers(players: number): void {
    this.#info.players = checkInt("players", players, 0, this.#info.maxPlayers);
  }

  pollTimeout(): number | undefined {
    return this.#next;
  }

  /** Sends the heartbeat when due; re-registers if the server forgot this host. */
  handleTimeout(now: number): void {
    if (this.#next === undefined || now < this.#next) return;
    this.#next = now + this.#heartbeatMs!;
    this.#call("lobby.heartbeat", { players: this.#info.players }).catch((error: { remoteCode?: string }) => {
      this.failures++;
      if (error.remoteCode === "ERR_LOBBY_NOT_REGISTERED") void this.register(now).catch(() => this.failures++);
    });
  }
}
