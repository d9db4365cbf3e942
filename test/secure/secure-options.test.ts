// makeRoomForSeal (src/api/secure-options.ts): a secure connection's mtu and maxMtu are sizes on
// the wire, checked as a plain connection's are, then shrunk by the secure layer's overhead.
// maxMtu used to be taken unchecked: 1520 built probes the secure layer then dropped (over its
// 1500-byte datagram), 1000 silently meant "no discovery" (found by a review).
import { describe, expect, it } from "vitest";
import { makeRoomForSeal } from "../../src/api/secure-options.js";
import type { EndpointConfig } from "../../src/session/types.js";
import { SecureConfigError } from "../../src/secure/errors.js";
import { SECURE_OVERHEAD } from "../../src/secure/wire.js";

const config = (over: Partial<EndpointConfig>): EndpointConfig => ({ protocolId: 1, ...over });

describe("a secure connection's datagram sizes", () => {
  it("shrinks mtu and maxMtu by the overhead, and refuses a maxMtu a plain connection refuses", () => {
    const c = config({});
    makeRoomForSeal(c, "connect()");
    expect([c.mtu, c.maxMtu]).toEqual([1200 - SECURE_OVERHEAD, 1452 - SECURE_OVERHEAD]);
    const off = config({ maxMtu: 1200 });
    makeRoomForSeal(off, "connect()");
    expect(off.maxMtu).toBe(off.mtu);
    for (const maxMtu of [1000, 1520, 1300.5]) {
      expect(() => makeRoomForSeal(config({ maxMtu }), "connect()"), String(maxMtu)).toThrow(SecureConfigError);
    }
  });
});
