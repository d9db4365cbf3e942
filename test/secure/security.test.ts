/**
 * The secure layer's two halves (src/secure/server-security.ts, client-security.ts) and connect
 * tokens (src/secure/token.ts), sans-IO: what opens, what is dropped and counted, and that
 * nothing is kept for a sender without a valid token.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ClientSecurity } from "../../src/secure/client-security.js";
import { ConnectTokenError, SecureConfigError } from "../../src/secure/errors.js";
import { REPLAY_WINDOW } from "../../src/secure/replay-window.js";
import { ENDED_GRACE_MS, HELLO_REPEAT_MS, MOVE_SETTLE_MS, PENDING_IDLE_MS, securityDrops, ServerSecurity, type ServerSecurityOptions } from "../../src/secure/server-security.js";
import { CLIENT_CLOCK_SLACK_SECONDS, createConnectToken, generateServerKey, parseConnectToken, type ConnectTokenOptions } from "../../src/secure/token.js";
import { wasmAead } from "../../src/secure/wasm-aead.js";
import { HELLO, SEALED, SECURE_OVERHEAD } from "../../src/secure/wire.js";

const PROTOCOL = 0x5ec0de01;
const SERVER = "198.51.100.7:7777";
const CLIENT = "203.0.113.5:40000";
const NOW = 1_800_000_000;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i * 7 + 1);

function token(over: Partial<ConnectTokenOptions> = {}): Uint8Array {
  return createConnectToken({ serverKey: KEY, protocolId: PROTOCOL, clientId: 42n, serverAddresses: [SERVER], userData: Uint8Array.of(9, 8, 7), nowSeconds: NOW, ...over });
}

function server(over: Partial<ServerSecurityOptions> = {}, clock = { now: NOW + 1 }): ServerSecurity {
  let id = 100;
  return new ServerSecurity({
    serverKey: KEY,
    protocolId: PROTOCOL,
    addresses: [SERVER],
    maxAssociations: 4,
    idleTimeoutMs: 30_000,
    unixSeconds: () => clock.now,
    randomU32: () => id++,
    ...over,
  });
}

function client(t = token()): ClientSecurity {
  return new ClientSecurity(parseConnectToken(t, PROTOCOL, NOW + 1));
}

/** An inner datagram: recognisable bytes of `n` (never with the top bit of byte 0 set). */
const inner = (k: number, n = 40): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (k * 31 + i * 7) & 0x7f);

/** The bytes of a sealed datagram, copied (a seal's result is a view of the layer's buffer). */
const copy = (b: Uint8Array | undefined): Uint8Array => {
  expect(b).toBeDefined();
  return b!.slice();
};

/** A client of `s` with its association open at `at` (and the Endpoint's connection `connection` on it, if given), past its HELLO. */
function connected(s: ServerSecurity, clientId: bigint, at = CLIENT, connection?: number): ClientSecurity {
  const c = client(token({ clientId }));
  expect(s.open(at, copy(c.seal(inner(1, 256))), 0)).toBeDefined();
  if (connection !== undefined) s.connectionOpened(connection, at);
  expect(c.open(copy(s.seal(inner(0), at)))).toEqual(inner(0));
  return c;
}

describe("connect tokens", () => {
  it("a client reads its keys and expiry; the sealed part is not the plaintext", () => {
    const t = token();
    const parsed = parseConnectToken(t, PROTOCOL, NOW);
    expect(parsed.expiresAt).toBe(NOW + 60);
    expect(parsed.clientToServerKey).toEqual(t.slice(40, 72));
    expect(parsed.serverToClientKey).toEqual(t.slice(72, 104));
    expect(parsed.clientToServerKey).not.toEqual(parsed.serverToClientKey);
    // The user data does not appear in the clear anywhere in the token (16 bytes: a chance match
    // in ~300 random bytes is out of reach).
    const secret = Uint8Array.from({ length: 16 }, (_, i) => 200 + i);
    const withSecret = token({ userData: secret });
    const hay = Array.from(withSecret).join(",");
    expect(hay.includes(Array.from(secret).join(","))).toBe(false);
    // Two tokens for the same client have different keys.
    expect(parseConnectToken(token(), PROTOCOL, NOW).clientToServerKey).not.toEqual(parsed.clientToServerKey);
  });

  it("refuses an expired token, another protocol's, and bytes that are not a token, with typed errors", () => {
    const t = token({ expiresInSeconds: 10 });
    expect(() => parseConnectToken(t, PROTOCOL, NOW + 10)).toThrow(ConnectTokenError);
    try {
      parseConnectToken(t, PROTOCOL, NOW + 11);
    } catch (e) {
      expect((e as ConnectTokenError).problem).toBe("expired");
      expect((e as ConnectTokenError).code).toBe("ERR_CONNECT_TOKEN");
    }
    expect(() => parseConnectToken(t, PROTOCOL + 1, NOW)).toThrow(/protocol id/);
    expect(() => parseConnectToken(t.subarray(0, t.length - 1), PROTOCOL, NOW)).toThrow(/not an ackwire connect token/);
    expect(() => parseConnectToken("token", PROTOCOL, NOW)).toThrow(ConnectTokenError);
    const badMagic = t.slice();
    badMagic[0] ^= 1;
    expect(() => parseConnectToken(badMagic, PROTOCOL, NOW)).toThrow(/not an ackwire connect token/);
  });

  it("createConnectToken checks every option", () => {
    expect(() => token({ serverKey: new Uint8Array(31) })).toThrow(SecureConfigError);
    expect(() => token({ clientId: -1 })).toThrow(/clientId/);
    expect(() => token({ clientId: 2n ** 64n })).toThrow(/clientId/);
    expect(() => token({ clientId: 1.5 })).toThrow(/clientId/);
    expect(() => token({ serverAddresses: [] })).toThrow(/serverAddresses/);
    expect(() => token({ serverAddresses: Array(9).fill(SERVER) })).toThrow(/serverAddresses/);
    expect(() => token({ serverAddresses: ["example.com:7777"] })).toThrow(/ip:port/);
    expect(() => token({ expiresInSeconds: 0 })).toThrow(/expiresInSeconds/);
    expect(() => token({ userData: new Uint8Array(257) })).toThrow(/userData/);
    expect(() => token({ protocolId: 2 ** 32 })).toThrow(/protocolId/);
    expect(generateServerKey()).toHaveLength(32);
    expect(generateServerKey()).not.toEqual(generateServerKey());
  });
});

describe("ServerSecurity and ClientSecurity", () => {
  it("a HELLO opens an association; datagrams go both ways; the client switches to SEALED", () => {
    const s = server();
    const c = client();
    const hello = copy(c.seal(inner(1, 256)));
    expect(hello[0]).toBe(HELLO);
    expect(s.open(CLIENT, hello, 0)).toEqual(inner(1, 256));
    expect(s.size).toBe(1);
    expect(s.identityOf(CLIENT)).toEqual({ clientId: 42n, userData: Uint8Array.of(9, 8, 7), tokenExpiresAt: NOW + 60 });

    const reply = copy(s.seal(inner(2), CLIENT));
    expect(reply[0]).toBe(SEALED);
    expect(reply.length).toBe(inner(2).length + SECURE_OVERHEAD);
    expect(c.associationId).toBe(-1);
    expect(c.open(reply)).toEqual(inner(2));
    expect(c.associationId).toBe(100);

    const next = copy(c.seal(inner(3)));
    expect(next[0]).toBe(SEALED);
    expect(next.length).toBe(inner(3).length + SECURE_OVERHEAD);
    expect(s.open(CLIENT, next, 1)).toEqual(inner(3));
    // Nothing is sent to an address without an association.
    expect(s.seal(inner(4), "203.0.113.6:1")).toBeUndefined();
    expect(s.counters.sendDropped).toBe(1);
    expect(s.counters.opened).toBe(1);
  });

  it("a HELLO repeated by the client reuses its association", () => {
    const s = server();
    const c = client();
    expect(s.open(CLIENT, copy(c.seal(inner(1, 256))), 0)).toBeDefined();
    expect(s.open(CLIENT, copy(c.seal(inner(2, 256))), 1)).toEqual(inner(2, 256));
    expect(s.size).toBe(1);
    expect(s.counters.opened).toBe(1);
  });

  it("drops forged, tampered and misdirected HELLOs, and keeps nothing for them", () => {
    const cases: [string, (b: Uint8Array) => void, keyof ServerSecurity["counters"]][] = [
      ["a bit of the private part", (b) => (b[60]! ^= 0x10), "badToken"],
      ["a bit of the nonce", (b) => (b[20]! ^= 1), "badToken"],
      ["a bit of the sealed payload", (b) => (b[b.length - 30]! ^= 4), "badTag"],
      ["a bit of the tag", (b) => (b[b.length - 1]! ^= 0x80), "badTag"],
      ["the packet number", (b) => (b[b.length - 256 - 16 - 8]! ^= 1), "badTag"],
      ["the protocol id", (b) => (b[1]! ^= 1), "wrongProtocol"],
      ["the expiry, later", (b) => (b[5]! ^= 0x40), "badToken"],
      // N one short: the tag is read one byte early (the packet number, from the nonce's last
      // byte and its own first seven, stays small).
      [
        "the private length, one short",
        (b) => {
          const n = (b[37]! | (b[38]! << 8)) - 1;
          b[37] = n & 0xff;
          b[38] = n >> 8;
        },
        "badToken",
      ],
      ["the private length, past the datagram", (b) => (b[38] = 0xff), "malformed"],
    ];
    for (const [what, change, counter] of cases) {
      const s = server();
      const hello = copy(client().seal(inner(1, 256)));
      change(hello);
      expect(s.open(CLIENT, hello, 0), what).toBeUndefined();
      expect(s.counters[counter], what).toBe(1);
      expect(s.size, what).toBe(0);
      expect(s.identityOf(CLIENT), what).toBeUndefined();
    }
  });

  it("opens tokens minted with a previous key while keys rotate, and no others", () => {
    const old = Uint8Array.from({ length: 32 }, (_, i) => 100 + i);
    const next = generateServerKey();
    const rotating = server({ serverKey: next, previousServerKeys: [old] });
    expect(rotating.open(CLIENT, copy(client(token({ serverKey: old })).seal(inner(1, 256))), 0)).toEqual(inner(1, 256));
    expect(rotating.open("203.0.113.8:1", copy(client(token({ serverKey: next })).seal(inner(2, 256))), 0)).toEqual(inner(2, 256));
    expect(rotating.open("203.0.113.9:1", copy(client(token({ serverKey: generateServerKey() })).seal(inner(3, 256))), 0)).toBeUndefined();
    expect(rotating.counters.badToken).toBe(1);
    // Once the old key is dropped, its tokens no longer open.
    expect(server({ serverKey: next }).open(CLIENT, copy(client(token({ serverKey: old })).seal(inner(1, 256))), 0)).toBeUndefined();
  });

  it("refuses a token for another key, an expired one, and one that does not list this server", () => {
    const other = server({ serverKey: generateServerKey() });
    expect(other.open(CLIENT, copy(client().seal(inner(1, 256))), 0)).toBeUndefined();
    expect(other.counters.badToken).toBe(1);

    const late = server({}, { now: NOW + 60 });
    expect(late.open(CLIENT, copy(client().seal(inner(1, 256))), 0)).toBeUndefined();
    expect(late.counters.expiredToken).toBe(1);

    const elsewhere = server({ addresses: ["198.51.100.8:7777"] });
    expect(elsewhere.open(CLIENT, copy(client().seal(inner(1, 256))), 0)).toBeUndefined();
    expect(elsewhere.counters.wrongServer).toBe(1);
    // With no addresses configured, any server holding the key accepts it.
    expect(server({ addresses: [] }).open(CLIENT, copy(client().seal(inner(1, 256))), 0)).toBeDefined();
    expect(server().size + other.size + late.size + elsewhere.size).toBe(0);
  });

  it("opens one association per token: a copy from elsewhere, or the token again after its association ended, opens nothing", () => {
    const clock = { now: NOW + 1 };
    const s = server({}, clock);
    const t = token();
    const hello = copy(client(t).seal(inner(1, 256)));
    expect(s.open(CLIENT, hello.slice(), 0)).toBeDefined();
    // The same HELLO, copied off the path and sent from elsewhere: its number is used up.
    expect(s.open("203.0.113.99:1234", hello.slice(), 1)).toBeUndefined();
    expect(s.counters.replayed).toBe(1);
    expect(s.size).toBe(1);
    // A second attempt with the same token (a new client nonce) while the association lives,
    // from here or elsewhere: its packet number 0 was seen, and its key is not the association's.
    expect(s.open(CLIENT, copy(client(t).seal(inner(2, 256))), 2)).toBeUndefined();
    expect(s.counters.replayed).toBe(2);
    const c2 = client(t);
    c2.seal(inner(0));
    expect(s.open("203.0.113.99:1234", copy(c2.seal(inner(2, 256))), 2)).toBeUndefined();
    expect(s.counters.badTag).toBe(1);
    expect(s.counters.migrated).toBe(0);
    const c3 = client(t);
    c3.seal(inner(0));
    expect(s.open(CLIENT, copy(c3.seal(inner(2, 256))), 2)).toBeUndefined();
    expect(s.counters.badTag).toBe(2);
    // After the association went idle, the token opens nothing, from anywhere.
    s.sweep(60_000);
    expect(s.counters.idle).toBe(1);
    expect(s.open(CLIENT, copy(client(t).seal(inner(3, 256))), 60_001)).toBeUndefined();
    expect(s.open("203.0.113.99:1234", copy(client(t).seal(inner(4, 256))), 60_002)).toBeUndefined();
    expect(s.counters.tokenUsed).toBe(2);
    expect(s.size).toBe(0);
    expect(s.counters.opened).toBe(1);
  });

  it("seals under keys of each attempt and association, never the token's own", () => {
    const t = token();
    const parsed = parseConnectToken(t, PROTOCOL, NOW + 1);
    const a = new ClientSecurity(parsed, undefined, Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8));
    const b = new ClientSecurity(parsed, undefined, Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 9));
    // Same token, same packet number 0, same inner datagram: different ciphertexts.
    const ha = copy(a.seal(inner(1, 256)));
    const hb = copy(b.seal(inner(1, 256)));
    expect(ha.length).toBe(hb.length);
    expect(ha.subarray(ha.length - 272)).not.toEqual(hb.subarray(hb.length - 272));
    // The client nonce travels in the HELLO, right before the packet number.
    expect(ha.subarray(ha.length - 256 - 16 - 16, ha.length - 256 - 16 - 8)).toEqual(Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8));
    // Two servers' associations for one client nonce (ids 100 and 101) seal under different keys.
    const s1 = server();
    const s2 = server({ randomU32: () => 101 });
    s1.open(CLIENT, ha.slice(), 0);
    s2.open(CLIENT, ha.slice(), 0);
    const r1 = copy(s1.seal(inner(9), CLIENT));
    const r2 = copy(s2.seal(inner(9), CLIENT));
    expect(r1.subarray(13)).not.toEqual(r2.subarray(13));
    expect(a.open(r1)).toEqual(inner(9));
  });

  it("drops a replayed datagram, and one older than the window", () => {
    const s = server();
    const c = client();
    s.open(CLIENT, copy(c.seal(inner(1, 256))), 0);
    c.open(copy(s.seal(inner(0), CLIENT)));
    const first = copy(c.seal(inner(5)));
    expect(s.open(CLIENT, first.slice(), 1)).toEqual(inner(5));
    expect(s.open(CLIENT, first.slice(), 2)).toBeUndefined();
    expect(s.counters.replayed).toBe(1);
    // Out of order within the window is fine; beyond it is refused.
    const held = copy(c.seal(inner(6)));
    for (let i = 0; i < REPLAY_WINDOW; i++) expect(s.open(CLIENT, copy(c.seal(inner(7))), 3)).toBeDefined();
    expect(s.open(CLIENT, held, 4)).toBeUndefined();
    expect(s.counters.replayed).toBe(2);
    const late = copy(c.seal(inner(8)));
    const later = copy(c.seal(inner(9)));
    expect(s.open(CLIENT, later, 5)).toEqual(inner(9));
    expect(s.open(CLIENT, late, 5)).toEqual(inner(8));
    // And on the client's side.
    const reply = copy(s.seal(inner(10), CLIENT));
    expect(c.open(reply.slice())).toEqual(inner(10));
    expect(c.open(reply.slice())).toBeUndefined();
    expect(c.counters.replayed).toBe(1);
  });

  it("follows a client to a new address (by its association id) and seals to both", () => {
    const s = server();
    const c = client();
    s.open(CLIENT, copy(c.seal(inner(1, 256))), 0);
    c.open(copy(s.seal(inner(0), CLIENT)));
    const moved = "203.0.113.5:40999";
    const lateFromOld = copy(c.seal(inner(2)));
    expect(s.open(moved, copy(c.seal(inner(3))), 10)).toEqual(inner(3));
    expect(s.counters.migrated).toBe(1);
    expect(s.identityOf(moved)?.clientId).toBe(42n);
    // A datagram sent before the move, arriving late from the old address, does not move it back.
    expect(s.open(CLIENT, lateFromOld, 11)).toEqual(inner(2));
    expect(s.counters.migrated).toBe(1);
    expect(c.open(copy(s.seal(inner(4), moved)))).toEqual(inner(4));
    expect(c.open(copy(s.seal(inner(5), CLIENT)))).toEqual(inner(5));
  });

  it("a forged SEALED datagram with a live association id is dropped, and moves nothing", () => {
    const s = server();
    const c = client();
    s.open(CLIENT, copy(c.seal(inner(1, 256))), 0);
    c.open(copy(s.seal(inner(0), CLIENT)));
    const real = copy(c.seal(inner(2)));
    real[20]! ^= 1;
    expect(s.open("203.0.113.66:6666", real, 1)).toBeUndefined();
    expect(s.counters.badTag).toBe(1);
    expect(s.counters.migrated).toBe(0);
    expect(s.identityOf("203.0.113.66:6666")).toBeUndefined();
    const unknown = copy(c.seal(inner(3)));
    unknown[1]! ^= 0xff;
    expect(s.open(CLIENT, unknown, 2)).toBeUndefined();
    expect(s.counters.noAssociation).toBe(1);
  });

  it("holds at most maxAssociations, forgets idle ones, and refuses more while full", () => {
    const s = server({ maxAssociations: 2, idleTimeoutMs: 1000 });
    const at = (i: number) => `203.0.113.${i}:4000`;
    for (let i = 0; i < 3; i++) s.open(at(i), copy(client().seal(inner(i, 256))), 0);
    expect(s.size).toBe(2);
    expect(s.counters.full).toBe(1);
    // After the idle timeout, the next HELLO finds room.
    expect(s.open(at(3), copy(client().seal(inner(3, 256))), 1000)).toBeDefined();
    expect(s.size).toBe(1);
    expect(s.counters.idle).toBe(2);
  });

  it("a sender with a token of its own cannot take over, or disconnect, another client's address", () => {
    const s = server({ maxAssociations: 8 });
    const victim = client(token({ clientId: 1n }));
    const other = client(token({ clientId: 2n }));
    const OTHER = "203.0.113.8:5000";
    s.open(CLIENT, copy(victim.seal(inner(1, 256))), 0);
    victim.open(copy(s.seal(inner(0), CLIENT)));
    s.open(OTHER, copy(other.seal(inner(1, 256))), 0);
    other.open(copy(s.seal(inner(0), OTHER)));
    // An attacker with a valid token (client 3) spoofs the victim's address.
    expect(s.open(CLIENT, copy(client(token({ clientId: 3n })).seal(inner(2, 256))), 1)).toBeUndefined();
    expect(s.counters.addressInUse).toBe(1);
    expect(s.identityOf(CLIENT)?.clientId).toBe(1n);
    // Someone on the path sends a copy of the victim's newest datagram from the other client's address.
    expect(s.open(OTHER, copy(victim.seal(inner(3))), 2)).toBeUndefined();
    expect(s.counters.migrationRefused).toBe(1);
    expect(s.identityOf(OTHER)?.clientId).toBe(2n);
    expect(s.identityOf(CLIENT)?.clientId).toBe(1n);
    // Both still talk.
    expect(s.open(CLIENT, copy(victim.seal(inner(4))), 3)).toEqual(inner(4));
    expect(s.open(OTHER, copy(other.seal(inner(5))), 3)).toEqual(inner(5));
    // The same client id from the same address (a reconnect with a new token) does replace it.
    expect(s.open(CLIENT, copy(client(token({ clientId: 1n })).seal(inner(6, 256))), 4)).toEqual(inner(6, 256));
    expect(s.counters.replaced).toBe(1);
  });

  it("keeps the connection's address the client's own until the Endpoint has moved the connection, however often the client moves", () => {
    const s = server({ maxAssociations: 8 });
    const x = connected(s, 1n, CLIENT, 7);
    const B = "203.0.113.5:41000";
    const C = "203.0.113.5:42000";
    // Two moves before the Endpoint's migrate event (or copies raced from two spoofed addresses).
    expect(s.open(B, copy(x.seal(inner(2))), 1)).toEqual(inner(2));
    expect(s.open(C, copy(x.seal(inner(3))), 2)).toEqual(inner(3));
    expect(s.counters.migrated).toBe(2);
    // The middle address is let go; the connection's address is not.
    expect(s.identityOf(B)).toBeUndefined();
    expect(s.identityOf(CLIENT)?.clientId).toBe(1n);
    expect(s.open(CLIENT, copy(client(token({ clientId: 2n })).seal(inner(4, 256))), 3)).toBeUndefined();
    expect(s.counters.addressInUse).toBe(1);
    // What the Endpoint still sends there is sealed for x.
    expect(x.open(copy(s.seal(inner(5), CLIENT)))).toEqual(inner(5));
    // The Endpoint moves the connection to C: the old address is free for another client.
    s.connectionMoved(7, CLIENT, C);
    expect(s.identityOf(CLIENT)).toBeUndefined();
    expect(s.open(CLIENT, copy(client(token({ clientId: 2n })).seal(inner(6, 256))), 4)).toEqual(inner(6, 256));
    expect(s.identityOf(C)?.clientId).toBe(1n);
    expect(x.open(copy(s.seal(inner(7), C)))).toEqual(inner(7));
  });

  it("a refused copy does not use up the genuine datagram's number; a late datagram from elsewhere is not handed in", () => {
    const s = server({ maxAssociations: 8 });
    const a = client(token({ clientId: 1n }));
    const b = client(token({ clientId: 2n }));
    const OTHER = "203.0.113.8:5000";
    s.open(CLIENT, copy(a.seal(inner(1, 256))), 0);
    a.open(copy(s.seal(inner(0), CLIENT)));
    s.open(OTHER, copy(b.seal(inner(1, 256))), 0);
    const genuine = copy(a.seal(inner(2)));
    expect(s.open(OTHER, genuine.slice(), 1)).toBeUndefined();
    expect(s.counters.migrationRefused).toBe(1);
    expect(s.open(CLIENT, genuine.slice(), 1)).toEqual(inner(2));
    expect(s.counters.replayed).toBe(0);
    // An older datagram of a's, first seen from an address a does not hold (a third party's).
    const older = copy(a.seal(inner(3)));
    expect(s.open(CLIENT, copy(a.seal(inner(4))), 2)).toEqual(inner(4));
    expect(s.open("203.0.113.77:1", older.slice(), 3)).toBeUndefined();
    expect(s.counters.migrationRefused).toBe(2);
    expect(s.counters.migrated).toBe(0);
    // From a's own address it is still handed in (reordered, not replayed).
    expect(s.open(CLIENT, older, 3)).toEqual(inner(3));
  });

  it("after the connection ends, the association gives its address way and is forgotten after the grace", () => {
    const s = server({ maxAssociations: 8 });
    const x = connected(s, 1n, CLIENT, 3);
    s.connectionEnded(3, 100);
    // The last DISCONNECT_ACK can still be sealed during the grace.
    expect(s.seal(inner(9), CLIENT)).toBeDefined();
    s.sweep(100 + ENDED_GRACE_MS);
    expect(s.size).toBe(0);
    expect(s.counters.idle).toBe(1);
    // A second device behind the same NAT mapping, another client id: no lockout.
    const s2 = server({ maxAssociations: 8 });
    expect(s2.open(CLIENT, copy(client(token({ clientId: 1n })).seal(inner(1, 256))), 0)).toBeDefined();
    s2.connectionOpened(1, CLIENT);
    s2.connectionEnded(1, 10);
    expect(s2.open(CLIENT, copy(client(token({ clientId: 2n })).seal(inner(2, 256))), 20)).toEqual(inner(2, 256));
    expect(s2.counters.replaced).toBe(1);
  });

  it("the end of a replaced connection does not end the association that replaced it", () => {
    const s = server({ maxAssociations: 8 });
    s.open(CLIENT, copy(client(token({ clientId: 1n })).seal(inner(1, 256))), 0);
    s.connectionOpened(1, CLIENT);
    // The same player reconnects from the same address with a new token; the Endpoint then
    // drops its old connection there (a restarted peer) and opens a new one.
    const again = client(token({ clientId: 1n }));
    expect(s.open(CLIENT, copy(again.seal(inner(2, 256))), 10)).toEqual(inner(2, 256));
    expect(s.counters.replaced).toBe(1);
    s.connectionEnded(1, 20);
    s.connectionOpened(2, CLIENT);
    s.sweep(20 + ENDED_GRACE_MS);
    expect(s.size).toBe(1);
    expect(s.identityOf(CLIENT)?.clientId).toBe(1n);
    again.open(copy(s.seal(inner(0), CLIENT)));
    expect(s.open(CLIENT, copy(again.seal(inner(3))), 20 + ENDED_GRACE_MS)).toEqual(inner(3));
    // The end of the connection that moved with its client is found by connection, not address.
    const B = "203.0.113.5:41000";
    expect(s.open(B, copy(again.seal(inner(4))), 30 + ENDED_GRACE_MS)).toEqual(inner(4));
    s.connectionEnded(2, 40 + ENDED_GRACE_MS);
    s.sweep(40 + 2 * ENDED_GRACE_MS);
    expect(s.size).toBe(0);
  });

  it("when the Endpoint moves a connection to an address another client claimed in the same batch, the connection gets it", () => {
    const s = server({ maxAssociations: 8 });
    const a = connected(s, 1n, CLIENT, 7);
    const T = "203.0.113.5:41000";
    const Z = "203.0.113.5:42000";
    // One batch: a's REBIND answer from T, then a's next datagram from Z, then H's HELLO from T.
    s.open(T, copy(a.seal(inner(2))), 1);
    s.open(Z, copy(a.seal(inner(3))), 1);
    expect(s.open(T, copy(client(token({ clientId: 2n })).seal(inner(4, 256))), 1)).toEqual(inner(4, 256));
    // Then the Endpoint handles the batch and moves a's connection to T, which it checked.
    s.connectionMoved(7, CLIENT, T);
    expect(s.identityOf(T)?.clientId).toBe(1n);
    expect(a.open(copy(s.seal(inner(5), T)))).toEqual(inner(5));
    expect(s.size).toBe(1);
    // Later moves of a's connection are still followed.
    s.connectionMoved(7, T, Z);
    expect(s.identityOf(T)).toBeUndefined();
    expect(s.identityOf(Z)?.clientId).toBe(1n);
  });

  it("a new connection on an association whose connection ended lives, at the address it opened", () => {
    const s = server({ maxAssociations: 8 });
    const a = client(token({ clientId: 1n }));
    s.open(CLIENT, copy(a.seal(inner(1, 256))), 0);
    s.connectionOpened(1, CLIENT);
    s.connectionEnded(1, 5);
    s.connectionOpened(2, CLIENT);
    expect(s.open(CLIENT, copy(client(token({ clientId: 2n })).seal(inner(2, 256))), 6)).toBeUndefined();
    expect(s.counters.addressInUse).toBe(1);
    s.sweep(6 + ENDED_GRACE_MS);
    expect(s.size).toBe(1);
  });

  it("an address a client's datagram came from is let go if the client keeps sending from its connection's address", () => {
    const s = server({ maxAssociations: 8 });
    const a = connected(s, 1n, CLIENT, 1);
    // a sends its newest datagram from a spoofed address V, then keeps to older numbers from X.
    const V = "198.51.100.99:5000";
    const held = [copy(a.seal(inner(2))), copy(a.seal(inner(3))), copy(a.seal(inner(4)))];
    expect(s.open(V, copy(a.seal(inner(5))), 10)).toEqual(inner(5));
    expect(s.identityOf(V)?.clientId).toBe(1n);
    expect(s.open(CLIENT, held[0]!, 20)).toEqual(inner(2));
    expect(s.identityOf(V)?.clientId).toBe(1n);
    expect(s.open(CLIENT, held[1]!, 10 + MOVE_SETTLE_MS)).toEqual(inner(3));
    expect(s.identityOf(V)).toBeUndefined();
    // V's real owner can connect.
    expect(s.open(V, copy(client(token({ clientId: 3n })).seal(inner(6, 256))), 11 + MOVE_SETTLE_MS)).toEqual(inner(6, 256));
  });

  it("a HELLO is repeated only before its first SEALED, and not for ever", () => {
    const clock = { now: NOW + 1 };
    const s = server({ idleTimeoutMs: 120_000 }, clock);
    const t = token({ expiresInSeconds: 10 });
    const c = client(t);
    s.open(CLIENT, copy(c.seal(inner(1, 256))), 0);
    // A client that never reads an answer repeats its HELLO once a second: past its token's
    // life, for up to HELLO_REPEAT_MS after the association opened, then no more.
    let accepted = 0;
    for (let ms = 1000; ms <= HELLO_REPEAT_MS + 5000; ms += 1000) {
      clock.now = NOW + 1 + ms / 1000;
      if (s.open(CLIENT, copy(c.seal(inner(3, 256))), ms) !== undefined) accepted++;
    }
    expect(accepted).toBe(HELLO_REPEAT_MS / 1000 - 1);
    expect(s.counters.tokenUsed).toBe(6);
    // Once the client sent SEALED, no more HELLOs.
    const s2 = server({}, { now: NOW + 1 });
    const t2 = token();
    const d = client(t2);
    s2.open(CLIENT, copy(d.seal(inner(1, 256))), 0);
    d.open(copy(s2.seal(inner(0), CLIENT)));
    expect(s2.open(CLIENT, copy(d.seal(inner(3))), 1)).toEqual(inner(3));
    const again = new ClientSecurity(parseConnectToken(t2, PROTOCOL, NOW + 1));
    expect(s2.open(CLIENT, copy(again.seal(inner(4, 256))), 2)).toBeUndefined();
  });

  it("a client whose NAT moves before its first SEALED: its next HELLO moves the association, and answers go to the new port", () => {
    const s = server();
    const c = client();
    expect(s.open(CLIENT, copy(c.seal(inner(1, 256))), 0)).toEqual(inner(1, 256));
    const moved = "203.0.113.5:40999";
    // The HELLO before the move, late from the old port after the new one's: handed in only
    // because the Endpoint's connection... has none yet; the association stays at the new port.
    const late = copy(c.seal(inner(2, 256)));
    expect(s.open(moved, copy(c.seal(inner(3, 256))), 10)).toEqual(inner(3, 256));
    expect(s.counters.migrated).toBe(1);
    expect(s.counters.tokenUsed).toBe(0);
    expect(s.size).toBe(1);
    expect(s.identityOf(moved)?.clientId).toBe(42n);
    const answer = copy(s.seal(inner(4), moved));
    expect(c.open(answer)).toEqual(inner(4));
    expect(s.open(CLIENT, late, 11)).toEqual(inner(2, 256)); // from the Endpoint's address: handed in
    expect(s.counters.migrated).toBe(1);
    // The client's SEALED from the new port, as after any move.
    expect(s.open(moved, copy(c.seal(inner(5))), 12)).toEqual(inner(5));
  });

  it("a copy of a client's HELLO sent from elsewhere is a replay; an older one from elsewhere moves nothing; another client's address is not taken", () => {
    const s = server();
    const c = client();
    const first = copy(c.seal(inner(1, 256)));
    expect(s.open(CLIENT, first, 0)).toBeDefined();
    expect(s.open("203.0.113.66:1", first.slice(), 1)).toBeUndefined();
    expect(s.counters.replayed).toBe(1);
    const older = copy(c.seal(inner(2, 256)));
    expect(s.open(CLIENT, copy(c.seal(inner(3, 256))), 2)).toBeDefined();
    expect(s.open("203.0.113.66:2", older, 3)).toBeUndefined();
    expect(s.counters.migrationRefused).toBe(1);
    // A HELLO of this client from an address another client's association holds.
    connected(s, 7n, "203.0.113.77:7");
    expect(s.open("203.0.113.77:7", copy(c.seal(inner(4, 256))), 4)).toBeUndefined();
    expect(s.counters.migrationRefused).toBe(2);
    expect(s.counters.migrated).toBe(0);
    expect(s.identityOf("203.0.113.77:7")?.clientId).toBe(7n);
    expect(s.identityOf(CLIENT)?.clientId).toBe(42n);
  });

  it("a client resending its HELLO after its token expired keeps its association", () => {
    const clock = { now: NOW + 1 };
    const s = server({}, clock);
    const c = client(token({ expiresInSeconds: 5 }));
    s.open(CLIENT, copy(c.seal(inner(1, 256))), 0);
    clock.now = NOW + 10;
    expect(s.open(CLIENT, copy(c.seal(inner(2, 256))), 1)).toEqual(inner(2, 256));
    expect(s.counters.expiredToken).toBe(0);
  });

  it("drops a packet number of 2^53 or more as malformed, with either AEAD", () => {
    for (const aead of [undefined, wasmAead]) {
      const s = server(aead === undefined ? {} : { aead });
      const c = new ClientSecurity(parseConnectToken(token(), PROTOCOL, NOW + 1), aead);
      const hello = copy(c.seal(inner(1, 256)));
      // Packet number 0 rewritten to 2^64-1: its nonce and associated data must not read as 0.
      hello.fill(0xff, hello.length - 256 - 16 - 8, hello.length - 256 - 16);
      expect(s.open(CLIENT, hello, 0)).toBeUndefined();
      expect(s.counters.malformed).toBe(1);
      expect(s.size).toBe(0);
    }
  });

  it("opens new tokens at a bounded rate per address, and refuses them while remembered tokens fill the table", () => {
    const s = server({ maxAssociations: 1, idleTimeoutMs: 1 });
    let opened = 0;
    for (let i = 0; i < 30; i++) if (s.open(CLIENT, copy(client(token({ clientId: 1n })).seal(inner(i, 256))), 0) !== undefined) opened++;
    // A burst of 20, then refused (the same client id replaces its own association each time).
    expect(opened).toBe(20);
    expect(s.counters.rateLimited).toBe(10);
    // 1024 tokens remembered (the table's floor), none expired: the next new one is refused.
    const t = server({ maxAssociations: 1, idleTimeoutMs: 1 });
    for (let i = 0; i < 1024; i++) t.open(`198.18.${i >> 8}.${i & 255}:1`, copy(client().seal(inner(i, 256))), i * 10);
    expect(t.counters.opened).toBe(1024);
    expect(t.open("198.19.0.1:1", copy(client().seal(inner(0, 256))), 20_000)).toBeUndefined();
    expect(t.counters.full).toBe(1);
  });

  it("counts one host's HELLOs together whatever its source ports (an IPv6 host by its /64), so it cannot spend the server-wide budget (found by a review)", () => {
    const s = server({ maxAssociations: 4096, idleTimeoutMs: 1 });
    const opens = (from: (i: number) => string, n: number, at: number): number => {
      let opened = 0;
      for (let i = 0; i < n; i++) if (s.open(from(i), copy(client(token({ clientId: BigInt(1000 + i) })).seal(inner(i, 256))), at) !== undefined) opened++;
      return opened;
    };
    // 60 ports of one IPv4 host: its burst of 20, then refused.
    expect(opens((i) => `203.0.113.50:${20_000 + i}`, 60, 0)).toBe(20);
    // 60 addresses in one IPv6 /64: one host too.
    expect(opens((i) => `[2001:db8:1:2::${(i + 1).toString(16)}]:${30_000 + i}`, 60, 0)).toBe(20);
    // Another host, and another /64, still open theirs.
    expect(opens((i) => `203.0.113.51:${20_000 + i}`, 5, 0)).toBe(5);
    expect(opens((i) => `[2001:db8:1:3::${(i + 1).toString(16)}]:1`, 5, 0)).toBe(5);
    expect(s.counters.rateLimited).toBe(80);
  });

  it("a denied handshake gives its slot back; a quiet one without a connection makes room only when the table is full", () => {
    // The Endpoint's DENY (type 5) ends the association, as a connection's end does.
    const s = server({ maxAssociations: 2 });
    s.open(CLIENT, copy(client(token({ clientId: 1n })).seal(inner(1, 256))), 0);
    const deny = inner(0);
    deny[0] = 5;
    expect(s.seal(deny, CLIENT)).toBeDefined();
    s.sweep(ENDED_GRACE_MS);
    expect(s.size).toBe(0);
    // A slow handshake keeps its association (the client's resends may be lost for a while)...
    const t = server({ maxAssociations: 2, idleTimeoutMs: 30_000 });
    t.open(CLIENT, copy(client(token({ clientId: 1n })).seal(inner(1, 256))), 0);
    t.open("203.0.113.8:1", copy(client(token({ clientId: 2n })).seal(inner(1, 256))), 1000);
    t.connectionOpened(1, "203.0.113.8:1");
    t.sweep(20_000);
    expect(t.size).toBe(2);
    // ...unless the table is full: then the quietest one without a connection, quiet 5 s, makes room.
    const third = "203.0.113.9:1";
    expect(t.open(third, copy(client(token({ clientId: 3n })).seal(inner(1, 256))), PENDING_IDLE_MS - 1)).toBeUndefined();
    expect(t.counters.full).toBe(1);
    expect(t.open(third, copy(client(token({ clientId: 3n })).seal(inner(1, 256))), 20_001)).toBeDefined();
    expect(t.identityOf(CLIENT)).toBeUndefined();
    expect(t.identityOf("203.0.113.8:1")?.clientId).toBe(2n);
    expect(t.identityOf(third)?.clientId).toBe(3n);
  });

  it("the client calls a token expired only well past its expiry by its own clock; the server refuses one that lives too long", () => {
    const wall = Math.floor(Date.now() / 1000);
    // Expired 90 s ago by this machine's clock: the server's clock decides, so it still goes out.
    const recent = token({ expiresInSeconds: 10, nowSeconds: wall - 100 });
    expect(parseConnectToken(recent, PROTOCOL).expiresAt).toBe(wall - 90);
    // Expired longer ago than the slack: refused at once.
    const stale = token({ expiresInSeconds: 10, nowSeconds: wall - CLIENT_CLOCK_SLACK_SECONDS - 100 });
    expect(() => parseConnectToken(stale, PROTOCOL)).toThrow(ConnectTokenError);
    // A token minted two days ahead of the server's clock (a backend in milliseconds would be
    // further still) is refused: it would be remembered for ever.
    const s = server();
    expect(s.open(CLIENT, copy(client(token({ nowSeconds: NOW + 2 * 86_400 })).seal(inner(1, 256))), 0)).toBeUndefined();
    expect(s.counters.badToken).toBe(1);
  });

  it("keeps copies of the token's keys: a Node Buffer wiped after connect() changes nothing", () => {
    const t = Buffer.from(token());
    const c = new ClientSecurity(parseConnectToken(t, PROTOCOL, NOW + 1));
    const s = server();
    const hello = copy(c.seal(inner(1, 256)));
    t.fill(0);
    expect(s.open(CLIENT, hello, 0)).toEqual(inner(1, 256));
    expect(c.open(copy(s.seal(inner(2), CLIENT)))).toEqual(inner(2));
  });

  it("counts a plain ackwire datagram and unknown bytes", () => {
    const s = server();
    expect(s.open(CLIENT, Uint8Array.of(0, 1, 2, 3, 4, 5), 0)).toBeUndefined();
    expect(s.open(CLIENT, Uint8Array.of(0xff, 1, 2), 0)).toBeUndefined();
    expect(s.open(CLIENT, new Uint8Array(0), 0)).toBeUndefined();
    expect(s.counters.plain).toBe(1);
    expect(s.counters.malformed).toBe(2);
    const c = client();
    expect(c.open(Uint8Array.of(1, 2, 3))).toBeUndefined();
    expect(c.counters.malformed).toBe(1);
  });

  it("never throws on hostile bytes, counts each dropped datagram once, and keeps nothing for them", () => {
    const hello = copy(client().seal(inner(1, 256)));
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.uint8Array({ maxLength: 1500 }),
            // A real HELLO with a few bytes changed or cut.
            fc.tuple(fc.uniqueArray(fc.tuple(fc.nat(hello.length - 1), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 4, selector: ([i]) => i }), fc.nat(hello.length)).map(([edits, cut]) => {
              const b = hello.slice(0, Math.max(cut, 1));
              for (const [i, x] of edits) if (i < b.length) b[i]! ^= x;
              return b;
            }),
            fc.uint8Array({ minLength: 13, maxLength: 200 }).map((b) => ((b[0] = SEALED), b)),
          ),
          { maxLength: 30 },
        ),
        (datagrams) => {
          const s = server();
          let opened = 0;
          for (const d of datagrams) if (s.open(CLIENT, d, 0) !== undefined) opened++;
          const c = s.counters;
          const drops = securityDrops(c);
          expect(drops + opened).toBe(datagrams.length);
          // Only an unchanged HELLO could open one, and every edit changes at least one byte it keeps
          // (or cuts it short).
          expect(opened).toBe(0);
          expect(s.size).toBe(0);
        },
      ),
      { seed: 9, numRuns: 300 },
    );
  });
});
