import { describe, expect, it } from "vitest";
import { connectPair, makePair } from "./helpers.js";

describe("handshake", () => {
  it("connects over a perfect link, both sides see connect with user data", () => {
    const seed = 11;
    const pair = makePair(seed, { server: { accept: (r) => ({ accept: true, userData: r.userData.slice().reverse() }) } });
    const c = pair.client.connect(0, pair.serverAddress, { userData: new Uint8Array([1, 2, 3]) });
    pair.drive({ maxTimeMs: 1000 });
    const s = pair.serverEvents().find((e) => e.type === "connect");
    const ce = pair.clientEvents().find((e) => e.type === "connect");
    expect(s, `seed ${seed}`).toBeDefined();
    expect(ce, `seed ${seed}`).toBeDefined();
    if (s?.type !== "connect" || ce?.type !== "connect") return;
    expect([...s.userData]).toEqual([1, 2, 3]);
    expect([...ce.userData]).toEqual([3, 2, 1]);
    expect(ce.connection).toBe(c);
  });

  it("connects under 30% loss", () => {
    const seed = 12;
    const pair = makePair(seed, { pair: { link: { lossRate: 0.3, latencyMs: 20 } } });
    expect(() => connectPair(pair), `seed ${seed}`).not.toThrow();
  });
});
