/**
 * The server's half of the secure layer (PROTOCOL §9), sans-IO: it turns received HELLO and
 * SEALED datagrams into the inner ackwire datagrams the Endpoint handles, and seals what the
 * Endpoint sends. Nothing is allocated for a sender until it shows a token sealed under the
 * server key: everything else is dropped and counted, and nothing is ever sent in reply to a
 * datagram that does not authenticate.
 *
 * An association is what the server keeps per client: the two session keys from the token, the
 * client's id and user data, a replay window, the next packet number to send, and the client's
 * address. The server numbers associations with random u32 ids; the client learns its id from
 * the first SEALED datagram and puts it in all of its own, so its datagrams are found by id
 * (one Map lookup) whatever address they come from: a client whose NAT gives it a new port
 * keeps its association, and the Endpoint's own migration (PROTOCOL §5) sees the new address.
 * Each association holds two addresses: where the client's newest datagram came from, and
 * where the Endpoint's connection is (it moves there only after checking the path, and tells
 * the layer with `connectionMoved`). Both stay the client's own until the Endpoint has moved or
 * the connection has ended (`connectionOpened` / `connectionEnded`): another client cannot take
 * the address the Endpoint still sends this client's data to.
 *
 * A token opens one association, until it expires: a HELLO copied off the path cannot open a
 * second one (its packet number is used up; a new attempt with the token fails the tag). A
 * client's own repeated HELLO from a new port (its NAT moved before it heard from the server) is
 * followed there as its SEALED datagrams are.
 */
import { host } from "../api/host.js";
import { PacketType } from "../engine/abi.js";
import { tokenKey as hexKey } from "../relay/wire.js";
import { AddressRateLimiter } from "../session/rate-limit.js";
import type { Address } from "../session/sans-io.js";
import { addressBytes, rateKeyOf } from "../session/address.js";
import { cookiesEqual, sipHash128, type SipKey } from "../session/cookie.js";
import { TAG_BYTES, type PacketAead } from "./aead.js";
import { wasmAead } from "./wasm-aead.js";
import { CLIENT_NONCE_BYTES, clientToServerKey, serverToClientKey } from "./keys.js";
import { ReplayWindow } from "./replay-window.js";
import { MAX_PRIVATE_BYTES, MAX_TOKEN_SECONDS, MIN_PRIVATE_BYTES, openHelloToken } from "./token.js";
import {
  AD_BYTES,
  HELLO,
  HELLO_COOKIE,
  HELLO_FIXED_BYTES,
  HELLO_TAIL_BYTES,
  MAX_SECURE_DATAGRAM,
  readU32,
  readU64,
  RETRY,
  RETRY_BYTES,
  RETRY_COOKIE_BYTES,
  RETRY_ECHO_BYTES,
  SEALED,
  SEALED_HEADER_BYTES,
  unsealPayload,
  writeAd,
  writeU32,
} from "./wire.js";

/** How long an association outlives the end of its connection (its DISCONNECT_ACK is sealed meanwhile). */
export const ENDED_GRACE_MS = 3000;
/** A client may repeat its HELLO until it sends SEALED, within its token's life or this long after it opened. */
export const HELLO_REPEAT_MS = 30_000;
/** An address a client's datagram came from is let go if its later datagrams keep coming from the connection's address this long after. */
export const MOVE_SETTLE_MS = 5000;
/**
 * With the table full, an association no connection opened on (a handshake given up, or stuck)
 * that has been quiet this long makes room for a new one. Otherwise handshakes keep theirs for
 * idleTimeoutMs: a slow one on a lossy path must not lose it.
 */
export const PENDING_IDLE_MS = 5000;
/** How far ahead of the server's clock a backend's may be. */
const TOKEN_CLOCK_SLACK_SECONDS = 600;
/** New tokens opened a second in all (the shared budget), and its burst. */
export const TOKEN_OPENINGS_PER_SECOND = 2000;
const TOKEN_OPENINGS_BURST = 4000;
/**
 * The part of the burst kept for HELLOs that came back with a retry cookie (their sender
 * receives at its address): below it, a HELLO without one is answered with a RETRY.
 */
export const VALIDATED_RESERVE = TOKEN_OPENINGS_BURST / 2;
/** A retry cookie's time window: it is good in the window it was made in and the next one. */
export const RETRY_WINDOW_MS = 10_000;
/** RETRYs waiting for the carrier to send them (one per HELLO answered; more are dropped). */
const RETRY_QUEUE_LIMIT = 1024;

export interface ServerSecurityOptions {
  serverKey: Uint8Array;
  /**
   * Keys this server's backend minted tokens with before `serverKey` (key rotation): tokens
   * sealed under them still open until they expire. Default none.
   */
  previousServerKeys?: readonly Uint8Array[];
  protocolId: number;
  /**
   * The "ip:port" addresses clients reach this server at (canonical form). A token must list one
   * of them. Empty: a token for any server with this key is accepted.
   */
  addresses: readonly Address[];
  /** Most associations at once (a HELLO beyond them is dropped and counted `full`). */
  maxAssociations: number;
  /** An association nothing authentic arrived on for this long is forgotten. */
  idleTimeoutMs: number;
  aead?: PacketAead;
  /** Unix time in seconds (token expiry). Default: the system clock. */
  unixSeconds?: () => number;
  /** A random u32 (association ids). Default: crypto-random. */
  randomU32?: () => number;
}

/** What the server knows of a secure client: from the token its backend minted. */
export interface ClientIdentity {
  clientId: bigint;
  /** The backend's user data from the token (0..256 bytes). */
  userData: Uint8Array;
  /** When the token expires (Unix seconds): the connection outlives it. */
  tokenExpiresAt: number;
}

export interface ServerSecurityCounters {
  /** Datagrams that authenticated and were handed in (HELLO and SEALED). */
  accepted: number;
  /** Associations opened (valid HELLOs with a new token). */
  opened: number;
  /**
   * Associations forgotten: idle for idleTimeoutMs; ENDED_GRACE_MS after their connection ended
   * or their handshake was denied; or, with the table full, quiet PENDING_IDLE_MS without a connection.
   */
  idle: number;
  /** Associations replaced by a new token's from the same address. */
  replaced: number;
  /** Datagrams whose association id now comes from another address (authenticated). */
  migrated: number;
  /** Too short, a length that does not add up, or an unknown first byte. */
  malformed: number;
  /** An ackwire datagram without the secure layer (a client that is not secure). */
  plain: number;
  /** HELLO for another protocol id. */
  wrongProtocol: number;
  /** HELLO whose token expired. */
  expiredToken: number;
  /** HELLO whose private part did not open under the server key (forged, or another key), or that would live too long. */
  badToken: number;
  /** HELLO whose token does not list this server. */
  wrongServer: number;
  /**
   * HELLO with a token already used: once its client has sent SEALED, too long after the
   * association opened, or after the association was forgotten.
   */
  tokenUsed: number;
  /** HELLO refused at maxAssociations, or with the table of remembered tokens full of unexpired ones. */
  full: number;
  /** HELLO with a new token from an address a live association of another client holds. */
  addressInUse: number;
  /**
   * New tokens beyond the rate at which they are opened: 10/s per source host (burst 20), 2000/s
   * in all (burst 4000); for a HELLO with a valid retry cookie, the whole burst.
   */
  rateLimited: number;
  /**
   * HELLOs with a new token answered with a RETRY instead of being opened: the shared budget was
   * down to the part kept for HELLOs with a valid retry cookie (VALIDATED_RESERVE).
   */
  retried: number;
  /** HELLO_COOKIEs whose cookie is not this server's for the address and token (taken as HELLOs without one). */
  badRetryCookie: number;
  /**
   * Authentic datagrams not handed in: from an address another client's association holds (the
   * client is not moved there), or older than the newest from an address this one does not hold.
   */
  migrationRefused: number;
  /** SEALED with an id no association has (or sends to an address without one). */
  noAssociation: number;
  /** Sealed payloads whose tag did not match (forged, corrupted, wrong key). */
  badTag: number;
  /** Packet numbers already accepted, or more than the window old. */
  replayed: number;
  /** Sends dropped: no association for the address, or too large once sealed. */
  sendDropped: number;
  /** Live connections ended because a newer one opened with the same token (not a drop). */
  connectionsReplaced: number;
}

/**
 * Passes an Endpoint event on to the secure layer: which connection opened on which
 * association, where the Endpoint moved it, when it ended. Other events are ignored. Returns a
 * connection the caller must end at once ("kicked"): one the new connection replaced on
 * its association (a token is good for one connection); the Endpoint's reset() ends it.
 */
export function followConnections(security: ServerSecurity, event: unknown, nowMs: number): number | undefined {
  const e = event as { type?: unknown; connection?: number; address?: Address; from?: Address; to?: Address; identity?: ClientIdentity };
  if (e.type === "connect") return security.connectionOpened(e.connection!, e.address!, e.identity);
  if (e.type === "migrate") security.connectionMoved(e.connection!, e.from!, e.to!);
  else if (e.type === "disconnect") security.connectionEnded(e.connection!, nowMs);
  return undefined;
}

/** The datagrams the server's secure layer dropped, all reasons together. */
export function securityDrops(c: ServerSecurityCounters): number {
  return (
    c.malformed + c.plain + c.wrongProtocol + c.expiredToken + c.badToken + c.wrongServer + c.tokenUsed + c.full + c.addressInUse +
    c.rateLimited + c.retried + c.noAssociation + c.badTag + c.replayed + c.migrationRefused
  );
}

interface Association {
  readonly id: number;
  /** Where the client's newest authentic datagram came from. */
  address: Address;
  /** When `address` last changed. */
  movedAtMs: number;
  /** Where the Endpoint's connection is: the address it opened from, then each `connectionMoved`. */
  endpointAddress: Address;
  /** The keys this association seals with (./keys.ts), not the token's own. */
  readonly c2s: Uint8Array;
  readonly s2c: Uint8Array;
  readonly identity: ClientIdentity;
  readonly tokenKey: string;
  readonly window: ReplayWindow;
  sendPn: number;
  lastHeardMs: number;
  readonly openedAtMs: number;
  /** The client has sent SEALED: its HELLOs are over. */
  sealedSeen: boolean;
  /** The Endpoint's connection on it (`connectionOpened`); -1 before. */
  connection: number;
  /** When the Endpoint's connection on it ended (`connectionEnded`); -1 while it lives. */
  endedAtMs: number;
}

interface TokenEntry {
  expiresAt: number;
  association: Association | undefined;
}

export class ServerSecurity {
  readonly counters: ServerSecurityCounters = {
    accepted: 0, opened: 0, idle: 0, replaced: 0, migrated: 0, malformed: 0, plain: 0, wrongProtocol: 0, expiredToken: 0, badToken: 0,
    wrongServer: 0, tokenUsed: 0, full: 0, addressInUse: 0, rateLimited: 0, retried: 0, badRetryCookie: 0, migrationRefused: 0, noAssociation: 0, badTag: 0, replayed: 0, sendDropped: 0, connectionsReplaced: 0,
  };
  readonly #options: Required<ServerSecurityOptions>;
  readonly #byId = new Map<number, Association>();
  /** Every association under its `address` and its `endpointAddress`. */
  readonly #byAddress = new Map<Address, Association>();
  /** The Endpoint's connections opened on an association: connection id -> association. */
  readonly #byConnection = new Map<number, Association>();
  /** Tokens seen, by the private part's tag, oldest first. */
  readonly #tokens = new Map<string, TokenEntry>();
  readonly #maxTokens: number;
  /**
   * Opening a token's private part is the one costly step a sender without a token can make
   * the server take (an XChaCha20-Poly1305 of up to ~730 bytes), so new tokens are opened at a
   * bounded rate per source host (rateKeyOf: the IP, or an IPv6 /64, whatever the port).
   */
  readonly #helloRate = new AddressRateLimiter(10, 20, 4096);
  /**
   * The same for all addresses together: senders that spoof many addresses are bounded too.
   * They could spend it all and lock honest clients out, so its last VALIDATED_RESERVE are
   * for HELLOs whose sender showed it receives at its address (a retry cookie).
   */
  readonly #helloRateAll = new AddressRateLimiter(TOKEN_OPENINGS_PER_SECOND, TOKEN_OPENINGS_BURST, 1);
  /** Key of the retry cookies: random per server, so no state is needed to check one. */
  readonly #retryKey: SipKey;
  readonly #retryScratch = new Uint8Array(320);
  readonly #retryCookie = new Uint8Array(RETRY_COOKIE_BYTES);
  /** RETRYs to send, oldest first (pollRetry). */
  #retries: { to: Address; bytes: Uint8Array }[] = [];
  readonly #ad = new Uint8Array(AD_BYTES);
  readonly #out = new Uint8Array(MAX_SECURE_DATAGRAM);
  #lastSweepMs = -Infinity;
  /** The association of the datagram open() last returned. */
  #opened: Association | undefined;
  /** Live associations by their identity object (one per association), for events that carry it. */
  readonly #byIdentity = new WeakMap<ClientIdentity, Association>();
  /** The latest time passed in (seal() takes none). */
  #lastNowMs = 0;

  constructor(options: ServerSecurityOptions) {
    this.#options = {
      aead: wasmAead,
      previousServerKeys: [],
      unixSeconds: () => Date.now() / 1000,
      randomU32: () => host.crypto.getRandomValues(new Uint32Array(1))[0]!,
      ...options,
    };
    this.#maxTokens = Math.max(1024, 4 * options.maxAssociations);
    const k = host.crypto.getRandomValues(new Uint32Array(4));
    this.#retryKey = [k[0]!, k[1]!, k[2]!, k[3]!];
  }

  /**
   * The next RETRY to send (to a HELLO's source; PROTOCOL §9), or undefined. A carrier sends
   * them as they come, unsealed: they carry no secret, and the client checks their echo.
   */
  pollRetry(): { to: Address; bytes: Uint8Array } | undefined {
    return this.#retries.shift();
  }

  get size(): number {
    return this.#byId.size;
  }

  /** The client at `address` (where it is, or where its connection still is), if it has an association. */
  identityOf(address: Address): ClientIdentity | undefined {
    return this.#byAddress.get(address)?.identity;
  }

  /**
   * The identity of the association the datagram `open` last returned opened under (undefined
   * after a drop). A carrier hands it in with that datagram (SansIoNode.handleDatagram's
   * `identity`): by the time the Endpoint handles the datagram, later ones of the same batch
   * may have moved the client off the address it came from.
   */
  get openedIdentity(): ClientIdentity | undefined {
    return this.#opened?.identity;
  }

  /**
   * A received datagram: the inner ackwire datagram (decrypted in place, a view of `bytes`), or
   * undefined when it is dropped (counted).
   */
  open(from: Address, bytes: Uint8Array, nowMs: number): Uint8Array | undefined {
    this.#lastNowMs = nowMs;
    this.#opened = undefined;
    this.#sweepEvery(nowMs);
    const type = bytes[0];
    if (type === SEALED) return this.#openSealed(from, bytes, nowMs);
    if (type === HELLO) return this.#openHello(from, bytes, nowMs, undefined);
    if (type === HELLO_COOKIE) {
      if (bytes.length < 1 + RETRY_COOKIE_BYTES) {
        this.counters.malformed++;
        return undefined;
      }
      // The cookie moves out of the way and the rest is the HELLO it carries (byte 16 becomes
      // its type byte).
      const cookie = bytes.slice(1, 1 + RETRY_COOKIE_BYTES);
      const hello = bytes.subarray(RETRY_COOKIE_BYTES);
      hello[0] = HELLO;
      return this.#openHello(from, hello, nowMs, cookie);
    }
    if (type !== undefined && type < 0x80) this.counters.plain++;
    else this.counters.malformed++;
    return undefined;
  }

  /**
   * Seals `inner` for the client at `to`: a view of this object's buffer, valid until the next
   * seal, or undefined when there is no association for `to` (counted `sendDropped`).
   */
  seal(inner: Uint8Array, to: Address): Uint8Array | undefined {
    const a = this.#byAddress.get(to);
    if (a === undefined || SEALED_HEADER_BYTES + inner.length + TAG_BYTES > MAX_SECURE_DATAGRAM) {
      this.counters.sendDropped++;
      return undefined;
    }
    // The Endpoint refusing the handshake (DENY: server full, version, the accept hook): the
    // association ends with it, as a connection's does, and gives its slot back soon.
    if (a.connection < 0 && a.endedAtMs < 0 && (inner[0]! & 0x0f) === PacketType.Deny) a.endedAtMs = this.#lastNowMs;
    const out = this.#out;
    const pn = a.sendPn++;
    writeAd(out, SEALED, a.id, pn);
    const n = this.#options.aead.seal(a.s2c, pn, out.subarray(0, AD_BYTES), inner, out, SEALED_HEADER_BYTES);
    return out.subarray(0, SEALED_HEADER_BYTES + n);
  }

  /**
   * The Endpoint opened connection `connection` with the client at `address` (its "connect"
   * event): the connection belongs to that address's association from now on.
   */
  connectionOpened(connection: number, address: Address, identity?: ClientIdentity): number | undefined {
    // By the identity the handshake's datagram carried, if the event has it: the client may
    // have moved on from `address` within the batch that datagram came in.
    const byIdentity = identity === undefined ? undefined : this.#byIdentity.get(identity);
    const a = byIdentity !== undefined && this.#byId.get(byIdentity.id) === byIdentity ? byIdentity : this.#byAddress.get(address);
    if (a === undefined) return undefined;
    // The Endpoint checked `address` (its cookie came back from there, sealed for this
    // client): the connection's sends go there, so the association holds it.
    this.#claimChecked(a, address);
    // One token, one connection (PROTOCOL §9): a connection still live on this association
    // is replaced, and the caller closes it. A token holder completing handshakes from many
    // source ports of its host would hold as many connections, fill maxConnections and lock
    // honest players out.
    let replaced: number | undefined;
    if (a.connection >= 0 && this.#byConnection.get(a.connection) === a) {
      this.#byConnection.delete(a.connection);
      if (a.endedAtMs < 0 && a.connection !== connection) {
        replaced = a.connection;
        this.counters.connectionsReplaced++;
      }
    }
    a.connection = connection;
    this.#byConnection.set(connection, a);
    // A new connection on this association (the client reused its session): it lives, and it
    // is where the Endpoint opened it.
    a.endedAtMs = -1;
    if (a.endpointAddress !== address) {
      if (a.endpointAddress !== a.address && this.#byAddress.get(a.endpointAddress) === a) this.#byAddress.delete(a.endpointAddress);
      a.endpointAddress = address;
    }
    return replaced;
  }

  /**
   * The Endpoint moved `connection` from address `from` to `to` (its "migrate" event): `from` is
   * released unless the client is still there, and `to` is the connection's address now.
   */
  connectionMoved(connection: number, from: Address, to: Address): void {
    const a = this.#byConnection.get(connection);
    if (a === undefined || !this.#byId.has(a.id)) return;
    this.#claimChecked(a, to);
    if (a.endpointAddress !== a.address && this.#byAddress.get(a.endpointAddress) === a) this.#byAddress.delete(a.endpointAddress);
    if (from !== a.endpointAddress && from !== a.address && this.#byAddress.get(from) === a) this.#byAddress.delete(from);
    a.endpointAddress = to;
    this.#byAddress.set(to, a);
    // The client's own newest address stays its own (it may have moved on again).
    this.#byAddress.set(a.address, a);
  }

  /**
   * The Endpoint's `connection` ended: its association is forgotten ENDED_GRACE_MS later (so
   * the last DISCONNECT_ACK can still be sealed), and from now on its addresses may go to
   * another client (a NAT giving the same ip:port to another device).
   */
  connectionEnded(connection: number, nowMs: number): void {
    const a = this.#byConnection.get(connection);
    this.#byConnection.delete(connection);
    if (a !== undefined && a.endedAtMs < 0 && this.#byId.has(a.id)) a.endedAtMs = nowMs;
  }

  /**
   * `a` holds `address`, which the Endpoint checked answers for its connection. The layer runs
   * a batch ahead of the Endpoint: another client's datagrams may have claimed it since this
   * client's were opened. That claim gives way: the other client goes back to where its own
   * connection is, or is forgotten if it has none elsewhere.
   */
  #claimChecked(a: Association, address: Address): void {
    const holder = this.#byAddress.get(address);
    if (holder !== undefined && holder !== a) {
      if (holder.endpointAddress !== address) {
        holder.address = holder.endpointAddress;
      } else {
        this.#forget(holder);
        this.counters.replaced++;
      }
    }
    this.#byAddress.set(address, a);
  }

  /** Forgets the quietest association no connection opened on, if it has been quiet PENDING_IDLE_MS. */
  #evictPending(nowMs: number): boolean {
    let quietest: Association | undefined;
    for (const a of this.#byId.values()) {
      if (a.connection < 0 && (quietest === undefined || a.lastHeardMs < quietest.lastHeardMs)) quietest = a;
    }
    if (quietest === undefined || nowMs - quietest.lastHeardMs < PENDING_IDLE_MS) return false;
    this.#forget(quietest);
    this.counters.idle++;
    return true;
  }

  /** Forgets associations idle for idleTimeoutMs, or ended ENDED_GRACE_MS ago, and tokens past their expiry. */
  sweep(nowMs: number): void {
    this.#lastSweepMs = nowMs;
    for (const a of this.#byId.values()) {
      if (nowMs - a.lastHeardMs >= this.#options.idleTimeoutMs || (a.endedAtMs >= 0 && nowMs - a.endedAtMs >= ENDED_GRACE_MS)) {
        this.#forget(a);
        this.counters.idle++;
      }
    }
    this.#dropExpiredTokens();
  }

  /** Forgets the tokens that have expired and whose association is gone. */
  #dropExpiredTokens(): void {
    const now = this.#options.unixSeconds();
    for (const [key, entry] of this.#tokens) if (entry.expiresAt <= now && entry.association === undefined) this.#tokens.delete(key);
  }

  #sweepEvery(nowMs: number): void {
    if (nowMs - this.#lastSweepMs >= 1000) this.sweep(nowMs);
  }

  #openSealed(from: Address, bytes: Uint8Array, nowMs: number): Uint8Array | undefined {
    if (bytes.length < SEALED_HEADER_BYTES + TAG_BYTES) {
      this.counters.malformed++;
      return undefined;
    }
    const a = this.#byId.get(readU32(bytes, 1));
    if (a === undefined) {
      this.counters.noAssociation++;
      return undefined;
    }
    const pn = readU64(bytes, 5);
    const inner = this.#unseal(a, pn, bytes.subarray(0, AD_BYTES), bytes, SEALED_HEADER_BYTES);
    if (inner === undefined || !this.#handInFrom(a, from, pn, nowMs)) return undefined;
    a.sealedSeen = true;
    this.#accept(a, pn, nowMs);
    return inner;
  }

  /**
   * Whether an authentic datagram of `a` numbered `pn` from `from` is handed in, following the
   * client there if it is its newest. The newest datagram decides where the client is (back to
   * the connection's address, too), unless another client is there: a copy of this client's
   * datagram sent from that client's address by someone on the path, say. An older one is
   * handed in only from the connection's address; from anywhere else the Endpoint would take it
   * for that address's. Refused datagrams are not taken into the window either: the genuine
   * one, from the client's own address, may still come.
   */
  #handInFrom(a: Association, from: Address, pn: number, nowMs: number): boolean {
    if (from === a.address) return true;
    const other = this.#byAddress.get(from);
    const newest = pn > a.window.highest;
    if (newest ? other !== undefined && other !== a : from !== a.endpointAddress) {
      this.counters.migrationRefused++;
      return false;
    }
    if (newest) this.#migrate(a, from, nowMs);
    else if (from === a.endpointAddress && nowMs - a.movedAtMs >= MOVE_SETTLE_MS) this.#settleBack(a);
    return true;
  }

  /** A HELLO (`cookie`: the retry cookie it came with, if any). */
  #openHello(from: Address, bytes: Uint8Array, nowMs: number, cookie: Uint8Array | undefined): Uint8Array | undefined {
    const counters = this.counters;
    if (bytes.length < HELLO_FIXED_BYTES + MIN_PRIVATE_BYTES + HELLO_TAIL_BYTES + TAG_BYTES) {
      counters.malformed++;
      return undefined;
    }
    const n = bytes[37]! | (bytes[38]! << 8);
    if (n < MIN_PRIVATE_BYTES || n > MAX_PRIVATE_BYTES || HELLO_FIXED_BYTES + n + HELLO_TAIL_BYTES + TAG_BYTES > bytes.length) {
      counters.malformed++;
      return undefined;
    }
    if (readU32(bytes, 1) !== this.#options.protocolId >>> 0) {
      counters.wrongProtocol++;
      return undefined;
    }
    const pnAt = HELLO_FIXED_BYTES + n + CLIENT_NONCE_BYTES;
    const pn = readU64(bytes, pnAt);
    // readU64 gives Infinity from 2^53 up: no client ever sends such a number.
    if (pn === Infinity) {
      counters.malformed++;
      return undefined;
    }
    // The private part's tag names the token: it is unique per token, and covers all of it.
    const tokenKey = hexKey(bytes, HELLO_FIXED_BYTES + n - TAG_BYTES, TAG_BYTES);
    const entry = this.#tokens.get(tokenKey);
    if (entry !== undefined) {
      // A token opens one association: sent again after the association ended, it opens
      // nothing. The client may repeat its HELLO (its first datagrams were lost or not yet
      // answered) until it sends SEALED, and not for ever: a client that never reads an answer
      // must not hold an address by repeating HELLOs.
      const a = entry.association;
      if (a === undefined || a.sealedSeen || (a.identity.tokenExpiresAt <= this.#options.unixSeconds() && nowMs - a.openedAtMs >= HELLO_REPEAT_MS)) {
        counters.tokenUsed++;
        return undefined;
      }
      // Authenticated by the association's key (its token may have expired since), which only
      // this attempt's client has: a copy of its HELLO is a replay, another attempt with the
      // token fails the tag. From a new address it is the client, whose NAT gave it a new port
      // before it heard from us: followed there as a SEALED datagram would be.
      const inner = this.#unseal(a, pn, writeAd(this.#ad, HELLO, 0, pn), bytes, pnAt + 8);
      if (inner === undefined || !this.#handInFrom(a, from, pn, nowMs)) return undefined;
      this.#accept(a, pn, nowMs);
      return inner;
    }
    // A new token. Checked before it is opened (cheap); the expiry is authenticated when it is.
    const expiresAt = readU64(bytes, 5);
    const nowSeconds = this.#options.unixSeconds();
    if (!(expiresAt > nowSeconds)) {
      counters.expiredToken++;
      return undefined;
    }
    // No backend mints a token that lives longer (a clock in milliseconds would): such a token
    // would be remembered for ever and fill the table.
    if (expiresAt > nowSeconds + MAX_TOKEN_SECONDS + TOKEN_CLOCK_SLACK_SECONDS) {
      counters.badToken++;
      return undefined;
    }
    // Opening it is the costliest step a sender without a token can cause: bounded per address
    // and in all.
    // Per host, not per port: one host sending from many ports must not spend the shared budget.
    if (!this.#helloRate.allow(nowMs, rateKeyOf(from))) {
      counters.rateLimited++;
      return undefined;
    }
    const tagAt = HELLO_FIXED_BYTES + n - TAG_BYTES;
    let validated = false;
    if (cookie !== undefined) {
      validated = this.#checkRetryCookie(from, bytes, tagAt, nowMs, cookie);
      if (!validated) counters.badRetryCookie++;
    }
    // Short of budget, a sender that has not shown it receives at `from` gets a RETRY instead
    // (stateless, and smaller than its HELLO): spoofed sources cannot spend the reserve.
    if (!this.#helloRateAll.allow(nowMs, "", validated ? 0 : VALIDATED_RESERVE)) {
      if (validated) counters.rateLimited++;
      else this.#retry(from, bytes, tagAt, pnAt - CLIENT_NONCE_BYTES, nowMs);
      return undefined;
    }
    let contents = openHelloToken(this.#options.serverKey, bytes, n);
    for (const key of this.#options.previousServerKeys) contents ??= openHelloToken(key, bytes, n);
    if (contents === undefined) {
      counters.badToken++;
      return undefined;
    }
    const listed = this.#options.addresses;
    if (listed.length > 0 && !contents.serverAddresses.some((s) => listed.includes(s))) {
      counters.wrongServer++;
      return undefined;
    }
    // An address another client's association holds (as its address, or the one it just moved
    // away from, where the Endpoint may still send its data) is not given to a new token: a
    // sender that spoofs it with a token of its own must neither disconnect that client nor
    // receive its traffic. Once the connection ended, or for the same client id (a player
    // reconnecting), the old association gives way.
    const old = this.#byAddress.get(from);
    if (old !== undefined && old.endedAtMs < 0 && old.identity.clientId !== contents.clientId) {
      counters.addressInUse++;
      return undefined;
    }
    if (this.#byId.size - (old !== undefined ? 1 : 0) >= this.#options.maxAssociations) {
      this.sweep(nowMs);
      if (this.#byId.size - (this.#byAddress.get(from) !== undefined ? 1 : 0) >= this.#options.maxAssociations && !this.#evictPending(nowMs)) {
        counters.full++;
        return undefined;
      }
    }
    if (!this.#roomForToken()) {
      counters.full++;
      return undefined;
    }
    const id = this.#newId();
    const clientNonce = bytes.subarray(HELLO_FIXED_BYTES + n, pnAt);
    const a: Association = {
      id,
      address: from,
      movedAtMs: nowMs,
      endpointAddress: from,
      c2s: clientToServerKey(contents.clientToServerKey, clientNonce),
      s2c: serverToClientKey(contents.serverToClientKey, clientNonce, id),
      identity: { clientId: contents.clientId, userData: contents.userData, tokenExpiresAt: contents.expiresAt },
      tokenKey,
      window: new ReplayWindow(),
      sendPn: 0,
      lastHeardMs: nowMs,
      openedAtMs: nowMs,
      sealedSeen: false,
      connection: -1,
      endedAtMs: -1,
    };
    // The inner datagram must open under the derived key before anything is kept: a HELLO
    // with a valid token but a forged payload allocates nothing.
    const inner = this.#unseal(a, pn, writeAd(this.#ad, HELLO, 0, pn), bytes, pnAt + 8);
    if (inner === undefined) return undefined;
    const displaced = this.#byAddress.get(from);
    if (displaced !== undefined) {
      this.#forget(displaced);
      counters.replaced++;
    }
    this.#accept(a, pn, nowMs);
    this.#byId.set(a.id, a);
    this.#byIdentity.set(a.identity, a);
    this.#byAddress.set(from, a);
    this.#tokens.set(tokenKey, { expiresAt: contents.expiresAt, association: a });
    counters.opened++;
    return inner;
  }

  /**
   * The retry cookie for a HELLO from `from` whose token's tag is at `hello[tagAt..]`, in the
   * window `windowOffset` windows before the one of `nowMs`: SipHash-2-4-128 under the
   * server's random key of the address text, the tag and the window number (u32).
   */
  #mintRetryCookie(from: Address, hello: Uint8Array, tagAt: number, nowMs: number, windowOffset: number): Uint8Array {
    const scratch = this.#retryScratch;
    const n = addressBytes(from, scratch, 0);
    scratch.set(hello.subarray(tagAt, tagAt + TAG_BYTES), n);
    writeU32(scratch, n + TAG_BYTES, (Math.floor(nowMs / RETRY_WINDOW_MS) - windowOffset) >>> 0);
    sipHash128(this.#retryKey, scratch, 0, n + TAG_BYTES + 4, this.#retryCookie, 0);
    return this.#retryCookie;
  }

  #checkRetryCookie(from: Address, hello: Uint8Array, tagAt: number, nowMs: number, cookie: Uint8Array): boolean {
    return cookiesEqual(this.#mintRetryCookie(from, hello, tagAt, nowMs, 0), 0, cookie, 0) || cookiesEqual(this.#mintRetryCookie(from, hello, tagAt, nowMs, 1), 0, cookie, 0);
  }

  /** Queues a RETRY for the HELLO from `from` (its client nonce at `hello[nonceAt..]`). */
  #retry(from: Address, hello: Uint8Array, tagAt: number, nonceAt: number, nowMs: number): void {
    this.counters.retried++;
    if (this.#retries.length >= RETRY_QUEUE_LIMIT) return;
    const out = new Uint8Array(RETRY_BYTES);
    out[0] = RETRY;
    out.set(hello.subarray(nonceAt, nonceAt + RETRY_ECHO_BYTES), 1);
    out.set(this.#mintRetryCookie(from, hello, tagAt, nowMs, 0), 1 + RETRY_ECHO_BYTES);
    this.#retries.push({ to: from, bytes: out });
  }

  /**
   * Checks the window and the tag of the payload at `bytes[at..]` and decrypts it in place. The
   * caller decides whether to hand it in, and then `#accept`s it.
   */
  #unseal(a: Association, pn: number, ad: Uint8Array, bytes: Uint8Array, at: number): Uint8Array | undefined {
    return unsealPayload(this.#options.aead, a.c2s, a.window, pn, ad, bytes, at, this.counters);
  }

  /** An authenticated datagram handed in: its number is used up, and the client was heard from. */
  #accept(a: Association, pn: number, nowMs: number): void {
    this.#opened = a;
    a.window.accept(pn);
    a.lastHeardMs = nowMs;
    this.counters.accepted++;
  }

  #migrate(a: Association, to: Address, nowMs: number): void {
    // The address the client leaves is dropped unless the Endpoint's connection is still there.
    if (a.address !== a.endpointAddress && this.#byAddress.get(a.address) === a) this.#byAddress.delete(a.address);
    a.address = to;
    a.movedAtMs = nowMs;
    // No other association holds `to` (#openSealed refused the move otherwise).
    this.#byAddress.set(to, a);
    this.counters.migrated++;
  }

  /**
   * The client's datagrams still come from the connection's address, MOVE_SETTLE_MS after one
   * came from elsewhere, and the Endpoint has not moved the connection: that other address was
   * not really the client's (a copy raced from a spoofed address, or the client's own trick to
   * hold an address it does not own). It is let go.
   */
  #settleBack(a: Association): void {
    if (this.#byAddress.get(a.address) === a) this.#byAddress.delete(a.address);
    a.address = a.endpointAddress;
  }

  #forget(a: Association): void {
    this.#byId.delete(a.id);
    if (this.#byAddress.get(a.address) === a) this.#byAddress.delete(a.address);
    if (this.#byAddress.get(a.endpointAddress) === a) this.#byAddress.delete(a.endpointAddress);
    if (a.connection >= 0 && this.#byConnection.get(a.connection) === a) this.#byConnection.delete(a.connection);
    const entry = this.#tokens.get(a.tokenKey);
    if (entry !== undefined && entry.association === a) entry.association = undefined;
  }

  /**
   * Whether one more token can be remembered: the table is bounded, and an unexpired token is
   * never forgotten (a forgotten one could open an association again, with a copied HELLO), so
   * when it is full of them new tokens are refused until some expire.
   */
  #roomForToken(): boolean {
    if (this.#tokens.size < this.#maxTokens) return true;
    this.#dropExpiredTokens();
    return this.#tokens.size < this.#maxTokens;
  }

  #newId(): number {
    for (;;) {
      const id = this.#options.randomU32() >>> 0;
      if (!this.#byId.has(id)) return id;
    }
  }
}
