/** Address validation: `"host:port"` or `"[ipv6]:port"`. The text itself is the map key. */
import type { Address } from "./sans-io.js";

/** Returns true if `address` is `host:port` / `[v6]:port` with a port in 1..65535. */
export function isValidAddress(address: Address): boolean {
  if (typeof address !== "string" || address.length < 3 || address.length > 300) return false;
  const colon = address.lastIndexOf(":");
  if (colon <= 0) return false;
  const portText = address.slice(colon + 1);
  if (!/^[0-9]{1,5}$/.test(portText)) return false;
  const port = Number(portText);
  if (port < 1 || port > 65535) return false;
  const host = address.slice(0, colon);
  if (host.startsWith("[")) return host.endsWith("]") && host.length > 2 && !/[\s\]\[]/.test(host.slice(1, -1));
  return !/[\s:\[\]]/.test(host);
}

/** The address as bytes, for hashing into the cookie. ASCII; other code units are folded. */
export function addressBytes(address: Address, out: Uint8Array, at: number): number {
  const n = Math.min(address.length, out.length - at);
  for (let i = 0; i < n; i++) out[at + i] = address.charCodeAt(i) & 0xff;
  return n;
}
