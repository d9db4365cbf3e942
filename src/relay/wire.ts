/**
 * The relay's datagram (docs/PROTOCOL.md §8): an 8-byte allocation token, then one whole ackwire
 * datagram, unchanged.
 *
 *   peer  -> relay   [ sender's token (8) | datagram ]     the relay finds the allocation by the
 *                                                         token and forwards to the other side,
 *   relay -> peer    [ receiver's token (8) | datagram ]   swapping in the receiver's token: same
 *                                                         length in and out, so never an amplifier.
 *
 * Three 17-byte control datagrams (version 6), `[token | kind | 8 bytes]`, whose kind byte no
 * ackwire datagram starts with (its bits 5-7 are reserved): BIND asks the relay to send this
 * side's traffic to the sender's address; the relay answers a BIND, or any datagram of the side
 * from an address it has not validated, with a CHALLENGE carrying a cookie for that address; the
 * peer echoes it in a CONFIRM, and only then does the relay send there. So a side's traffic goes
 * only to an address that proved it receives there (a spoofed source cannot), and every
 * CHALLENGE is no larger than the datagram it answers. Each side's relayed peer appears to its
 * Endpoint as a virtual address (`virtualAddress`), so relayed connections are ordinary
 * connections keyed by an address nothing real can have.
 */
import type { Address } from "../session/sans-io.js";

/** Bytes of an allocation token (random, handed out by the lobby; the only credential). */
export const RELAY_TOKEN_BYTES = 8;

/** A relay control datagram: token, kind, 8 bytes (zeros in a BIND, the cookie otherwise). */
export const RELAY_CONTROL_BYTES = 17;
/** Control kinds (byte 8), first bytes no ackwire datagram has. */
export const RELAY_BIND = 0xe0;
export const RELAY_CHALLENGE = 0xe1;
export const RELAY_CONFIRM = 0xe2;

/** The control kind of a relay datagram (RELAY_BIND, _CHALLENGE, _CONFIRM), or 0 for any other. */
export function relayControlKind(bytes: Uint8Array): number {
  if (bytes.length !== RELAY_CONTROL_BYTES) return 0;
  const kind = bytes[RELAY_TOKEN_BYTES]!;
  return kind === RELAY_BIND || kind === RELAY_CHALLENGE || kind === RELAY_CONFIRM ? kind : 0;
}

/** `[token | kind | body (8 bytes, zeros if absent)]` written into `out` (>= 17 bytes); returns 17. */
export function writeRelayControl(out: Uint8Array, token: Uint8Array, kind: number, body?: Uint8Array, bodyAt = 0): number {
  out.set(token.subarray(0, RELAY_TOKEN_BYTES), 0);
  out[RELAY_TOKEN_BYTES] = kind;
  if (body === undefined) out.fill(0, RELAY_TOKEN_BYTES + 1, RELAY_CONTROL_BYTES);
  else out.set(body.subarray(bodyAt, bodyAt + 8), RELAY_TOKEN_BYTES + 1);
  return RELAY_CONTROL_BYTES;
}

/** Largest relay datagram: a 1500-byte Ethernet MTU less IPv4 and UDP headers. */
export const MAX_RELAY_DATAGRAM = 1472;

/** Every virtual address starts with this: 100::/64, the IPv6 discard-only prefix (RFC 6666). */
export const VIRTUAL_PREFIX = "[100::";

/**
 * The address a relayed peer has on this side's Endpoint: an address in 100::/64, the IPv6
 * discard-only prefix (RFC 6666), which no real peer sends from, made of a route number (not the
 * token: applications log and show addresses, and the token is a credential), with the relay's
 * port. E.g. "[100::1]:9001".
 */
export function virtualAddress(id: number, relayPort: number): Address {
  const groups: string[] = [];
  for (let shift = 48; shift >= 0; shift -= 16) groups.push((Math.floor(id / 2 ** shift) & 0xffff).toString(16));
  // In the one spelling runtimes use (RFC 5952), e.g. "[100::1]:9001".
  return canonicalAddress(`[100:0:0:0:${groups.join(":")}]:${relayPort}`)!;
}

/** True for an address in 100::/64 (a virtual address, or a datagram no real peer sends). */
export function isVirtualAddress(address: Address): boolean {
  // "[" first: IPv4 addresses (the usual case on the send path) stop at one character.
  return address.charCodeAt(0) === 91 && address.startsWith(VIRTUAL_PREFIX);
}

/**
 * "ip:port" with the IP in one spelling per address, as the runtimes report senders: IPv6
 * lowercase with the longest run of zero groups compressed (RFC 5952), so a relay written
 * "[2001:DB8:0::1]:9001" still matches datagrams from "[2001:db8::1]:9001". Undefined if it is
 * not an IP literal with a port.
 */
export function canonicalAddress(address: Address): Address | undefined {
  const colon = address.lastIndexOf(":");
  if (colon <= 0) return undefined;
  const portText = address.slice(colon + 1);
  if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) return undefined;
  const host = address.slice(0, colon);
  const port = Number(portText);
  if (/^(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}$/.test(host)) return `${host}:${port}`;
  if (!host.startsWith("[") || !host.endsWith("]")) return undefined;
  const groups = ipv6Groups(host.slice(1, -1).toLowerCase());
  if (groups === undefined) return undefined;
  // The longest run of two or more zero groups (the first of equal runs) becomes "::".
  let bestAt = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestAt = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  const text = bestAt < 0 ? hex.join(":") : `${hex.slice(0, bestAt).join(":")}::${hex.slice(bestAt + bestLength).join(":")}`;
  return `[${text}]:${port}`;
}

/** The 8 groups of an IPv6 literal (no zone, no embedded IPv4), or undefined. */
function ipv6Groups(text: string): number[] | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const parse = (part: string): number[] | undefined => {
    if (part === "") return [];
    const out: number[] = [];
    for (const g of part.split(":")) {
      if (!/^[0-9a-f]{1,4}$/.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  if (head === undefined || tail === undefined) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const missing = 8 - head.length - tail.length;
  if (missing < 1) return undefined;
  return [...head, ...new Array<number>(missing).fill(0), ...tail];
}

/** The token as a map key (16 hex digits). */
export function tokenKey(bytes: Uint8Array, at = 0, length = RELAY_TOKEN_BYTES): string {
  let key = "";
  for (let i = at; i < at + length; i++) key += HEX[bytes[i]!];
  return key;
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
