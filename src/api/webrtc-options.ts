/** listen()'s `webrtc` option: browser clients over WebRTC data channels (docs/BROWSER.md). */
import { isIpv4Literal, isIpv6Literal } from "./address.js";
import { InvalidOptionError } from "./errors.js";
import { rejectUnknownOptionKeys } from "./options.js";

export interface WebRtcListenOptions {
  /** TCP port of the HTTP signaling endpoint (0: any free port; read `server.webrtc.url`). */
  port: number;
  /** IP the signaling endpoint binds. Default: listen()'s `host`. */
  host?: string;
  /** Path of the signaling endpoint. Default "/ackwire". */
  path?: string;
  /**
   * The IP addresses browsers reach this machine at for WebRTC (ICE host candidates): the
   * answer lists these and only these. Default: `host` when it is a specific address, else
   * required (a server on 0.0.0.0 has to say which of its addresses are public).
   */
  iceAddresses?: readonly string[];
  /**
   * Origins (`"https://game.example.com"`) whose pages may connect: the signaling endpoint's
   * CORS answer. Default: none, so only a page served from the signaling endpoint's own origin
   * can (browsers refuse the others). "*" allows every origin.
   */
  allowOrigins?: readonly string[] | "*";
  /** Largest offer accepted, in bytes (413 above it). Default 16384. */
  maxOfferBytes?: number;
  /** Offers per second per client IP (429 above it), with a burst of twice as many. Default 2. */
  offersPerSecond?: number;
  /** Peer connections answered but not yet connected (503 above it). Default 32. */
  maxPendingPeers?: number;
  /** Peer connections held at once (503 above it). Default listen()'s maxConnections + 32. */
  maxPeers?: number;
  /** A peer whose data channel has not opened, or that has no ackwire connection, this long after its offer is closed. Default 15000. */
  openTimeoutMs?: number;
}

export interface ResolvedWebRtcOptions {
  port: number;
  host: string;
  path: string;
  iceAddresses: string[];
  allowOrigins: readonly string[] | "*";
  maxOfferBytes: number;
  offersPerSecond: number;
  maxPendingPeers: number;
  maxPeers: number;
  openTimeoutMs: number;
}

const KEYS: ReadonlySet<string> = new Set(["port", "host", "path", "iceAddresses", "allowOrigins", "maxOfferBytes", "offersPerSecond", "maxPendingPeers", "maxPeers", "openTimeoutMs"]);

function positiveInteger(value: unknown, name: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > max) throw new InvalidOptionError(`listen(): webrtc.${name} must be an integer in 1..${max}, got ${String(value)}`);
  return value;
}

export function resolveWebRtcOptions(options: WebRtcListenOptions, listenHost: string, maxConnections: number): ResolvedWebRtcOptions {
  if (options === null || typeof options !== "object") throw new InvalidOptionError("listen(): webrtc is an object, at least { port } (the HTTP signaling port; 0 picks one)");
  rejectUnknownOptionKeys(options, "listen(): webrtc", KEYS);
  const { port } = options;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidOptionError(`listen(): webrtc.port is the TCP port of the signaling endpoint, an integer in 0..65535 (0 picks one), got ${String(port)}`);
  const host = options.host ?? listenHost;
  if (!isIpv4Literal(host) && !isIpv6Literal(host)) throw new InvalidOptionError(`listen(): webrtc.host must be an IP address to bind, got ${JSON.stringify(host)}`);
  const path = options.path ?? "/ackwire";
  if (typeof path !== "string" || !/^\/[A-Za-z0-9._~\/-]*$/.test(path)) throw new InvalidOptionError(`listen(): webrtc.path must start with "/" and hold only URL path characters, got ${JSON.stringify(path)}`);
  const unspecified = host === "0.0.0.0" || host === "::";
  const iceAddresses = options.iceAddresses === undefined ? (unspecified ? undefined : [host]) : [...options.iceAddresses];
  if (iceAddresses === undefined || iceAddresses.length === 0) {
    throw new InvalidOptionError(`listen(): webrtc.iceAddresses must list the IP addresses browsers reach this server at (e.g. ["203.0.113.7"]); it cannot be guessed from host ${host}`);
  }
  for (const a of iceAddresses) if (typeof a !== "string" || !(isIpv4Literal(a) || isIpv6Literal(a))) throw new InvalidOptionError(`listen(): webrtc.iceAddresses holds IP addresses, got ${JSON.stringify(a)}`);
  const origins = options.allowOrigins ?? [];
  if (origins !== "*" && !(Array.isArray(origins) && origins.every((o) => typeof o === "string" && /^https?:\/\/[^/]+$/.test(o)))) {
    throw new InvalidOptionError(`listen(): webrtc.allowOrigins is "*" or a list of origins such as "https://game.example.com" (scheme, host, port; no path), got ${JSON.stringify(origins)}`);
  }
  const offersPerSecond = options.offersPerSecond ?? 2;
  if (!(typeof offersPerSecond === "number" && offersPerSecond > 0 && offersPerSecond <= 10_000)) throw new InvalidOptionError(`listen(): webrtc.offersPerSecond must be a number in (0, 10000], got ${String(offersPerSecond)}`);
  return {
    port,
    host,
    path,
    iceAddresses,
    allowOrigins: origins === "*" ? "*" : [...origins],
    maxOfferBytes: positiveInteger(options.maxOfferBytes, "maxOfferBytes", 16_384, 1 << 20),
    offersPerSecond,
    maxPendingPeers: positiveInteger(options.maxPendingPeers, "maxPendingPeers", 32, 65_536),
    maxPeers: positiveInteger(options.maxPeers, "maxPeers", maxConnections + 32, 1 << 20),
    openTimeoutMs: positiveInteger(options.openTimeoutMs, "openTimeoutMs", 15_000, 3_600_000),
  };
}
