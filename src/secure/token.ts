/**
 * Connect tokens (PROTOCOL §9): what lets a client open a secure connection to a server.
 *
 * Your backend (the matchmaker, behind HTTPS) and your game servers share a 32-byte server key.
 * The backend mints a token per connection attempt with `createConnectToken()` and hands it to
 * the client over its own secure channel. The token holds, in the clear for the client, the
 * two session keys (client-to-server and server-to-client, fresh random bytes) and, sealed
 * under the server key (XChaCha20-Poly1305) so that only a server can read it and nobody can
 * change it, the same keys again with the client's id, the servers it may connect to and the
 * backend's user data. The client sends the sealed part in its HELLO; the server opens it and
 * so learns the keys without a key exchange, and knows the client id came from the backend.
 *
 * Token bytes:
 *   0    u32  magic 0x746B6361 ("ackt")
 *   4    u32  protocolId
 *   8    u64  expiresAt, Unix seconds
 *   16   24   nonce of the private part (random)
 *   40   32   client-to-server key
 *   72   32   server-to-client key
 *   104  u16  N = private part length
 *   106  N    private part = XChaCha20-Poly1305(server key, nonce, plaintext below,
 *                             associated data = bytes 0..16 of the token)
 * Private plaintext:
 *   0    u64  clientId
 *   8    32   client-to-server key
 *   40   32   server-to-client key
 *   72   u8   address count A (1..8), then A times: u8 length L, L ASCII bytes of "ip:port"
 *        u16  user data length U (0..256), then U bytes
 */
import { host } from "../api/host.js";
import { canonicalAddress } from "../relay/wire.js";
import type { Address } from "../session/sans-io.js";
import { KEY_BYTES, TAG_BYTES } from "./aead.js";
import { ConnectTokenError, SecureConfigError } from "./errors.js";
import { readU64, writeU64 } from "./wire.js";
import { xchacha20Poly1305Open, xchacha20Poly1305Seal } from "./xchacha.js";

export const TOKEN_MAGIC = 0x746b6361;
export const SERVER_KEY_BYTES = 32;
export const TOKEN_NONCE_BYTES = 24;
/** Bytes of the token before the private part. */
export const TOKEN_FIXED_BYTES = 106;
export const MAX_TOKEN_ADDRESSES = 8;
export const MAX_TOKEN_USER_DATA = 256;
/** Longest "ip:port" ("[ffff:...:ffff]:65535" is 47 characters). */
const MAX_ADDRESS_TEXT = 47;
/** The smallest private part: id, keys, one shortest address ("1.2.3.4:1", 9), no user data, tag. */
export const MIN_PRIVATE_BYTES = 8 + 2 * KEY_BYTES + 1 + 1 + 9 + 2 + TAG_BYTES;
export const MAX_PRIVATE_BYTES = 8 + 2 * KEY_BYTES + 1 + MAX_TOKEN_ADDRESSES * (1 + MAX_ADDRESS_TEXT) + 2 + MAX_TOKEN_USER_DATA + TAG_BYTES;
/** Longest a token may live. */
export const MAX_TOKEN_SECONDS = 24 * 3600;
/** Unix seconds beyond any plausible clock (the year 2106): a larger one was milliseconds. */
const MAX_UNIX_SECONDS = 0xffff_ffff;
/**
 * How far behind the backend's clock a client's may be before connect() calls a token expired
 * itself: the server decides with its own clock, so the client only catches a plainly stale
 * token at once (instead of waiting out its connect timeout).
 */
export const CLIENT_CLOCK_SLACK_SECONDS = 600;

export interface ConnectTokenOptions {
  /** The 32-byte key your game servers were started with (`listen({ secure: { serverKey } })`). */
  serverKey: Uint8Array;
  /** Your game's protocol id, as in listen() and connect(). */
  protocolId: number;
  /** Who the client is, as your backend knows it (u64): the server reads it as `connection.identity.clientId`. */
  clientId: bigint | number;
  /** The servers ("ip:port") the token is good for, 1..8: one the client connects to must be listed. */
  serverAddresses: readonly string[];
  /** Seconds until the token expires (1..86400). Default 60. */
  expiresInSeconds?: number;
  /** Up to 256 bytes for the server (`connection.identity.userData`), e.g. the player's loadout. */
  userData?: Uint8Array;
  /** Unix time in seconds to count from. Default now (tests pass a fixed one). */
  nowSeconds?: number;
}

/** A token as the client reads it (the public part) and as it goes into a HELLO. */
export interface ConnectToken {
  protocolId: number;
  expiresAt: number;
  clientToServerKey: Uint8Array;
  serverToClientKey: Uint8Array;
  /** Bytes 1..(39 + N) of a HELLO: protocolId, expiresAt, nonce, N, the private part. */
  helloBody: Uint8Array;
}

/** What a server learns from a token's private part. */
export interface TokenContents {
  clientId: bigint;
  expiresAt: number;
  clientToServerKey: Uint8Array;
  serverToClientKey: Uint8Array;
  serverAddresses: Address[];
  userData: Uint8Array;
}

/** 32 crypto-random bytes: a new server key (keep it secret, on your servers and backend only). */
export function generateServerKey(): Uint8Array {
  return host.crypto.getRandomValues(new Uint8Array(SERVER_KEY_BYTES));
}

/** Mints a connect token (run this on your backend, never on a client: it needs the server key). */
export function createConnectToken(options: ConnectTokenOptions): Uint8Array {
  if (options === null || typeof options !== "object") throw new SecureConfigError("createConnectToken() needs an options object { serverKey, protocolId, clientId, serverAddresses }");
  const { serverKey, protocolId } = options;
  checkServerKey(serverKey, "createConnectToken()");
  if (!Number.isInteger(protocolId) || protocolId < 0 || protocolId > 0xffffffff) throw new SecureConfigError(`createConnectToken(): protocolId must be an integer in 0..4294967295, got ${String(protocolId)}`);
  const clientId = typeof options.clientId === "number" ? (Number.isSafeInteger(options.clientId) && options.clientId >= 0 ? BigInt(options.clientId) : -1n) : options.clientId;
  if (typeof clientId !== "bigint" || clientId < 0n || clientId > 0xffff_ffff_ffff_ffffn) throw new SecureConfigError(`createConnectToken(): clientId must be an integer in 0..2^64-1, got ${String(options.clientId)}`);
  const lifetime = options.expiresInSeconds ?? 60;
  if (!Number.isInteger(lifetime) || lifetime < 1 || lifetime > MAX_TOKEN_SECONDS) throw new SecureConfigError(`createConnectToken(): expiresInSeconds must be an integer in 1..${MAX_TOKEN_SECONDS}, got ${String(lifetime)}`);
  const addresses = options.serverAddresses;
  if (!Array.isArray(addresses) || addresses.length < 1 || addresses.length > MAX_TOKEN_ADDRESSES) throw new SecureConfigError(`createConnectToken(): serverAddresses must list 1..${MAX_TOKEN_ADDRESSES} "ip:port" addresses`);
  const canonical = addresses.map((a) => {
    const c = typeof a === "string" ? canonicalAddress(a) : undefined;
    if (c === undefined) throw new SecureConfigError(`createConnectToken(): ${JSON.stringify(a)} is not an "ip:port" address (IPv6 as "[::1]:7777")`);
    return c;
  });
  const userData = options.userData ?? new Uint8Array(0);
  if (!(userData instanceof Uint8Array) || userData.length > MAX_TOKEN_USER_DATA) throw new SecureConfigError(`createConnectToken(): userData must be a Uint8Array of at most ${MAX_TOKEN_USER_DATA} bytes`);
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  // Seconds, not milliseconds (Date.now()): a token must not outlive MAX_TOKEN_SECONDS.
  if (!Number.isInteger(now) || now < 0 || now > MAX_UNIX_SECONDS) throw new SecureConfigError(`createConnectToken(): nowSeconds must be Unix time in whole seconds (Date.now() / 1000, rounded), got ${String(options.nowSeconds)}`);

  const random = host.crypto.getRandomValues(new Uint8Array(TOKEN_NONCE_BYTES + 2 * KEY_BYTES));
  const nonce = random.subarray(0, TOKEN_NONCE_BYTES);
  const c2s = random.subarray(TOKEN_NONCE_BYTES, TOKEN_NONCE_BYTES + KEY_BYTES);
  const s2c = random.subarray(TOKEN_NONCE_BYTES + KEY_BYTES);

  const addressBytes = canonical.map(ascii);
  const plain = new Uint8Array(8 + 2 * KEY_BYTES + 1 + addressBytes.reduce((n, a) => n + 1 + a.length, 0) + 2 + userData.length);
  const view = new DataView(plain.buffer);
  view.setBigUint64(0, clientId, true);
  plain.set(c2s, 8);
  plain.set(s2c, 8 + KEY_BYTES);
  let at = 8 + 2 * KEY_BYTES;
  plain[at++] = addressBytes.length;
  for (const a of addressBytes) {
    plain[at++] = a.length;
    plain.set(a, at);
    at += a.length;
  }
  view.setUint16(at, userData.length, true);
  plain.set(userData, at + 2);

  const token = new Uint8Array(TOKEN_FIXED_BYTES + plain.length + TAG_BYTES);
  const tview = new DataView(token.buffer);
  tview.setUint32(0, TOKEN_MAGIC, true);
  tview.setUint32(4, protocolId >>> 0, true);
  writeU64(token, 8, now + lifetime);
  token.set(nonce, 16);
  token.set(c2s, 40);
  token.set(s2c, 72);
  tview.setUint16(104, plain.length + TAG_BYTES, true);
  token.set(xchacha20Poly1305Seal(serverKey, nonce, token.subarray(0, 16), plain), TOKEN_FIXED_BYTES);
  return token;
}

/**
 * Reads a token on the client (its public part; the private part stays sealed). Throws
 * ConnectTokenError: not a token, for another protocol id, or expired at `nowSeconds` (default:
 * this machine's clock less CLIENT_CLOCK_SLACK_SECONDS, since the server's clock is the one that
 * counts).
 */
export function parseConnectToken(token: unknown, protocolId: number, nowSeconds = Date.now() / 1000 - CLIENT_CLOCK_SLACK_SECONDS): ConnectToken {
  if (!(token instanceof Uint8Array) || token.length < TOKEN_FIXED_BYTES + MIN_PRIVATE_BYTES) throw malformed();
  const view = new DataView(token.buffer, token.byteOffset, token.byteLength);
  const n = view.getUint16(104, true);
  if (view.getUint32(0, true) !== TOKEN_MAGIC || n < MIN_PRIVATE_BYTES || n > MAX_PRIVATE_BYTES || token.length !== TOKEN_FIXED_BYTES + n) throw malformed();
  const tokenProtocol = view.getUint32(4, true);
  if (tokenProtocol !== protocolId >>> 0) throw new ConnectTokenError("protocol-mismatch", `the connect token is for protocol id ${tokenProtocol}, not ${protocolId >>> 0}: mint it with the same protocolId`);
  const expiresAt = readU64(token, 8);
  if (!(expiresAt > nowSeconds)) throw new ConnectTokenError("expired", "the connect token has expired: ask your backend for a new one (tokens are short-lived, and one connects once)");
  // The HELLO carries bytes 4..16 (protocolId, expiresAt), 16..40 (nonce), then N and the private part.
  const helloBody = new Uint8Array(HELLO_BODY_PREFIX + n);
  helloBody.set(token.subarray(4, 40), 0);
  helloBody[36] = n & 0xff;
  helloBody[37] = n >>> 8;
  helloBody.set(token.subarray(TOKEN_FIXED_BYTES), HELLO_BODY_PREFIX);
  return {
    protocolId: tokenProtocol,
    expiresAt,
    // Copies of their own (a Node Buffer's slice() is a view the application may overwrite).
    clientToServerKey: new Uint8Array(token.subarray(40, 72)),
    serverToClientKey: new Uint8Array(token.subarray(72, 104)),
    helloBody,
  };
}

/** HELLO body bytes before the private part: protocolId, expiresAt, nonce, N. */
const HELLO_BODY_PREFIX = 38;

function malformed(): ConnectTokenError {
  return new ConnectTokenError("malformed", "connectToken is not an ackwire connect token (the bytes createConnectToken() returned, unchanged)");
}

/**
 * Opens the private part of a HELLO (`hello` is the whole datagram, its length already checked
 * against its N) with the server key. Undefined if it does not authenticate or its plaintext is
 * malformed: the caller counts that. Expiry and protocol id are the caller's checks.
 */
export function openHelloToken(serverKey: Uint8Array, hello: Uint8Array, n: number): TokenContents | undefined {
  const ad = new Uint8Array(16);
  new DataView(ad.buffer).setUint32(0, TOKEN_MAGIC, true);
  ad.set(hello.subarray(1, 13), 4);
  const plain = xchacha20Poly1305Open(serverKey, hello.subarray(13, 37), ad, hello.subarray(39, 39 + n));
  return plain === undefined ? undefined : readPrivate(plain, readU64(hello, 5));
}

/** The private plaintext's fields; undefined if its lengths do not add up. */
function readPrivate(plain: Uint8Array, expiresAt: number): TokenContents | undefined {
  if (plain.length < 8 + 2 * KEY_BYTES + 1) return undefined;
  const view = new DataView(plain.buffer, plain.byteOffset, plain.byteLength);
  const clientId = view.getBigUint64(0, true);
  let at = 8 + 2 * KEY_BYTES;
  const count = plain[at++]!;
  if (count < 1 || count > MAX_TOKEN_ADDRESSES) return undefined;
  const serverAddresses: Address[] = [];
  for (let i = 0; i < count; i++) {
    const length = plain[at++];
    if (length === undefined || length < 1 || length > MAX_ADDRESS_TEXT || at + length > plain.length) return undefined;
    const address = canonicalAddress(String.fromCharCode(...plain.subarray(at, at + length)));
    if (address === undefined) return undefined;
    serverAddresses.push(address);
    at += length;
  }
  if (at + 2 > plain.length) return undefined;
  const userLength = view.getUint16(at, true);
  if (userLength > MAX_TOKEN_USER_DATA || at + 2 + userLength !== plain.length) return undefined;
  return {
    clientId,
    expiresAt,
    clientToServerKey: plain.slice(8, 8 + KEY_BYTES),
    serverToClientKey: plain.slice(8 + KEY_BYTES, 8 + 2 * KEY_BYTES),
    serverAddresses,
    userData: plain.slice(at + 2),
  };
}

/** The bytes of an address's text (canonical addresses are ASCII). */
function ascii(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

export function checkServerKey(key: unknown, call: string): asserts key is Uint8Array {
  if (!(key instanceof Uint8Array) || key.length !== SERVER_KEY_BYTES) throw new SecureConfigError(`${call}: serverKey must be a Uint8Array of ${SERVER_KEY_BYTES} random bytes (generateServerKey() makes one), the same on your servers and your backend`);
}
