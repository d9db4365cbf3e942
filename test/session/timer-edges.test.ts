/**
 * Deadlines that fell due and were never acted on, so pollTimeout() stayed in the past and a
 * driver spun (found by a property-test hunt; each case fails on the code before its fix).
 */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import type { LinkConfig } from "../../src/sim/link.js";
import { Pair } from "../../src/sim/network.js";
import type { EndpointEvent } from "../../src/session/types.js";

describe("timer edges", () => {
  for (const engine of ["ts", "wasm"] as const) {
    it(`a keepalive due at a fractional time is sent (the deadline's sum and the writer's difference rounded apart) (${engine})`, () => {
      // 32514.546408231097 + 2500 = 35014.546408231094, but 35014.546408231094 - 32514.546408231097
      // = 2499.999999999997: the deadline was due and the writer found nothing to send.
      const server = new Endpoint({ protocolId: 1, server: true, seed: 3, engine });
      const client = new Endpoint({ protocolId: 1, seed: 4, engine, clockSyncMs: 600_000 });
      const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, { seed: 1, origin: 15222.740740734, link: { latencyMs: 20.3 } });
      client.connect(pair.now, pair.serverAddress);
      for (let t = 0; t < 20; t++) {
        const r = pair.drive({ maxTimeMs: 1000, maxSteps: 20_000 });
        expect(r.stop, `drive() made ${r.steps} steps without the clock moving, at ${pair.now} ms`).not.toBe("steps");
      }
      expect(client.connectionCount).toBe(1);
    });

    it(`a packet arriving after close() does not re-arm the idle deadline, which only a connected side acts on (${engine})`, () => {
      const server = new Endpoint({ protocolId: 1, server: true, seed: 3, engine });
      const client = new Endpoint({ protocolId: 1, seed: 4, engine, timeoutMs: 1000 }); // closeTimeoutMs: default 3 s
      const pair = new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, { seed: 1, link: { latencyMs: 50 } });
      const c = client.connect(pair.now, pair.serverAddress);
      pair.advance(300);
      const s = server.connections()[0]!;
      server.send(s, new Uint8Array(100), { channel: 0 }, pair.now); // in flight to the client
      pair.network.flush();
      pair.advance(10);
      client.close(c, "normal", new Uint8Array(0), pair.now);
      (pair.toServer.config as LinkConfig).lossRate = 1; // the DISCONNECT never arrives
      pair.advance(100); // the server's message arrives while disconnecting
      const r = pair.drive({ maxTimeMs: 5_000, maxSteps: 100_000 });
      expect(r.stop, `drive() spun: ${r.steps} steps, clock at ${pair.now}`).not.toBe("steps");
      expect(client.connectionCount).toBe(0);
    });
  }
});
