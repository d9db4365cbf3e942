/**
 * The relay's datagram (docs/PROTOCOL.md §8): an 8-byte allocation token, then one whole ackwire
 * datagram, unchanged.
 *
 *   peer  -> relay   [ sender's token (8) | datagram ]     the relay finds the allocation by the
 *                                                         token and forwards to the other side,
 *   relay -> peer    [ receiver's token (8) | datagram ]   swapping in the receiver's token: same
 *                                                         length in and out, so never an amplifier.
 *
 * A datagram of exactly the token (no payload) binds: it tells the relay where that side is
 * (the source address its NAT gave it) and is not forwarded. Each side's relayed peer appears to
 * its Endpoint as a virtual address built from its own token (`virtualAddress`), so relayed
 * connections are ordinary connections keyed by an address nothing real can have.
 */
import type { Address } from "../session/sans-io.js";

/** Bytes of an allocation token (random, handed out by the lobby; the only credential). */
export const RELAY_TOKEN_BYTES = 8;

/** Largest relay datagram: a 1500-byte Ethernet MTU less IPv4 and UDP headers. */
export const MAX_RELAY_DATAGRAM = 1472;

/**
 * The address a relayed peer has on this side's Endpoint: an address in 100::/64, the IPv6
 * discard-only prefix (RFC 6666), which no real peer can send from, made of this side's token,
 * with the relay's port. E.g. "[100::a1b2:c3d4:e5f6:708]:9001".
 */
export function virtualAddress(token: Uint8Array, relayPort: number): Address {
  const groups: string[] = [];
  for (let i = 0; i < RELAY_TOKEN_BYTES; i += 2) groups.push(((token[i]! << 8) | token[i + 1]!).toString(16));
  return `[100::${groups.join(":")}]:${relayPort}`;
}

/** The token as a map key (16 hex digits). */
export function tokenKey(bytes: Uint8Array, at = 0): string {
  let key = "";
  for (let i = at; i < at + RELAY_TOKEN_BYTES; i++) key += HEX[bytes[i]!];
  return key;
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
