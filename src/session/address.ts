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

/**
 * The host a rate limit counts `address` under: its IPv4 address, or the /64 of its IPv6 one
 * (one subscriber's network: a host gets a whole /64 and can send from any of its addresses),
 * without the port, which a sender picks freely. An address that does not parse counts alone,
 * and so does a loopback one: the network cannot forge it (the kernel drops it from outside),
 * and every local client of one machine (tests, a bot fleet) would share one bucket.
 */
export function rateKeyOf(address: Address): string {
  const colon = address.lastIndexOf(":");
  if (colon <= 0) return address;
  const host = address.slice(0, colon);
  if (!host.startsWith("[")) return host.startsWith("127.") ? address : host;
  const text = host.slice(1, -1).toLowerCase();
  if (text === "::1" || text.startsWith("::ffff:127.")) return address;
  // An IPv4 client of a dual-stack socket (IPv4-mapped, ::ffff:a.b.c.d or ::ffff:XXXX:XXXX):
  // its IPv4 host, else every IPv4 client would share ::ffff:0:0/96's one /64.
  if (text.startsWith("::ffff:")) {
    const v4 = text.slice(7);
    if (/^\d{1,3}(\.\d{1,3}){3}$/.test(v4)) return v4;
    const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(v4);
    if (hex !== null) {
      const hi = parseInt(hex[1]!, 16);
      const lo = parseInt(hex[2]!, 16);
      return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
    }
  }
  const halves = text.split("::");
  if (halves.length > 2) return host;
  const head = halves[0] === "" ? [] : halves[0]!.split(":");
  const tail = halves.length === 2 && halves[1] !== "" ? halves[1]!.split(":") : [];
  const groups = halves.length === 2 ? [...head, ...new Array<string>(Math.max(0, 8 - head.length - tail.length)).fill("0"), ...tail] : head;
  if (groups.length !== 8) return host;
  return `[${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, "")).join(":")}::/64]`;
}

/** The address as bytes, for hashing into the cookie. ASCII; other code units are folded. */
export function addressBytes(address: Address, out: Uint8Array, at: number): number {
  const n = Math.min(address.length, out.length - at);
  for (let i = 0; i < n; i++) out[at + i] = address.charCodeAt(i) & 0xff;
  return n;
}
