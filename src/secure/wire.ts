/**
 * The secure layer's datagrams (PROTOCOL §9). Every datagram of a secure socket is one of two
 * kinds, told apart by the first byte, whose top bit is set (an ackwire datagram's type byte
 * never has it: PROTOCOL §1), so a plain datagram reaching a secure socket is recognised and
 * counted:
 *
 *   HELLO  (client -> server, until the client has heard from the server)
 *     0      u8   0x80
 *     1      u32  protocolId              \
 *     5      u64  expiresAt (Unix seconds) } copied from the connect token (./token.ts)
 *     13     24   token nonce              |
 *     37     u16  N = private part length  |
 *     39     N    private part            /
 *     39+N   8    client nonce (random per connection attempt: ./keys.ts)
 *     47+N   u64  packet number
 *     55+N   ..   sealed inner datagram (ciphertext + 16-byte tag)
 *
 *   SEALED (both ways, once the client knows its association id)
 *     0      u8   0x81
 *     1      u32  association id (the server's number for this client, random)
 *     5      u64  packet number
 *     13     ..   sealed inner datagram (ciphertext + 16-byte tag)
 *
 *   RETRY (server -> client: "show me you receive at that address" when the server is short
 *   of its budget for opening new tokens; smaller than any HELLO, and nothing is kept)
 *     0      u8   0x82
 *     1      8    the HELLO's client nonce, bytes 0..8 (an off-path sender cannot know it)
 *     9      16   retry cookie (the server's MAC of the address, the token, the time window)
 *
 *   HELLO_COOKIE (client -> server, a HELLO after a RETRY)
 *     0      u8   0x83
 *     1      16   the retry cookie
 *     17     ..   the HELLO from its byte 1 on (sealed as a HELLO: type 0x80 in its AD)
 *
 * The inner datagram is an ordinary ackwire datagram, sealed with ChaCha20-Poly1305 under the
 * sending direction's key (./aead.ts), derived for this attempt and association (./keys.ts). Its associated data is the type byte, the 4 bytes after
 * it in SEALED (the association id; zeros in HELLO) and the packet number: the 13 bytes
 * `type | id | pn`, so the id and the number cannot be changed without the tag failing.
 */
import { TAG_BYTES, type PacketAead } from "./aead.js";
import type { ReplayWindow } from "./replay-window.js";
import { readU32, writeU32 } from "../wire/bytes.js";

export const HELLO = 0x80;
export const SEALED = 0x81;
export const RETRY = 0x82;
export const HELLO_COOKIE = 0x83;

export const RETRY_COOKIE_BYTES = 16;
/** Bytes of the client nonce a RETRY echoes. */
export const RETRY_ECHO_BYTES = 8;
export const RETRY_BYTES = 1 + RETRY_ECHO_BYTES + RETRY_COOKIE_BYTES;

/** SEALED header: type, association id, packet number. */
export const SEALED_HEADER_BYTES = 13;
/** What a SEALED datagram adds to the inner one: the header and the tag. */
export const SECURE_OVERHEAD = SEALED_HEADER_BYTES + TAG_BYTES;
/** HELLO bytes before the private part. */
export const HELLO_FIXED_BYTES = 39;
/** HELLO bytes after the private part and before the sealed datagram: client nonce, packet number. */
export const HELLO_TAIL_BYTES = 16;
/** Associated data of every seal: type, association id (0 in HELLO), packet number. */
export const AD_BYTES = 13;
/** Largest datagram the layer reads or writes (what an ackwire receiver accepts). */
export const MAX_SECURE_DATAGRAM = 1500;

// The u32 helpers are the handshake's (byte by byte: a DataView per datagram showed in
// profiles); re-exported for the secure layer's modules.
export { readU32, writeU32 };

/** Writes a u64 little-endian (n < 2^53). */
export function writeU64(bytes: Uint8Array, at: number, n: number): void {
  writeU32(bytes, at, n >>> 0);
  writeU32(bytes, at + 4, Math.floor(n / 0x1_0000_0000) >>> 0);
}

/** Reads a u64 little-endian; values of 2^53 and above come back as Infinity (never valid here). */
export function readU64(bytes: Uint8Array, at: number): number {
  const hi = readU32(bytes, at + 4);
  if (hi >= 0x20_0000) return Infinity;
  return hi * 0x1_0000_0000 + readU32(bytes, at);
}

/** Fills `ad` (13 bytes) with the associated data `type | id | pn`. */
export function writeAd(ad: Uint8Array, type: number, id: number, pn: number): Uint8Array {
  ad[0] = type;
  writeU32(ad, 1, id);
  writeU64(ad, 5, pn);
  return ad;
}

/** The drop counters both halves keep for a sealed payload that is not accepted. */
interface UnsealCounters {
  malformed: number;
  replayed: number;
  badTag: number;
}

/**
 * What both halves check of a sealed payload at `bytes[at..]` with packet number `pn`: a number
 * below 2^53 (readU64 gives Infinity above: `malformed`), new to `window` (`replayed`), and the
 * tag under `key` (`badTag`). Decrypts in place and returns the plaintext view; the caller
 * decides whether to hand it in, and then accepts `pn` into the window.
 */
export function unsealPayload(
  aead: PacketAead,
  key: Uint8Array,
  window: ReplayWindow,
  pn: number,
  ad: Uint8Array,
  bytes: Uint8Array,
  at: number,
  counters: UnsealCounters,
): Uint8Array | undefined {
  if (pn === Infinity) {
    counters.malformed++;
    return undefined;
  }
  if (!window.fresh(pn)) {
    counters.replayed++;
    return undefined;
  }
  const sealed = bytes.subarray(at);
  const n = aead.open(key, pn, ad, sealed, sealed);
  if (n < 0) {
    counters.badTag++;
    return undefined;
  }
  return bytes.subarray(at, at + n);
}
