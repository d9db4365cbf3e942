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
  it("the same seed and secret give the same salts; another secret gives others", () => {
    const secret = new Uint8Array(16).fill(3);
    expect(firstSalt({ seed: 5, secret })).toBe(firstSalt({ seed: 5, secret }));
    expect(firstSalt({ seed: 5 })).toBe(firstSalt({ seed: 5 }));
    expect(firstSalt({ seed: 5, secret })).not.toBe(firstSalt({ seed: 5, secret: new Uint8Array(16).fill(4) }));
    expect(firstSalt({ seed: 5, secret })).not.toBe(firstSalt({ seed: 5 }));
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
