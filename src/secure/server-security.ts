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
import { rateKeyOf } from "../session/address.js";
import { TAG_BYTES, type PacketAead } from "./aead.js";
import { wasmAead } from "./wasm-aead.js";
import { CLIENT_NONCE_BYTES, clientToServerKey, serverToClientKey } from "./keys.js";
import { ReplayWindow } from "./replay-window.js";
import { MAX_PRIVATE_BYTES, MAX_TOKEN_SECONDS, MIN_PRIVATE_BYTES, openHelloToken } from "./token.js";
import { AD_BYTES, HELLO, HELLO_FIXED_BYTES, HELLO_TAIL_BYTES, MAX_SECURE_DATAGRAM, readU32, readU64, SEALED, SEALED_HEADER_BYTES, unsealPayload, writeAd } from "./wire.js";

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
  /** New tokens beyond the rate at which they are opened: 10/s per address (burst 20), 2000/s in all (burst 4000). */
  rateLimited: number;
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
  const e = event as { type?: unknown; connection?: number; address?: Address; from?: Address; to?: Address };
  if (e.type === "connect") return security.connectionOpened(e.connection!, e.address!);
  if (e.type === "migrate") security.connectionMoved(e.connection!, e.from!, e.to!);
  else if (e.type === "disconnect") security.connectionEnded(e.connection!, nowMs);
  return undefined;
}

/** The datagrams the server's secure layer dropped, all reasons together. */
export function securityDrops(c: ServerSecurityCounters): number {
  return (
    c.malformed + c.plain + c.wrongProtocol + c.expiredToken + c.badToken + c.wrongServer + c.tokenUsed + c.full + c.addressInUse +
    c.rateLimited + c.noAssociation + c.badTag + c.replayed + c.migrationRefused
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
    wrongServer: 0, tokenUsed: 0, full: 0, addressInUse: 0, rateLimited: 0, migrationRefused: 0, noAssociation: 0, badTag: 0, replayed: 0, sendDropped: 0, connectionsReplaced: 0,
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
  /** The same for all addresses together: senders that spoof many addresses are bounded too. */
  readonly #helloRateAll = new AddressRateLimiter(2000, 4000, 1);
  readonly #ad = new Uint8Array(AD_BYTES);
  readonly #out = new Uint8Array(MAX_SECURE_DATAGRAM);
  #lastSweepMs = -Infinity;
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
  }

  get size(): number {
    return this.#byId.size;
  }

  /** The client at `address` (where it is, or where its connection still is), if it has an association. */
  identityOf(address: Address): ClientIdentity | undefined {
    return this.#byAddress.get(address)?.identity;
  }

  /**
   * A received datagram: the inner ackwire datagram (decrypted in place, a view of `bytes`), or
   * undefined when it is dropped (counted).
   */
  open(from: Address, bytes: Uint8Array, nowMs: number): Uint8Array | undefined {
    this.#lastNowMs = nowMs;
    this.#sweepEvery(nowMs);
    const type = bytes[0];
    if (type === SEALED) return this.#openSealed(from, bytes, nowMs);
    if (type === HELLO) return this.#openHello(from, bytes, nowMs);
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
  connectionOpened(connection: number, address: Address): number | undefined {
    const a = this.#byAddress.get(address);
    if (a === undefined) return undefined;
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
    const holder = this.#byAddress.get(to);
    if (holder !== undefined && holder !== a) {
      // The layer runs a batch ahead of the Endpoint: another client's datagrams may have
      // claimed `to` since this client's were opened. The Endpoint checked that `to` answers
      // for this connection, so the claim gives way: that client goes back to where its own
      // connection is, or is forgotten if it has none elsewhere.
      if (holder.endpointAddress !== to) {
        holder.address = holder.endpointAddress;
      } else {
        this.#forget(holder);
        this.counters.replaced++;
      }
    }
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

  #openHello(from: Address, bytes: Uint8Array, nowMs: number): Uint8Array | undefined {
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
    if (!this.#helloRate.allow(nowMs, rateKeyOf(from)) || !this.#helloRateAll.allow(nowMs, "")) {
      counters.rateLimited++;
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
    this.#byAddress.set(from, a);
    this.#tokens.set(tokenKey, { expiresAt: contents.expiresAt, association: a });
    counters.opened++;
    return inner;
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
