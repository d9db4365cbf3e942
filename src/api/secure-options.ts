/**
 * The `secure` option of listen() and the `connectToken` option of connect(), checked and turned
 * into the secure layer's settings; and the Endpoint's datagram sizes, made room for the layer's
 * 29 bytes (PROTOCOL §9) so that a sealed datagram is no larger than a plain one would be.
 */
import { canonicalAddress } from "../relay/wire.js";
import { wasmAead } from "../secure/wasm-aead.js";
import { SecureConfigError } from "../secure/errors.js";
import type { ServerSecurityOptions } from "../secure/server-security.js";
import { checkServerKey } from "../secure/token.js";
import { SECURE_OVERHEAD } from "../secure/wire.js";
import { resolveConfig } from "../session/config.js";
import type { EndpointConfig } from "../session/types.js";
import type { SecureListenOptions } from "./options.js";

const DEFAULT_MTU = 1200;
const DEFAULT_MAX_MTU = 1452;
/** What a receiver accepts (PROTOCOL §1), sealed datagram included. */
const MAX_MTU = 1500;
const MIN_INNER_MTU = 300;
const MIN_IDLE_MS = 30_000;
/** Keys kept for tokens minted before a rotation (each forged HELLO is tried against all). */
const MAX_PREVIOUS_KEYS = 3;
const MAX_IDLE_MS = 3_600_000;

/** The server's secure-layer settings, from listen()'s `secure` and the endpoint's config. */
export function serverSecurityOptions(secure: SecureListenOptions, protocolId: number, config: EndpointConfig): ServerSecurityOptions {
  if (secure === null || typeof secure !== "object") throw new SecureConfigError("listen(): secure must be an object { serverKey, addresses? }");
  checkServerKey(secure.serverKey, "listen() secure");
  const previous = secure.previousServerKeys ?? [];
  if (!Array.isArray(previous) || previous.length > MAX_PREVIOUS_KEYS) throw new SecureConfigError(`listen() secure.previousServerKeys must be an array of at most ${MAX_PREVIOUS_KEYS} keys`);
  for (const key of previous) checkServerKey(key, "listen() secure.previousServerKeys");
  if (secure.addresses !== undefined && !Array.isArray(secure.addresses)) throw new SecureConfigError('listen() secure.addresses must be an array of "ip:port" strings');
  const addresses = (secure.addresses ?? []).map((a) => {
    const c = typeof a === "string" ? canonicalAddress(a) : undefined;
    if (c === undefined) throw new SecureConfigError(`listen() secure.addresses: ${JSON.stringify(a)} is not an "ip:port" address (IPv6 as "[::1]:7777")`);
    return c;
  });
  const resolved = resolveConfig(config);
  const maxAssociations = secure.maxAssociations ?? resolved.maxConnections + resolved.maxPendingHandshakes;
  if (!Number.isInteger(maxAssociations) || maxAssociations < 1 || maxAssociations > 1 << 20) throw new SecureConfigError(`listen() secure.maxAssociations must be an integer in 1..${1 << 20}, got ${String(secure.maxAssociations)}`);
  const idleTimeoutMs = secure.idleTimeoutMs ?? Math.min(MAX_IDLE_MS, Math.max(MIN_IDLE_MS, 2 * resolved.timeoutMs));
  if (!(typeof idleTimeoutMs === "number" && idleTimeoutMs > resolved.timeoutMs && idleTimeoutMs <= MAX_IDLE_MS)) {
    const what = secure.idleTimeoutMs === undefined ? "it leaves no room for the default" : `got ${String(secure.idleTimeoutMs)}`;
    throw new SecureConfigError(`listen() secure.idleTimeoutMs must be a number of ms above timeoutMs (${resolved.timeoutMs}), up to ${MAX_IDLE_MS}: ${what}`);
  }
  return { serverKey: new Uint8Array(secure.serverKey), previousServerKeys: previous.map((k) => new Uint8Array(k)), protocolId, addresses, maxAssociations, idleTimeoutMs, aead: wasmAead };
}

/**
 * Shrinks the endpoint's datagram sizes by the secure layer's overhead (the `mtu` option and the
 * path MTU discovery ceiling are sizes on the wire, sealed).
 */
export function makeRoomForSeal(config: EndpointConfig, call: string): void {
  const mtu = config.mtu ?? DEFAULT_MTU;
  if (!(typeof mtu === "number" && mtu - SECURE_OVERHEAD >= MIN_INNER_MTU && mtu <= MAX_MTU)) {
    throw new SecureConfigError(`${call}: mtu must be in ${MIN_INNER_MTU + SECURE_OVERHEAD}..${MAX_MTU} on a secure connection (${SECURE_OVERHEAD} bytes of each datagram are the secure layer's), got ${String(mtu)}`);
  }
  // maxMtu, a wire size too, is checked as the plain endpoint checks it (mtu..MAX_MTU) before
  // the overhead comes off: a larger one built probes the secure layer then dropped, a smaller
  // one would silently mean "no discovery".
  const maxMtu = config.maxMtu ?? Math.max(mtu, DEFAULT_MAX_MTU);
  if (!(Number.isInteger(maxMtu) && maxMtu >= mtu && maxMtu <= MAX_MTU)) {
    throw new SecureConfigError(`${call}: maxMtu must be an integer in mtu..${MAX_MTU} (${mtu}..${MAX_MTU}), sizes on the wire as on a plain connection, got ${String(config.maxMtu)}`);
  }
  config.mtu = mtu - SECURE_OVERHEAD;
  config.maxMtu = maxMtu - SECURE_OVERHEAD;
}
