/**
 * LAN discovery (LANCALL / LANANSWER), sans-IO: an asker sends a small query to a
 * broadcast address (or a list of addresses); every game host's responder answers with its
 * name, game port, player count and app data. Both halves implement the SansIoNode shape
 * (handleDatagram / pollTransmit / pollTimeout), so they run on the simulator's Network as they
 * run on a socket (./discovery-socket.ts).
 *
 * Datagram (little-endian), both directions:
 *   u32 magic 0x444c5741 ("AWLD") | u8 version 1 | u8 type (1 LANCALL, 2 LANANSWER) |
 *   u32 appId (the game's protocol id: other games' queries are ignored) | u32 nonce |
 *   body | u32 CRC32C of everything before it
 *   LANCALL body:   zero bytes, padding the query to exactly QUERY_BYTES.
 *   LANANSWER body: name (varuint length + UTF-8, <= 64 bytes) | u16 game port |
 *                   u8 players | u8 maxPlayers | app data (varuint length + bytes)
 *
 * Amplification: a query is padded to QUERY_BYTES and an answer is never larger than the query
 * that asked for it, so a spoofed source gains nothing; answers are also rate-limited per
 * address and overall. Anything else (bad magic/CRC/length, other appId, answers to nonces we
 * did not send) is counted and dropped.
 */
import { isValidAddress } from "../session/address.js";
import type { Address, Transmit } from "../session/sans-io.js";
import { crcUpdate } from "../engine/crc32c.js";
import { ByteReader, ByteWriter, encodeUtf8 } from "./bytes.js";
import { ByteReadError, GameMessageTooLargeError, GameUsageError } from "./errors.js";

export const DISCOVERY_MAGIC = 0x444c5741;
export const DISCOVERY_VERSION = 1;
/** Every query is exactly this long; answers are at most this long. */
export const QUERY_BYTES = 256;
const HEADER_BYTES = 14;
const CRC_BYTES = 4;
const MAX_NAME_BYTES = 64;
const LANCALL = 1;
const LANANSWER = 2;

export interface HostInfo {
  name: string;
  /** The port the game itself listens on (ackwire listen()). */
  gamePort: number;
  players: number;
  maxPlayers: number;
  /** Game-specific bytes (map name, mode...). Kept small: the whole answer fits QUERY_BYTES. */
  appData?: Uint8Array;
}

export interface DiscoveredHost extends HostInfo {
  /** The address that answered (the responder's socket). */
  from: Address;
  /** `from`'s IP with the game port: what to pass to connect(). */
  gameAddress: Address;
  /** Query-to-answer time of the latest answer (ms). */
  rttMs: number;
  lastSeen: number;
}

/** An integer in min..max, else GameUsageError naming the option. */
export function checkInteger(name: string, value: unknown, min: number, max: number): number {
  if (!(typeof value === "number" && Number.isInteger(value) && value >= min && value <= max)) throw new GameUsageError(`${name} must be an integer in ${min}..${max}, got ${String(value)}`);
  return value;
}

/** A finite number in min..max (min excluded when `exclusive`), else GameUsageError. */
export function checkNumber(name: string, value: unknown, min: number, max: number, exclusive = false): number {
  if (!(typeof value === "number" && Number.isFinite(value) && (exclusive ? value > min : value >= min) && value <= max)) {
    throw new GameUsageError(`${name} must be a number in ${exclusive ? "(" : "["}${min}, ${max}], got ${String(value)}`);
  }
  return value;
}

function crc32c(bytes: Uint8Array, length: number): number {
  return (crcUpdate(0xffffffff, bytes, 0, length) ^ 0xffffffff) >>> 0;
}

function seal(w: ByteWriter): Uint8Array {
  const body = w.finish();
  return w.u32(crc32c(body, body.length)).finish();
}

function header(type: number, appId: number, nonce: number): ByteWriter {
  // Ids are 32-bit patterns: a signed spelling (nonce ^ 1) is the same id.
  return new ByteWriter(QUERY_BYTES).u32(DISCOVERY_MAGIC).u8(DISCOVERY_VERSION).u8(type).u32(appId >>> 0).u32(nonce >>> 0);
}

export function encodeQuery(appId: number, nonce: number): Uint8Array {
  return seal(header(LANCALL, appId, nonce).zeros(QUERY_BYTES - HEADER_BYTES - CRC_BYTES));
}

export function encodeAnswer(appId: number, nonce: number, info: HostInfo): Uint8Array {
  const name = encodeUtf8(info.name);
  if (name.length > MAX_NAME_BYTES) throw new GameUsageError(`host name is ${name.length} bytes of UTF-8; at most ${MAX_NAME_BYTES}: shorten it`);
  for (const [field, value, max] of [
    ["gamePort", info.gamePort, 65535],
    ["players", info.players, 255],
    ["maxPlayers", info.maxPlayers, 255],
  ] as const) {
    checkInteger(field, value, 0, max);
  }
  // A host that says 9 of 8 would be listed as full and joinable at once; the count is wrong.
  if (info.players > info.maxPlayers) throw new GameUsageError(`players (${info.players}) must be at most maxPlayers (${info.maxPlayers})`);
  const bytes = seal(header(LANANSWER, appId, nonce).blob(name).u16(info.gamePort).u8(info.players).u8(info.maxPlayers).blob(info.appData ?? new Uint8Array(0)));
  if (bytes.length > QUERY_BYTES) throw new GameMessageTooLargeError("the LAN answer (name + app data)", bytes.length, QUERY_BYTES);
  return bytes;
}

type Parsed = { type: typeof LANCALL; appId: number; nonce: number } | { type: typeof LANANSWER; appId: number; nonce: number; info: HostInfo };

/** Parses and verifies one datagram; undefined if it is not a valid discovery datagram. */
export function decodeDiscovery(bytes: Uint8Array): Parsed | undefined {
  if (bytes.length < HEADER_BYTES + CRC_BYTES || bytes.length > QUERY_BYTES) return undefined;
  const end = bytes.length - CRC_BYTES;
  try {
    const r = new ByteReader(bytes, 0, bytes.length);
    if (r.u32() !== DISCOVERY_MAGIC || r.u8() !== DISCOVERY_VERSION) return undefined;
    const type = r.u8();
    const appId = r.u32();
    const nonce = r.u32();
    if (new ByteReader(bytes, end).u32() !== crc32c(bytes, end)) return undefined;
    const body = new ByteReader(bytes, r.offset, end);
    if (type === LANCALL) {
      if (bytes.length !== QUERY_BYTES) return undefined;
      for (let i = body.offset; i < end; i++) if (bytes[i] !== 0) return undefined;
      return { type, appId, nonce };
    }
    if (type !== LANANSWER) return undefined;
    const name = body.string(MAX_NAME_BYTES);
    const gamePort = body.u16();
    const players = body.u8();
    const maxPlayers = body.u8();
    const appData = body.blob(QUERY_BYTES);
    if (body.remaining !== 0) return undefined;
    return { type, appId, nonce, info: { name, gamePort, players, maxPlayers, appData } };
  } catch (error) {
    if (error instanceof ByteReadError) return undefined;
    throw error;
  }
}

/** Token bucket on the caller's clock. */
class Bucket {
  tokens: number;
  at: number;
  constructor(burst: number, now: number) {
    this.tokens = burst;
    this.at = now;
  }
  take(now: number, ratePerSecond: number, burst: number): boolean {
    this.tokens = Math.min(burst, this.tokens + (Math.max(0, now - this.at) * ratePerSecond) / 1000);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export interface ResponderOptions {
  appId: number;
  info: HostInfo;
  /** Answers per second to one address (burst 2), > 0. Default 4. */
  perAddressRate?: number;
  /** Answers per second overall (burst the same), >= 1 (the burst must hold one answer). Default 50. */
  totalRate?: number;
  /** Addresses tracked for the per-address limit (oldest forgotten first), 1..1048576. Default 1024. */
  maxTrackedAddresses?: number;
}

export class DiscoveryResponder {
  readonly counters = { queries: 0, answered: 0, rateLimited: 0, otherApp: 0, malformed: 0 };
  readonly #appId: number;
  #info!: HostInfo;
  readonly #perAddressRate: number;
  readonly #totalRate: number;
  readonly #maxTracked: number;
  #total: Bucket | undefined;
  #perAddress = new Map<Address, Bucket>();
  #out: Transmit[] = [];

  constructor(options: ResponderOptions) {
    this.#appId = checkInteger("appId", options.appId, 0, 0xffffffff);
    this.#perAddressRate = checkNumber("perAddressRate", options.perAddressRate ?? 4, 0, 1e6, true);
    this.#totalRate = checkNumber("totalRate", options.totalRate ?? 50, 1, 1e6);
    this.#maxTracked = checkInteger("maxTrackedAddresses", options.maxTrackedAddresses ?? 1024, 1, 1_048_576);
    this.setInfo(options.info);
  }

  /** Updates what the host advertises (player count changes...). Throws if it does not fit. */
  setInfo(info: HostInfo): void {
    encodeAnswer(this.#appId, 0, info); // validates, and checks the size limit
    this.#info = { ...info };
  }

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    const m = decodeDiscovery(bytes);
    if (m === undefined || m.type !== LANCALL) {
      this.counters.malformed++;
      return;
    }
    if (m.appId !== this.#appId) {
      this.counters.otherApp++;
      return;
    }
    this.counters.queries++;
    this.#total ??= new Bucket(this.#totalRate, now);
    let bucket = this.#perAddress.get(from);
    if (bucket === undefined) {
      if (this.#perAddress.size >= this.#maxTracked) this.#perAddress.delete(this.#perAddress.keys().next().value!);
      bucket = new Bucket(2, now);
      this.#perAddress.set(from, bucket);
    }
    if (!bucket.take(now, this.#perAddressRate, 2) || !this.#total.take(now, this.#totalRate, this.#totalRate)) {
      this.counters.rateLimited++;
      return;
    }
    const answer = encodeAnswer(this.#appId, m.nonce, this.#info);
    // Never larger than the query (both are <= QUERY_BYTES and queries are exactly that).
    if (answer.length > bytes.length) return;
    this.counters.answered++;
    this.#out.push({ to: from, bytes: answer });
  }

  handleTimeout(_now: number): void {}
  pollTimeout(): number | undefined {
    return undefined;
  }
  pollTransmit(_now?: number): Transmit | undefined {
    return this.#out.shift();
  }
  pollEvent(): undefined {
    return undefined;
  }
}

export interface AskerOptions {
  appId: number;
  /** Where queries go: a broadcast address ("255.255.255.255:47777") or known hosts. */
  targets: Address[];
  /** Seed for the nonces, an integer (tests fix it; pass a random one in production). */
  seed: number;
  /** A host not heard from for this long leaves hosts(), > 0. Default 5000 ms. */
  hostTtlMs?: number;
  /** Hosts remembered at most, 1..65536. Default 256. */
  maxHosts?: number;
}

export class DiscoveryAsker {
  readonly counters = { queriesSent: 0, answers: 0, unknownNonce: 0, otherApp: 0, malformed: 0, hostsDropped: 0 };
  readonly #appId: number;
  readonly #targets: Address[];
  readonly #ttl: number;
  readonly #maxHosts: number;
  #rng: number;
  /** The last few nonces and when they were sent: answers must echo one of them. */
  #nonces: { nonce: number; sentAt: number }[] = [];
  #hosts = new Map<Address, DiscoveredHost>();
  #out: Transmit[] = [];

  constructor(options: AskerOptions) {
    this.#appId = checkInteger("appId", options.appId, 0, 0xffffffff);
    if (!Array.isArray(options.targets)) throw new GameUsageError(`targets must be an array of "ip:port" addresses, got ${typeof options.targets}`);
    for (const target of options.targets) {
      if (!isValidAddress(target)) throw new GameUsageError(`target ${JSON.stringify(target)} is not "ip:port" or "[ipv6]:port" with a port in 1..65535`);
    }
    this.#targets = [...options.targets];
    this.#ttl = checkNumber("hostTtlMs", options.hostTtlMs ?? 5000, 0, Number.MAX_SAFE_INTEGER, true);
    this.#maxHosts = checkInteger("maxHosts", options.maxHosts ?? 256, 1, 65_536);
    const seed = checkInteger("seed", options.seed, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    this.#rng = (seed ^ 0x5bd1e995) >>> 0 || 1;
  }

  /** Queues one query to every target (with a fresh nonce). Call it every few hundred ms. */
  query(now: number): void {
    // xorshift32: the nonce only has to be unguessable by a LAN bystander who cannot see it.
    let x = this.#rng;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#rng = x >>> 0;
    this.#nonces.push({ nonce: this.#rng, sentAt: now });
    if (this.#nonces.length > 4) this.#nonces.shift();
    const bytes = encodeQuery(this.#appId, this.#rng);
    for (const to of this.#targets) this.#out.push({ to, bytes });
    this.counters.queriesSent++;
  }

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    const m = decodeDiscovery(bytes);
    if (m === undefined || m.type !== LANANSWER) {
      this.counters.malformed++;
      return;
    }
    if (m.appId !== this.#appId) {
      this.counters.otherApp++;
      return;
    }
    const sent = this.#nonces.find((n) => n.nonce === m.nonce);
    if (sent === undefined) {
      this.counters.unknownNonce++;
      return;
    }
    this.counters.answers++;
    if (!this.#hosts.has(from) && this.#hosts.size >= this.#maxHosts) {
      this.counters.hostsDropped++;
      return;
    }
    const ip = from.slice(0, from.lastIndexOf(":"));
    this.#hosts.set(from, { ...m.info, from, gameAddress: `${ip}:${m.info.gamePort}`, rttMs: now - sent.sentAt, lastSeen: now });
  }

  /** Hosts heard from within hostTtlMs, by name. Expired ones are forgotten. */
  hosts(now: number): DiscoveredHost[] {
    for (const [from, host] of this.#hosts) if (now - host.lastSeen > this.#ttl) this.#hosts.delete(from);
    return [...this.#hosts.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  handleTimeout(_now: number): void {}
  pollTimeout(): number | undefined {
    return undefined;
  }
  pollTransmit(_now?: number): Transmit | undefined {
    return this.#out.shift();
  }
  pollEvent(): undefined {
    return undefined;
  }
}
