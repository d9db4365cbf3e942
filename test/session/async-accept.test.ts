/**
 * An async accept hook on the simulator: the handshake waits without a connection, the hook
 * runs once per handshake however often the client resends its RESPONSE, and past
 * acceptTimeoutMs the client is denied "server-full", including the resends that crossed the
 * DENY (they are denied again, never asked again).
 */
import { describe, expect, it } from "vitest";
import { makePair } from "./helpers.js";

describe("async accept hook (session)", () => {
  for (const latencyMs of [1, 40, 150]) {
    it(`a decision that never comes: one hook call, denied server-full (${latencyMs} ms each way)`, () => {
      let calls = 0;
      const never = new Promise<boolean>(() => {});
      const pair = makePair(11 + latencyMs, {
        server: { acceptTimeoutMs: 250, accept: () => (calls++, never) },
        pair: { link: { latencyMs } },
      });
      const c = pair.client.connect(pair.now, pair.serverAddress);
      pair.network.flush();
      let denied: unknown;
      for (let step = 0; step < 400 && denied === undefined; step++) {
        pair.drive({ until: pair.now + 10, maxSteps: 100_000 });
        for (const ev of pair.clientEvents()) if (ev.type === "disconnect" && ev.connection === c) denied = ev;
      }
      expect(denied).toMatchObject({ reason: "denied", deny: "server-full" });
      // Resends that were in flight as the DENY left: denied again, the hook not run again.
      pair.drive({ until: pair.now + 1500, maxSteps: 100_000 });
      expect(calls).toBe(1);
      expect(pair.server.counters).toMatchObject({ acceptsDeferred: 1, acceptTimeouts: 1 });
      expect(pair.server.connections()).toEqual([]);
    });
  }
});
