/**
 * The server half of the secure layer under random sequences of what clients, an attacker and
 * the Endpoint do (fast-check, fixed seed). A small model of the Endpoint follows each honest
 * client's connection: where it was opened, and where the Endpoint moved it (only to where the
 * client really is, as its path check ensures). The property: wherever the Endpoint has a
 * client's connection, what it sends there is sealed for that client, and only that client
 * can open it. The attacker holds a token of its own, sends HELLOs and SEALED datagrams from any
 * address, and replays any datagram a client sent, from any address, early or late.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ClientSecurity } from "../../src/secure/client-security.js";
import { followConnections, ServerSecurity } from "../../src/secure/server-security.js";
import { createConnectToken, parseConnectToken } from "../../src/secure/token.js";

const PROTOCOL = 0x5ec0de02;
const NOW = 1_800_000_000;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i * 3 + 5);
const ADDRESSES = ["203.0.113.1:1000", "203.0.113.1:1001", "203.0.113.2:1000", "203.0.113.3:1000", "203.0.113.4:1000"];
const CLIENTS = 3;
const ATTACKER_ID = 99n;

const tokenFor = (clientId: bigint) =>
  parseConnectToken(createConnectToken({ serverKey: KEY, protocolId: PROTOCOL, clientId, serverAddresses: ["198.51.100.1:7777"], nowSeconds: NOW }), PROTOCOL, NOW + 1);

const inner = (k: number): Uint8Array => Uint8Array.from({ length: 24 }, (_, i) => (k * 13 + i) & 0x7f);

type Step =
  | { kind: "send"; client: number; at: number }
  | { kind: "older"; client: number; back: number }
  | { kind: "endpointFollows"; client: number }
  | { kind: "endpointFollowsEarlier"; client: number; back: number }
  | { kind: "attackerHello"; at: number }
  | { kind: "attackerSealed"; at: number }
  | { kind: "replay"; client: number; back: number; at: number }
  | { kind: "hold"; client: number; at: number }
  | { kind: "release"; client: number }
  | { kind: "wait"; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant("send" as const), client: fc.nat(CLIENTS - 1), at: fc.nat(ADDRESSES.length - 1) }),
  fc.record({ kind: fc.constant("older" as const), client: fc.nat(CLIENTS - 1), back: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ kind: fc.constant("endpointFollows" as const), client: fc.nat(CLIENTS - 1) }),
  // The Endpoint checked a path the client had then and has left since (it runs a batch behind).
  fc.record({ kind: fc.constant("endpointFollowsEarlier" as const), client: fc.nat(CLIENTS - 1), back: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constant("attackerHello" as const), at: fc.nat(ADDRESSES.length - 1) }),
  fc.record({ kind: fc.constant("attackerSealed" as const), at: fc.nat(ADDRESSES.length - 1) }),
  fc.record({ kind: fc.constant("replay" as const), client: fc.nat(CLIENTS - 1), back: fc.nat(3), at: fc.nat(ADDRESSES.length - 1) }),
  // A datagram the client sent but the network holds back (the attacker may race a copy of it).
  fc.record({ kind: fc.constant("hold" as const), client: fc.nat(CLIENTS - 1), at: fc.nat(ADDRESSES.length - 1) }),
  fc.record({ kind: fc.constant("release" as const), client: fc.nat(CLIENTS - 1) }),
  fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 1, max: 3000 }) }),
);

interface Honest {
  security: ClientSecurity;
  /** Where the client really is. */
  at: string;
  /** The Endpoint's connection: its address (the model's), or undefined before it opened. */
  connectionAt: string | undefined;
  connection: number;
  /** Sealed datagrams in send order, with where they left from. */
  sent: { bytes: Uint8Array; from: string }[];
  held: { bytes: Uint8Array; from: string }[];
}

describe("the server's address model under clients, an attacker and the Endpoint", () => {
  it("what the Endpoint sends to a client's connection is always sealed for that client", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), (steps) => {
        let nowMs = 0;
        let nextId = 1;
        const server = new ServerSecurity({
          serverKey: KEY,
          protocolId: PROTOCOL,
          addresses: [],
          maxAssociations: 16,
          idleTimeoutMs: 60_000,
          unixSeconds: () => NOW + 1,
          randomU32: () => nextId++,
        });
        // Each honest client starts at its own address and opens its connection there.
        const clients: Honest[] = [];
        for (let i = 0; i < CLIENTS; i++) {
          const security = new ClientSecurity(tokenFor(BigInt(i + 1)));
          const at = ADDRESSES[i]!;
          const hello = security.seal(inner(i))!.slice();
          expect(server.open(at, hello, nowMs)).toBeDefined();
          followConnections(server, { type: "connect", connection: 100 + i, address: at }, nowMs);
          security.open(server.seal(inner(50), at)!.slice());
          clients.push({ security, at, connectionAt: at, connection: 100 + i, sent: [], held: [] });
        }
        const attacker = new ClientSecurity(tokenFor(ATTACKER_ID));
        // An honest client moves only to an address no other honest client is at or has its
        // connection at (one socket, one address).
        const moveTo = (c: Honest, index: number): void => {
          const to = ADDRESSES[index]!;
          if (clients.every((o) => o === c || (o.at !== to && o.connectionAt !== to))) c.at = to;
        };
        let attackerHelloSent = false;
        let k = 0;

        for (const s of steps) {
          k++;
          switch (s.kind) {
            case "send": {
              const c = clients[s.client]!;
              moveTo(c, s.at);
              const bytes = c.security.seal(inner(k))!.slice();
              c.sent.push({ bytes, from: c.at });
              server.open(c.at, bytes.slice(), nowMs);
              break;
            }
            case "hold": {
              const c = clients[s.client]!;
              moveTo(c, s.at);
              const bytes = c.security.seal(inner(k))!.slice();
              c.sent.push({ bytes, from: c.at });
              c.held.push({ bytes, from: c.at });
              break;
            }
            case "release": {
              const c = clients[s.client]!;
              const d = c.held.shift();
              if (d !== undefined) server.open(d.from, d.bytes.slice(), nowMs);
              break;
            }
            case "older": {
              const c = clients[s.client]!;
              const d = c.sent[c.sent.length - 1 - s.back];
              if (d !== undefined) server.open(d.from, d.bytes.slice(), nowMs);
              break;
            }
            case "endpointFollows": {
              // The Endpoint's path check succeeds only where the client really is.
              const c = clients[s.client]!;
              if (c.connectionAt !== undefined && c.connectionAt !== c.at) {
                followConnections(server, { type: "migrate", connection: c.connection, from: c.connectionAt, to: c.at }, nowMs);
                c.connectionAt = c.at;
              }
              break;
            }
            case "endpointFollowsEarlier": {
              const c = clients[s.client]!;
              const d = c.sent[c.sent.length - 1 - s.back];
              const free = d !== undefined && clients.every((o) => o === c || (o.at !== d.from && o.connectionAt !== d.from));
              if (d !== undefined && free && c.connectionAt !== undefined && c.connectionAt !== d.from) {
                followConnections(server, { type: "migrate", connection: c.connection, from: c.connectionAt, to: d.from }, nowMs);
                c.connectionAt = d.from;
              }
              break;
            }
            case "attackerHello": {
              if (attackerHelloSent) break;
              attackerHelloSent = true;
              server.open(ADDRESSES[s.at]!, attacker.seal(inner(k))!.slice(), nowMs);
              break;
            }
            case "attackerSealed":
              server.open(ADDRESSES[s.at]!, attacker.seal(inner(k))!.slice(), nowMs);
              break;
            case "replay": {
              const c = clients[s.client]!;
              const d = c.sent[c.sent.length - 1 - s.back];
              if (d !== undefined) server.open(ADDRESSES[s.at]!, d.bytes.slice(), nowMs);
              break;
            }
            case "wait":
              nowMs += s.ms;
              server.sweep(nowMs);
              break;
          }
          // The property, for every client whose connection the Endpoint has.
          for (const [i, c] of clients.entries()) {
            if (c.connectionAt === undefined) continue;
            expect(server.identityOf(c.connectionAt)?.clientId, `client ${i + 1} at ${c.connectionAt} after step ${k} (${s.kind})`).toBe(BigInt(i + 1));
            const sealed = server.seal(inner(1000 + k), c.connectionAt);
            expect(sealed).toBeDefined();
            expect(attacker.open(sealed!.slice())).toBeUndefined();
            expect(c.security.open(sealed!.slice())).toEqual(inner(1000 + k));
          }
        }
      }),
      { seed: 12, numRuns: 400 },
    );
  });
});
