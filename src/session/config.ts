/** Endpoint configuration with every default filled in and every value checked once. */
import type { TraceFactory } from "../trace/qlog.js";
import { DeliveryKind } from "../engine/abi.js";
import type { CongestionConfig } from "../congestion/controller.js";
import { SessionConfigError } from "./errors.js";
import { DEFAULT_CHANNELS, type ChannelConfig, type DatagramCarrier, type DeliveryMode, type EndpointConfig } from "./types.js";
import type { Address } from "./sans-io.js";

export interface ResolvedConfig {
  protocolId: number;
  appVersion: number;
  channels: readonly ChannelConfig[];
  kinds: DeliveryKind[];
  channelHash: number;
  mtu: number;
  /** Path MTU discovery's upper bound (= mtu: discovery off). */
  maxMtu: number;
  carrier: ((address: Address) => DatagramCarrier | undefined) | undefined;
  server: boolean;
  maxConnections: number;
  maxPendingHandshakes: number;
  maxPendingAccepts: number;
  acceptTimeoutMs: number;
  handshakeRatePerAddress: number;
  /** Server: connections per source host (rateKeyOf); 65536 (no limit) by default. */
  maxConnectionsPerHost: number;
  timeoutMs: number;
  unresponsiveMs: number;
  keepaliveMs: number;
  maxReceiveBufferBytes: number;
  maxTotalReceiveBufferBytes: number;
  congestion: string;
  congestionOptions: Omit<CongestionConfig, "algorithm">;
  accept?: EndpointConfig["accept"];
  seed: number;
  engine: "wasm" | "ts";
  /** Client: give up connecting after this long. */
  connectTimeoutMs: number;
  /** Client: first handshake resend delay; doubles up to handshakeResendMaxMs. */
  handshakeResendMs: number;
  handshakeResendMaxMs: number;
  /** Graceful close: stop resending DISCONNECT after this long. */
  closeTimeoutMs: number;
  /** Cookie time window (PROTOCOL §4). */
  cookieWindowMs: number;
  /** Delay before a pure ack is sent when an ack is owed and nothing else goes out. */
  ackDelayMs: number;
  /** Longest an owed ack waits for the connection's predicted next send (cadence). */
  ackPiggybackMs: number;
  /** Client: CLOCK_REQUEST period after the fast start. */
  clockSyncMs: number;
  /** Client: CLOCK_REQUEST period during the first clockSyncFastPhaseMs after connecting. */
  clockSyncFastMs: number;
  clockSyncFastPhaseMs: number;
  /** NO_CONNECTION replies per address per second. */
  noConnectionRatePerAddress: number;
  /** Addresses tracked by each rate limiter. */
  rateLimitEntries: number;
  /** Address migration allowed (client: tries it; server: accepts it). */
  migration: boolean;
  /** EndpointConfig.trace, if given. */
  trace: TraceFactory | undefined;
  /** EndpointConfig.secret (checked: 16+ bytes), crypto-random bytes when neither it nor a
   *  seed was given, or undefined: derived from the seed. */
  secret: Uint8Array | undefined;
}

export const MODE_KINDS: Record<DeliveryMode, DeliveryKind> = {
  unreliable: DeliveryKind.Unreliable,
  "unreliable-sequenced": DeliveryKind.UnreliableSequenced,
  "reliable-unordered": DeliveryKind.ReliableUnordered,
  "reliable-ordered": DeliveryKind.ReliableOrdered,
  "reliable-sequenced": DeliveryKind.ReliableSequenced,
  "latest-state": DeliveryKind.LatestState,
};

/** FNV-1a (32-bit) of the channel count and each channel's kind (PROTOCOL §4). */
export function channelConfigHash(kinds: readonly number[]): number {
  let h = 0x811c9dc5;
  const mix = (byte: number) => {
    h ^= byte & 0xff;
    h = Math.imul(h, 0x01000193) >>> 0;
  };
  mix(kinds.length);
  for (const k of kinds) mix(k);
  return h >>> 0;
}

/**
 * Default upper bound of path MTU discovery: the UDP payload of a 1500-byte Ethernet frame over
 * IPv6 (1500 - 40 - 8), which IPv4 paths of the same links carry too (quinn's default bound).
 */
const DEFAULT_MAX_MTU = 1452;

/** 16 bytes from the Web Crypto API, which Node, Bun and Deno all provide as a global. */
function cryptoSecret(): Uint8Array | undefined {
  const crypto = (globalThis as { crypto?: { getRandomValues(a: Uint8Array): Uint8Array } }).crypto;
  return crypto === undefined ? undefined : crypto.getRandomValues(new Uint8Array(16));
}

function checkSecret(secret: Uint8Array | undefined): Uint8Array | undefined {
  if (secret === undefined) return undefined;
  if (!(secret instanceof Uint8Array) || secret.length < 16) {
    throw new SessionConfigError(`secret must be a Uint8Array of at least 16 random bytes, got ${secret instanceof Uint8Array ? `${secret.length} bytes` : typeof secret}`);
  }
  return secret.slice(0, 16);
}

function carrierOf(carrier: unknown): ResolvedConfig["carrier"] {
  if (carrier === undefined) return undefined;
  if (typeof carrier !== "function") throw new SessionConfigError(`carrier must be a function (address) => { overheadBytes, maxDatagramBytes } or undefined; got ${typeof carrier}`);
  // Asked when a connection is made, inside the receive path: a figure out of range counts as
  // none (UDP) rather than an error there.
  return (address) => {
    const c = (carrier as (address: Address) => DatagramCarrier | undefined)(address);
    if (c === undefined || c === null) return undefined;
    const overheadBytes = Number.isInteger(c.overheadBytes) && c.overheadBytes >= 0 && c.overheadBytes <= 1024 ? c.overheadBytes : 0;
    const maxDatagramBytes = typeof c.maxDatagramBytes === "number" && c.maxDatagramBytes >= 300 ? c.maxDatagramBytes : Infinity;
    return { overheadBytes, maxDatagramBytes };
  };
}

function traceFactory(trace: unknown): TraceFactory | undefined {
  if (trace === undefined || typeof trace === "function") return trace as TraceFactory | undefined;
  throw new SessionConfigError(`trace must be a function (connection info) => sink or undefined, e.g. qlogFiles(dir) from ackwire/node; got ${typeof trace}`);
}

function positive(name: string, value: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
    throw new SessionConfigError(`${name} must be a number in ${min}..${max}, got ${String(value)}`);
  }
  return value;
}

export function resolveConfig(config: EndpointConfig): ResolvedConfig {
  if (!Number.isInteger(config.protocolId) || config.protocolId < 0 || config.protocolId > 0xffffffff) {
    throw new SessionConfigError(`protocolId must be a u32 (e.g. a hash of your game's name and version), got ${String(config.protocolId)}`);
  }
  const channels = config.channels ?? DEFAULT_CHANNELS;
  if (channels.length < 1 || channels.length > 32) {
    throw new SessionConfigError(`channels must list 1..32 channels, got ${channels.length}`);
  }
  const kinds = channels.map((c, i) => {
    const kind = MODE_KINDS[c.mode];
    if (kind === undefined) {
      throw new SessionConfigError(`channel ${i}: unknown mode ${JSON.stringify(c.mode)}; use one of ${Object.keys(MODE_KINDS).join(", ")}`);
    }
    return kind;
  });
  const timeoutMs = positive("timeoutMs", config.timeoutMs ?? 10_000, 100);
  const mtu = positive("mtu", config.mtu ?? 1200, 300, 1500);
  const maxMtu = positive("maxMtu", config.maxMtu ?? Math.max(mtu, DEFAULT_MAX_MTU), mtu, 1500);
  if (config.maxMtu !== undefined && !Number.isInteger(config.maxMtu)) throw new SessionConfigError(`maxMtu must be an integer, got ${config.maxMtu}`);
  return {
    protocolId: config.protocolId >>> 0,
    appVersion: positive("appVersion", config.appVersion ?? 0, 0, 0xffffffff) >>> 0,
    channels,
    kinds,
    channelHash: channelConfigHash(kinds),
    mtu,
    maxMtu,
    carrier: carrierOf(config.carrier),
    server: config.server ?? false,
    maxConnections: positive("maxConnections", config.maxConnections ?? 64, 0, 65536),
    maxPendingHandshakes: positive("maxPendingHandshakes", config.maxPendingHandshakes ?? 256, 1, 65536),
    maxPendingAccepts: positive("maxPendingAccepts", config.maxPendingAccepts ?? 256, 1, 65536),
    acceptTimeoutMs: positive("acceptTimeoutMs", config.acceptTimeoutMs ?? 3000, 1, 600_000),
    handshakeRatePerAddress: positive("handshakeRatePerAddress", config.handshakeRatePerAddress ?? 10, 0.001),
    maxConnectionsPerHost: positive("maxConnectionsPerHost", config.maxConnectionsPerHost ?? 65536, 1, 65536),
    timeoutMs,
    unresponsiveMs: positive("unresponsiveMs", config.unresponsiveMs ?? timeoutMs / 2, 1),
    keepaliveMs: positive("keepaliveMs", config.keepaliveMs ?? timeoutMs / 4, 1),
    maxReceiveBufferBytes: positive("maxReceiveBufferBytes", config.maxReceiveBufferBytes ?? 8 * 1024 * 1024, 1500),
    maxTotalReceiveBufferBytes: positive("maxTotalReceiveBufferBytes", config.maxTotalReceiveBufferBytes ?? 256 * 1024 * 1024, 1500),
    congestion: config.congestion ?? "default",
    congestionOptions: config.congestionOptions ?? {},
    accept: config.accept,
    seed: (config.seed ?? 1) >>> 0,
    engine: config.engine ?? "wasm",
    connectTimeoutMs: Math.min(timeoutMs, 5000),
    handshakeResendMs: 100,
    handshakeResendMaxMs: 1000,
    closeTimeoutMs: positive("closeTimeoutMs", config.closeTimeoutMs ?? 3000, 1, 600_000),
    cookieWindowMs: 10_000,
    ackDelayMs: positive("ackDelayMs", config.ackDelayMs ?? 5, 0, 1000),
    ackPiggybackMs: positive("ackPiggybackMs", config.ackPiggybackMs ?? 15, 0, 1000),
    clockSyncMs: positive("clockSyncMs", config.clockSyncMs ?? 1000, 10, 3_600_000),
    clockSyncFastMs: 100,
    clockSyncFastPhaseMs: 5000,
    noConnectionRatePerAddress: 2,
    rateLimitEntries: 4096,
    migration: config.migration ?? true,
    trace: traceFactory(config.trace),
    // Neither a secret nor a seed: a crypto-random secret (an Endpoint must never default to
    // keys every other default Endpoint shares). A seed alone: keys derived from it (tests).
    secret: checkSecret(config.secret) ?? (config.seed === undefined ? cryptoSecret() : undefined),
  };
}
