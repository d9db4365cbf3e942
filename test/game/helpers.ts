/** Shared helpers for the game-layer tests: endpoints on the simulator, microtask flushing. */
import { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointConfig, EndpointEvent } from "../../src/session/types.js";
import { Pair, type PairOptions } from "../../src/sim/network.js";

export const PROTOCOL_ID = 0x6a4d4501;

export function endpoint(seed: number, config: Partial<EndpointConfig> = {}): Endpoint {
  return new Endpoint({ protocolId: PROTOCOL_ID, seed, engine: "ts", engineLimits: { batchDatagrams: 64, maxRecords: 4096, sendDatagrams: 64 }, ...config });
}

export function endpointPair(seed: number, pair: PairOptions<EndpointEvent> = {}): Pair<Endpoint, Endpoint, EndpointEvent> {
  return new Pair<Endpoint, Endpoint, EndpointEvent>(endpoint(seed * 2 + 1, { server: true }), endpoint(seed * 2 + 2), { seed, ...pair });
}

/** Connects the pair's client; returns [client connection id, server connection id]. */
export function connectPair(pair: Pair<Endpoint, Endpoint, EndpointEvent>): [number, number] {
  const c = pair.client.connect(pair.now, pair.serverAddress);
  let s = -1;
  let up = false;
  for (let i = 0; i < 2000 && (s < 0 || !up); i++) {
    pair.drive({ maxTimeMs: 10, maxSteps: 10_000 });
    for (const ev of pair.network.takeEvents(pair.serverAddress)) if (ev.type === "connect") s = ev.connection;
    for (const ev of pair.network.takeEvents(pair.clientAddress)) if (ev.type === "connect" && ev.connection === c) up = true;
  }
  if (s < 0 || !up) throw new Error("handshake did not complete");
  return [c, s];
}

/** Lets queued promise callbacks run (bounded). */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}
