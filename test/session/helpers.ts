/** Test helpers: endpoints on the simulator's virtual network, self-checking payloads. */
import { Pair, type PairOptions } from "../../src/sim/network.js";
import { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointConfig, EndpointEvent } from "../../src/session/types.js";
import type { SansIoNode, Transmit } from "../../src/session/sans-io.js";

export const PROTOCOL_ID = 0x5e551011;

export function makePair(
  seed: number,
  options: { server?: Partial<EndpointConfig>; client?: Partial<EndpointConfig>; pair?: PairOptions<EndpointEvent> } = {},
): Pair<Endpoint, Endpoint, EndpointEvent> {
  const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: seed * 2 + 1, engine: "ts", ...options.server });
  const client = new Endpoint({ protocolId: PROTOCOL_ID, seed: seed * 2 + 2, engine: "ts", ...options.client });
  return new Pair<Endpoint, Endpoint, EndpointEvent>(server, client, { seed, ...options.pair });
}

/** Connect the pair's client; returns [clientConnection, serverConnection]. */
export function connectPair(pair: Pair<Endpoint, Endpoint, EndpointEvent>, userData?: Uint8Array, maxTimeMs = 10_000): [number, number] {
  const c = pair.client.connect(pair.now, pair.serverAddress, { userData });
  pair.network.flush();
  let serverConn = -1;
  let clientConnected = false;
  const deadline = pair.now + maxTimeMs;
  while (pair.now < deadline && (serverConn < 0 || !clientConnected)) {
    pair.drive({ maxTimeMs: 10, maxSteps: 10_000 });
    for (const ev of pair.network.events(pair.serverAddress)) if (ev.type === "connect") serverConn = ev.connection;
    for (const ev of pair.network.events(pair.clientAddress)) if (ev.type === "connect" && ev.connection === c) clientConnected = true;
  }
  if (serverConn < 0 || !clientConnected) throw new Error(`handshake did not complete in ${maxTimeMs} ms (seed printed by the test)`);
  pair.serverEvents();
  pair.clientEvents();
  return [c, serverConn];
}

/** Payload that checks itself: [u32 index][u32 length][bytes i*31+index mod 256...]. */
export function payload(index: number, length: number): Uint8Array {
  const n = Math.max(8, length);
  const b = new Uint8Array(n);
  const v = new DataView(b.buffer);
  v.setUint32(0, index, true);
  v.setUint32(4, n, true);
  for (let i = 8; i < n; i++) b[i] = (i * 31 + index) & 0xff;
  return b;
}

/** Returns the payload's index, or -1 if it is corrupted. */
export function checkPayload(b: Uint8Array): number {
  if (b.length < 8) return -1;
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const index = v.getUint32(0, true);
  if (v.getUint32(4, true) !== b.length) return -1;
  for (let i = 8; i < b.length; i++) if (b[i] !== ((i * 31 + index) & 0xff)) return -1;
  return index;
}

/** Drains beyond this many items mean the endpoint never runs dry: the test fails instead of hanging. */
const MAX_DRAIN = 100_000;

/**
 * Every transmit `ep` has ready at `now`, in order, for a `for...of` loop (each one's bytes are
 * valid until the loop moves on, as with pollTransmit). Bounded: a synchronous drain loop is out
 * of reach of the test timeout, so an endpoint that never stops producing throws here.
 */
export function* transmitsOf(ep: Endpoint, now: number): Generator<Transmit> {
  for (let n = 0; ; n++) {
    const tx = ep.pollTransmit(now);
    if (tx === undefined) return;
    if (n >= MAX_DRAIN) throw new Error(`pollTransmit still had datagrams after ${MAX_DRAIN}: it never runs dry`);
    yield tx;
  }
}

/** Every pending event of `ep`, bounded like transmitsOf. */
export function* eventsOf(ep: Endpoint): Generator<EndpointEvent> {
  for (let n = 0; ; n++) {
    const ev = ep.pollEvent();
    if (ev === undefined) return;
    if (n >= MAX_DRAIN) throw new Error(`pollEvent still had events after ${MAX_DRAIN}: it never runs dry`);
    yield ev;
  }
}

/** Runs `items` dry; returns how many there were. */
export function drain(items: Iterable<unknown>): number {
  let n = 0;
  for (const _ of items) n++;
  return n;
}

// ---- two endpoints wired directly (no simulator): each datagram handed over as it is polled ----

/** The addresses the directly wired server and client see each other at. */
export const SERVER = "10.0.0.1:9000";
export const CLIENT = "10.0.0.2:5000";

/** Every datagram `from` has due at `now`, handed to `to` (or dropped); returns how many (at most 10,000). */
export function pump(from: Endpoint, fromAddress: string, to: Endpoint, now: number, drop = false): number {
  let n = 0;
  for (let t = from.pollTransmit(now); t !== undefined && n < 10_000; t = from.pollTransmit(now)) {
    n++;
    if (!drop) to.handleDatagram(now, fromAddress, t.bytes);
  }
  return n;
}

/** Every pending event of `ep`, in order. */
export function pollEvents(ep: Endpoint): EndpointEvent[] {
  return [...eventsOf(ep)];
}

/** One exchange at `now`: due timers on both ends, the client's datagrams to the server, the server's back. */
export function step(server: Endpoint, client: Endpoint, now: number, sink: { server: EndpointEvent[]; client: EndpointEvent[] }): void {
  for (const ep of [client, server]) {
    const due = ep.pollTimeout();
    if (due !== undefined && due <= now) ep.handleTimeout(now);
  }
  pump(client, CLIENT, server, now);
  sink.server.push(...pollEvents(server));
  pump(server, SERVER, client, now);
  sink.client.push(...pollEvents(client));
}

/** `steps` exchanges of 1 ms each from `start`; returns the time after them and the events. */
export function run(server: Endpoint, client: Endpoint, start: number, steps: number): { now: number; server: EndpointEvent[]; client: EndpointEvent[] } {
  const events = { server: [] as EndpointEvent[], client: [] as EndpointEvent[] };
  let now = start;
  for (let i = 0; i < steps; i++, now++) step(server, client, now, events);
  return { now, ...events };
}

/** A node that sends what it is told to (one queued datagram per pollTransmit) and counts what it receives: an attacker, in tests. */
export class Injector implements SansIoNode<never> {
  queue: Transmit[] = [];
  received = 0;
  handleDatagram(): void {
    this.received++;
  }
  handleTimeout(): void {}
  pollTimeout(): undefined {
    return undefined;
  }
  pollEvent(): undefined {
    return undefined;
  }
  pollTransmit(): Transmit | undefined {
    return this.queue.shift();
  }
}
