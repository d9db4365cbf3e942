/** EndpointConfig.congestionOptions reach each connection's controller, with the endpoint's mtu. */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import { connectPair, makePair, PROTOCOL_ID } from "./helpers.js";

describe("controller configuration", () => {
  it("congestionOptions set the controller's thresholds (fixed rate)", () => {
    const seed = 21;
    const pair = makePair(seed, { client: { congestion: "fixed", congestionOptions: { fixed: { rateBps: 123_456 } } } });
    const [c] = connectPair(pair);
    expect(pair.client.stats(c).bandwidthEstimateBps, `seed ${seed}`).toBeCloseTo(123_456, 0);
  });

  it("each connection's default controller gets its own seed and the endpoint's mtu", () => {
    const client = new Endpoint({ protocolId: PROTOCOL_ID, mtu: 1000, seed: 22, engine: "ts" });
    const a = client.connect(0, "10.0.0.1:1");
    const b = client.connect(0, "10.0.0.2:1");
    // White-box: the controllers' own fields (mtu is public; the seeded RNG state is not).
    const byId = (client as unknown as { byId: Map<number, { cc: { mtu: number; rngState: number } }> }).byId;
    const [ca, cb] = [byId.get(a)!.cc, byId.get(b)!.cc];
    expect(ca.mtu).toBe(1000);
    expect(cb.mtu).toBe(1000);
    expect(ca.rngState, "seed 22").not.toBe(cb.rngState);
  });
});
