/**
 * The endpoint's secret (EndpointConfig.secret): the key of everything an attacker must not
 * predict. Adapters pass crypto-random bytes; without it the key comes from the seed, so tests
 * stay repeatable.
 */
import { describe, expect, it } from "vitest";
import { endpointConfig } from "../../src/api/options.js";
import { Endpoint } from "../../src/session/endpoint.js";
import { PROTOCOL_ID, transmitsOf } from "./helpers.js";

/** The client's salt in its first CONNECT_REQUEST (PROTOCOL §4: offset 7). */
function firstSalt(config: { seed: number; secret?: Uint8Array }): number {
  const ep = new Endpoint({ protocolId: PROTOCOL_ID, ...config });
  ep.connect(0, "192.0.2.1:7777");
  const [request] = [...transmitsOf(ep, 0)].map((tx) => tx.bytes.slice());
  return new DataView(request.buffer).getUint32(7, true);
}

describe("endpoint secret", () => {
  it("the same seed and secret give the same salts; a secret differing in any of its four words gives others", () => {
    const secret = new Uint8Array(16).fill(3);
    expect(firstSalt({ seed: 5, secret })).toBe(firstSalt({ seed: 5, secret }));
    expect(firstSalt({ seed: 5 })).toBe(firstSalt({ seed: 5 }));
    for (const byte of [0, 4, 8, 12, 15]) {
      const other = secret.slice();
      other[byte] ^= 1;
      expect(firstSalt({ seed: 5, secret }), `byte ${byte}`).not.toBe(firstSalt({ seed: 5, secret: other }));
    }
    expect(firstSalt({ seed: 5, secret })).not.toBe(firstSalt({ seed: 5 }));
  });

  it("with neither a secret nor a seed, every Endpoint draws its own keys (never a shared default)", () => {
    const salts = new Set<number>();
    for (let i = 0; i < 8; i++) {
      const ep = new Endpoint({ protocolId: PROTOCOL_ID });
      ep.connect(0, "192.0.2.1:7777");
      const [request] = [...transmitsOf(ep, 0)].map((tx) => tx.bytes.slice());
      salts.add(new DataView(request.buffer).getUint32(7, true));
    }
    expect(salts.size).toBe(8);
  });

  it("the server's cookies follow its secret, not its seed", () => {
    const cookieFor = (secret: Uint8Array): string => {
      const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: 5, secret });
      const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: 6, secret: new Uint8Array(16) });
      client.connect(0, "192.0.2.1:7777");
      for (const tx of transmitsOf(client, 0)) server.handleDatagram(0, "198.51.100.1:5000", tx.bytes.slice());
      const [challenge] = [...transmitsOf(server, 0)].map((tx) => tx.bytes.slice());
      expect(challenge[0]).toBe(2); // CHALLENGE: type, salt u32, cookie 16 bytes
      return [...challenge.subarray(5, 21)].join(",");
    };
    const secret = new Uint8Array(16).fill(9);
    const other = secret.slice();
    other[13] ^= 0x80;
    expect(cookieFor(secret)).toBe(cookieFor(secret));
    expect(cookieFor(secret)).not.toBe(cookieFor(other));
  });

  it("a secret shorter than 16 bytes is a typed config error", () => {
    expect(() => new Endpoint({ protocolId: PROTOCOL_ID, secret: new Uint8Array(8) })).toThrow(
      expect.objectContaining({ code: "ERR_SESSION_CONFIG", message: expect.stringMatching(/at least 16/) }),
    );
  });

  it("listen() and connect() give every endpoint 16 fresh crypto-random bytes, even with a fixed seed", () => {
    const a = endpointConfig({ protocolId: 1, seed: 9 }, true).secret as Uint8Array;
    const b = endpointConfig({ protocolId: 1, seed: 9 }, false).secret as Uint8Array;
    expect(a.length).toBe(16);
    expect(b.length).toBe(16);
    expect([...a]).not.toEqual([...b]);
  });
});
