/** Options of listen() and connect(), and how they map onto the Endpoint's config. */
import type { AcceptDecision, ChannelConfig, ConnectRequestInfo, EndpointConfig } from "../session/types.js";
import type { ClientIdentity } from "../secure/server-security.js";
import type { EndpointFactory } from "./endpoint-like.js";
import { InvalidOptionError } from "./errors.js";
import type { AbortSignalLike } from "./host.js";
import { randomSecret, randomSeed } from "./host.js";
import type { WebRtcListenOptions } from "./webrtc-options.js";
import { firstUnknownKey, unknownOptionMessage } from "../util/closest-key.js";

export interface CommonOptions {
  /** Your game's protocol id (u32): peers with a different id are ignored. Required. */
  protocolId: number;
  appVersion?: number;
  channels?: readonly ChannelConfig[];
  mtu?: number;
  /** Path MTU discovery's ceiling (see EndpointConfig.maxMtu); `maxMtu: mtu` turns discovery off. */
  maxMtu?: number;
  timeoutMs?: number;
  unresponsiveMs?: number;
  keepaliveMs?: number;
  maxReceiveBufferBytes?: number;
  congestion?: string;
  engine?: "wasm" | "ts";
  /** Kernel socket buffers where the runtime allows it (Node). Default 4 MiB (capped by the OS). */
  receiveBufferBytes?: number;
  sendBufferBytes?: number;
  /** Bound of each async iterator's queue (see Connection). Default 65536. */
  maxQueuedMessages?: number;
  /**
   * Back-pressure: once a send() leaves a connection holding this many bytes or more to send
   * (`queuedBytes`: queued, in flight or awaiting a resend), `needsDrain` is true until the
   * bytes fall below it again, when the connection emits "drain". Each connection's
   * `highWaterMark` starts from this. Default 1 MiB (DEFAULT_HIGH_WATER_MARK).
   */
  highWaterMark?: number;
  /** Seed for the endpoint's randomness. Default: crypto-random. Fix it only in tests. */
  seed?: number;
  /** Advanced: engine arena sizes (see EndpointConfig.engineLimits). Many client endpoints in
   *  one process (load tests) can shrink them; the defaults suit a server. */
  engineLimits?: EndpointConfig["engineLimits"];
  /** Drive another sans-IO endpoint implementation (tests, custom engines). */
  createEndpoint?: EndpointFactory;
  /** Tuning passed to the endpoint (see EndpointConfig for each). */
  congestionOptions?: EndpointConfig["congestionOptions"];
  clockSyncMs?: number;
  closeTimeoutMs?: number;
  ackDelayMs?: number;
  ackPiggybackMs?: number;
  /** Address migration (see EndpointConfig.migration). Default true. */
  migration?: boolean;
  /** Connection traces (see EndpointConfig.trace), e.g. `qlogFiles("traces")` from ackwire/node. */
  trace?: EndpointConfig["trace"];
  /**
   * Seed 004's drop-test switch: discard this fraction (0..1) of outgoing datagrams at random,
   * to see how the game copes with loss on a real network without a proxy. Counted in
   * `driver.counters.dropTested`. Testing only; default 0.
   */
  dropTest?: number;
  /** ackwire/worker's (see WorkerFrontOptions): declared here so one options object types for
   *  both entries; the root's listen() and connect() accept and ignore them. */
  statsIntervalMs?: number;
  transferOnSend?: boolean;
}

export interface ListenOptions extends CommonOptions {
  /** UDP port; 0 (default) lets the OS pick: read `server.address.port`. */
  port?: number;
  /** IP to bind. Default "0.0.0.0" (all IPv4); "::" for IPv6, "127.0.0.1" for this machine only. */
  host?: string;
  maxConnections?: number;
  maxPendingHandshakes?: number;
  /** Handshake packets per source host (IPv4 address or IPv6 /64, any port) per second. Default 10. */
  handshakeRatePerAddress?: number;
  /**
   * Most connections from one source host at once; beyond them a client is denied
   * "server-full". Default no limit: players behind one NAT share its address, so set it to
   * what one address may fairly hold (a LAN party, a household) when slots are scarce.
   */
  maxConnectionsPerHost?: number;
  /**
   * What all connections may hold received together (as maxReceiveBufferBytes counts for
   * one): past it, unreliable partial messages are evicted oldest first, then the connection
   * holding the most is ended ("receive-buffer-exceeded"). Default 256 MiB.
   */
  maxTotalReceiveBufferBytes?: number;
  /**
   * Sees each client's handshake user data (and on a secure server its `identity` from the
   * connect token); return true, false or { accept, userData }, or a promise of one (an async
   * function, e.g. to look the player up in a database): the handshake waits for it, at most
   * `acceptTimeoutMs`, with at most `maxPendingAccepts` waiting at once; past either bound the
   * client is denied "server-full". A throw or a rejection refuses the client and reaches the
   * server's "error" listeners.
   */
  accept?: (request: SecureConnectRequestInfo) => AcceptDecision | PromiseLike<AcceptDecision>;
  /** Async accept decisions in progress at once (default 256); more are denied "server-full". */
  maxPendingAccepts?: number;
  /** Longest an async accept decision may take, ms (default 3000); then "server-full". */
  acceptTimeoutMs?: number;
  /**
   * Secure connections (PROTOCOL §9): every datagram authenticated and encrypted, and only
   * clients holding a connect token minted with `serverKey` (createConnectToken(), on your
   * backend) can connect. Plain clients get no answer.
   */
  secure?: SecureListenOptions;
  /**
   * Browser clients too (ackwire/browser): an HTTP signaling endpoint on `webrtc.port` answers
   * their WebRTC offers, and each one's data channel feeds this server's endpoint beside the
   * UDP socket (docs/BROWSER.md). Needs the optional "werift" package.
   */
  webrtc?: WebRtcListenOptions;
}

/** What the accept hook sees: the handshake's request and, on a secure server, who the token says the client is. */
export interface SecureConnectRequestInfo extends ConnectRequestInfo {
  identity?: ClientIdentity;
}

export interface SecureListenOptions {
  /** The 32 bytes your backend mints connect tokens with (generateServerKey() makes one). */
  serverKey: Uint8Array;
  /**
   * Keys your backend used before `serverKey` (at most 3), while you rotate keys: tokens minted
   * with them still connect until they expire. Drop a key once its tokens have expired.
   */
  previousServerKeys?: readonly Uint8Array[];
  /**
   * The "ip:port" addresses clients reach this server at (its public address behind a load
   * balancer or NAT). A token must list one of them, so a token for one server cannot be spent
   * on another that shares the key. Default: none checked (any server with the key accepts).
   */
  addresses?: readonly string[];
  /** Clients holding an association at once. Default maxConnections + maxPendingHandshakes. */
  maxAssociations?: number;
  /** Forget a client nothing authentic came from for this long: above timeoutMs, at most 3600000. Default max(30 s, 2 x timeoutMs), capped. */
  idleTimeoutMs?: number;
}

export interface ConnectOptions extends CommonOptions {
  /** Sent to the server's accept hook (small: it rides in the handshake). */
  userData?: Uint8Array;
  /** Aborts the handshake: connect() rejects with ConnectAbortedError. */
  signal?: AbortSignalLike;
  /**
   * Give up the handshake after this long (ConnectTimeoutError). Default 5000 ms; at most
   * 3599000 (InvalidOptionError otherwise). `timeoutMs` no longer shortens it.
   */
  connectTimeoutMs?: number;
  /**
   * Connect to a secure server (PROTOCOL §9) with this token from your backend
   * (createConnectToken()). A token connects once: get a new one to reconnect.
   */
  connectToken?: Uint8Array;
  /**
   * The local IP to bind the client's socket to, e.g. "127.0.0.1". Default "0.0.0.0" (or "::"
   * for an IPv6 target). Of the target's family. Under Deno's scoped `--allow-net=host:port`
   * the client needs a grant for its own bind address: bind one you granted.
   */
  localHost?: string;
  /** The local UDP port to bind (1..65535). Default 0: the OS picks one. */
  localPort?: number;
}

/** The keys of CommonOptions, ListenOptions and ConnectOptions (checked against the interfaces below). */
const COMMON_KEYS = [
  "protocolId", "appVersion", "channels", "mtu", "maxMtu", "timeoutMs", "unresponsiveMs", "keepaliveMs", "maxReceiveBufferBytes", "congestion",
  "engine", "receiveBufferBytes", "sendBufferBytes", "maxQueuedMessages", "highWaterMark", "seed", "engineLimits", "createEndpoint", "congestionOptions",
  "clockSyncMs", "closeTimeoutMs", "ackDelayMs", "ackPiggybackMs", "migration", "dropTest", "trace",
] as const satisfies readonly (keyof CommonOptions)[];
const LISTEN_KEYS = ["port", "host", "maxConnections", "maxPendingHandshakes", "maxPendingAccepts", "acceptTimeoutMs", "handshakeRatePerAddress", "maxConnectionsPerHost", "maxTotalReceiveBufferBytes", "accept", "secure", "webrtc"] as const satisfies readonly (keyof ListenOptions)[];
const CONNECT_KEYS = ["userData", "signal", "connectTimeoutMs", "connectToken", "localHost", "localPort"] as const satisfies readonly (keyof ConnectOptions)[];
/**
 * ackwire/worker's own listen()/connect() options (src/worker/index.ts WorkerFrontOptions). Its
 * front end calls validateCommon with them, so they are known here too; the root's listen() and
 * connect() accept and ignore them, and one options object serves both entries.
 */
const WORKER_FRONT_KEYS = ["statsIntervalMs", "transferOnSend"] as const;
// Compile-time checks that the lists above name every option: a key added to an interface and
// not to its list is a type error here (and would be refused as unknown at run time).
type Missing<T, Listed> = Exclude<keyof T, Listed>;
const everyCommonKeyListed: [Missing<CommonOptions, (typeof COMMON_KEYS | typeof WORKER_FRONT_KEYS)[number]>] extends [never] ? true : never = true;
const everyListenKeyListed: [Missing<ListenOptions, (typeof COMMON_KEYS | typeof LISTEN_KEYS | typeof WORKER_FRONT_KEYS)[number]>] extends [never] ? true : never = true;
const everyConnectKeyListed: [Missing<ConnectOptions, (typeof COMMON_KEYS | typeof CONNECT_KEYS | typeof WORKER_FRONT_KEYS)[number]>] extends [never] ? true : never = true;
void everyCommonKeyListed;
void everyListenKeyListed;
void everyConnectKeyListed;

const LISTEN_OPTION_KEYS: ReadonlySet<string> = new Set([...COMMON_KEYS, ...LISTEN_KEYS, ...WORKER_FRONT_KEYS]);
const CONNECT_OPTION_KEYS: ReadonlySet<string> = new Set([...COMMON_KEYS, ...CONNECT_KEYS, ...WORKER_FRONT_KEYS]);
const ENGINES: ReadonlySet<unknown> = new Set(["wasm", "ts"]);

/**
 * An option key listen()/connect() does not know (a typo such as `maxConections`, or the other
 * call's option such as `port` on connect()) throws InvalidOptionError: an ignored option would
 * silently leave its default in force. Keys whose value is undefined are not checked.
 */
function rejectUnknownKeys(options: object, call: string): void {
  const known = call.startsWith("listen") ? LISTEN_OPTION_KEYS : call.startsWith("connect") ? CONNECT_OPTION_KEYS : undefined;
  if (known === undefined) return;
  const other = call.startsWith("listen") ? { keys: CONNECT_OPTION_KEYS, call: "connect()" } : { keys: LISTEN_OPTION_KEYS, call: "listen()" };
  rejectUnknownOptionKeys(options, call, known, other);
}

/** Throws InvalidOptionError for a key of `options` (with a value) that is not in `known`,
 *  naming the closest known key, or the call whose option it is (`other`). */
export function rejectUnknownOptionKeys(options: object, call: string, known: ReadonlySet<string>, other?: { keys: ReadonlySet<string>; call: string }): void {
  const key = firstUnknownKey(options, known);
  if (key === undefined) return;
  const hint = other?.keys.has(key) === true ? ` (it is an option of ${other.call})` : undefined;
  throw new InvalidOptionError(unknownOptionMessage(call, key, [...known], "its options are", hint));
}

export function validateCommon(options: CommonOptions | undefined, call: string): asserts options is CommonOptions {
  if (options === undefined || options === null || typeof options !== "object") throw new InvalidOptionError(`${call} needs an options object with at least { protocolId } (a u32 your game picks)`);
  rejectUnknownKeys(options, call);
  if (options.engine !== undefined && !ENGINES.has(options.engine)) {
    throw new InvalidOptionError(`${call}: engine is "wasm" (default) or "ts" (the TypeScript reference engine), got ${JSON.stringify(options.engine)}`);
  }
  const id = options.protocolId;
  if (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id > 0xffffffff) {
    throw new InvalidOptionError(`${call}: protocolId must be an integer in 0..4294967295 (the same number on server and clients), got ${String(id)}`);
  }
  if (options.dropTest !== undefined && !(typeof options.dropTest === "number" && options.dropTest >= 0 && options.dropTest <= 1)) {
    throw new InvalidOptionError(`${call}: dropTest is the fraction of outgoing datagrams to discard, a number in 0..1 (e.g. 0.05), got ${String(options.dropTest)}`);
  }
  if (options.highWaterMark !== undefined && !(typeof options.highWaterMark === "number" && options.highWaterMark > 0)) {
    throw new InvalidOptionError(`${call}: highWaterMark is the queued bytes from which a connection needs a "drain", a number > 0 (Infinity: never), got ${String(options.highWaterMark)}`);
  }
  if (options.maxQueuedMessages !== undefined && !(Number.isInteger(options.maxQueuedMessages) && options.maxQueuedMessages > 0)) {
    throw new InvalidOptionError(`${call}: maxQueuedMessages must be a positive integer`);
  }
}

export function endpointConfig(options: CommonOptions, server: boolean, extra: Partial<EndpointConfig> = {}): EndpointConfig {
  // The secret is always crypto-random: a fixed seed makes a test repeatable, never the keys.
  const config: EndpointConfig = { protocolId: options.protocolId >>> 0, server, seed: options.seed ?? randomSeed(), secret: randomSecret(), ...extra };
  const copy = [
    "appVersion", "channels", "mtu", "maxMtu", "timeoutMs", "unresponsiveMs", "keepaliveMs", "maxReceiveBufferBytes", "congestion",
    "engine", "engineLimits", "congestionOptions", "clockSyncMs", "closeTimeoutMs", "ackDelayMs", "ackPiggybackMs", "migration",
    "trace",
  ] as const;
  for (const key of copy) if (options[key] !== undefined) (config as unknown as Record<string, unknown>)[key] = options[key];
  return config;
}
