/** Parsing and formatting of `"host:port"` / `"[v6]:port"` targets for the public API. */
import type { Address } from "../session/sans-io.js";
import { InvalidOptionError, InvalidTargetError } from "./errors.js";

export interface HostPort {
  host: string;
  port: number;
}

export type Target = string | HostPort;

export function parseTarget(target: Target): HostPort {
  if (typeof target === "object" && target !== null) {
    if (typeof target.host === "string" && target.host.length > 0 && isPort(target.port)) return { host: stripBrackets(target.host), port: target.port };
    throw new InvalidTargetError(target);
  }
  if (typeof target !== "string") throw new InvalidTargetError(target);
  const colon = target.lastIndexOf(":");
  if (colon <= 0) throw new InvalidTargetError(target);
  const host = target.slice(0, colon);
  const portText = target.slice(colon + 1);
  const port = /^[0-9]{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!isPort(port)) throw new InvalidTargetError(target);
  // A bare IPv6 literal must be bracketed, or its last group would be taken for the port.
  if (!host.startsWith("[") && host.includes(":")) throw new InvalidTargetError(target);
  return { host: stripBrackets(host), port };
}

function isPort(port: unknown): port is number {
  return typeof port === "number" && Number.isInteger(port) && port >= 1 && port <= 65535;
}

function stripBrackets(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

export function isIpv6Literal(host: string): boolean {
  return host.includes(":");
}

/** Whether a socket bound to `bound` can send to `address` (both IPv6, or both IPv4). */
export function sameFamily(address: Address, bound: HostPort): boolean {
  return address.startsWith("[") === isIpv6Literal(bound.host);
}

/** Throws InvalidOptionError if `relay` is not of the address family of a socket bound to `bound`. */
export function checkRelayFamily(relay: Address, bound: HostPort): void {
  if (typeof relay === "string" && !sameFamily(relay, bound)) {
    throw new InvalidOptionError(`addRelayRoute(): the relay ${relay} is not of the family this server's socket is bound to (${bound.host})`);
  }
}

export function isIpv4Literal(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host);
}

/** The core's address text for an IP and port: IPv6 in brackets. */
export function formatAddress(ip: string, port: number): Address {
  return isIpv6Literal(ip) ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/**
 * Splits the core's address text back into IP and port for a socket send. The core sends to
 * few distinct addresses, so results are cached (bounded: the cache is cleared past 4096).
 */
export class AddressCache {
  #map = new Map<Address, HostPort>();

  get(address: Address): HostPort {
    let hp = this.#map.get(address);
    if (hp === undefined) {
      const colon = address.lastIndexOf(":");
      let ip = address.slice(0, colon);
      if (ip.startsWith("[")) ip = ip.slice(1, -1);
      hp = { host: ip, port: Number(address.slice(colon + 1)) };
      if (this.#map.size >= 4096) this.#map.clear();
      this.#map.set(address, hp);
    }
    return hp;
  }
}

/**
 * The core's address text for each sender, cached: a receive burst comes from few peers, and
 * formatting a fresh string per datagram showed up in profiles. Keyed by port first (one
 * number compare), then the IP is checked, so two hosts on one port are still told apart.
 * Bounded: cleared past 4096 ports.
 */
export class SenderNames {
  #byPort = new Map<number, { ip: string; text: Address }>();

  get(ip: string, port: number): Address {
    const hit = this.#byPort.get(port);
    if (hit !== undefined && hit.ip === ip) return hit.text;
    const text = formatAddress(ip, port);
    if (this.#byPort.size >= 4096) this.#byPort.clear();
    this.#byPort.set(port, { ip, text });
    return text;
  }
}
