/**
 * The random-scenario harness (random-scenarios.test.ts): two Endpoints joined by two seeded
 * Links, the client behind a NAT address the scenario can move (a rebinding), on a virtual
 * clock that jumps to the next delivery or deadline. It records when an endpoint's deadline
 * stays at `now` (a spin: a timer due that nothing acts on) instead of hanging on it.
 */
import { Endpoint } from "../../src/session/endpoint.js";
import { Link, type LinkConfig } from "../../src/sim/link.js";
import type { ChannelConfig, EndpointConfig, EndpointEvent } from "../../src/session/types.js";

export const PROTOCOL_ID = 0x5e551011;
export const SERVER = "10.0.0.1:7777";

export type Side = "client" | "server";

export interface SentMsg {
  id: number; // global index (in the payload), -1 for empty
  side: Side; // sender
  epoch: number;
  channel: number;
  key?: number;
  len: number;
  receipt: number;
  delayMs: number;
  rank: number[]; // [enterTime, phase, order]
  beforeClose: boolean; // sent before a linger close on its side
  delivered: number; // count
}

/** Self-checking payload: [u32 id][u32 len][u8 side][u8 channel][u16 epoch] + pattern. */
export function makePayload(id: number, len: number, side: Side, channel: number, epoch: number): Uint8Array {
  const b = new Uint8Array(len);
  if (len === 0) return b;
  const v = new DataView(b.buffer);
  v.setUint32(0, id, true);
  v.setUint32(4, len, true);
  b[8] = side === "client" ? 1 : 2;
  b[9] = channel;
  v.setUint16(10, epoch, true);
  for (let i = 12; i < len; i++) b[i] = (i * 31 + id * 7) & 0xff;
  return b;
}

export function parsePayload(b: Uint8Array): { id: number; side: Side; channel: number; epoch: number } | "empty" | "corrupt" {
  if (b.length === 0) return "empty";
  if (b.length < 12) return "corrupt";
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const id = v.getUint32(0, true);
  if (v.getUint32(4, true) !== b.length) return "corrupt";
  for (let i = 12; i < b.length; i++) if (b[i] !== ((i * 31 + id * 7) & 0xff)) return "corrupt";
  return { id, side: b[8] === 1 ? "client" : "server", channel: b[9], epoch: v.getUint16(10, true) };
}

export class Harness {
  now = 0;
  pub = "198.51.100.7:40000";
  readonly server: Endpoint;
  readonly client: Endpoint;
  readonly toServer: Link;
  readonly toClient: Link;
  readonly events: { side: Side; at: number; ev: EndpointEvent }[] = [];
  unmapped = 0;
  steps = 0;
  constructor(
    readonly seed: number,
    opts: { engine: "ts" | "wasm"; channels: ChannelConfig[]; common?: Partial<EndpointConfig>; toServer: LinkConfig; toClient: LinkConfig },
  ) {
    const base = { protocolId: PROTOCOL_ID, engine: opts.engine, channels: opts.channels, ...opts.common };
    this.server = new Endpoint({ ...base, server: true, seed: seed * 2 + 1 });
    this.client = new Endpoint({ ...base, seed: seed * 2 + 2 });
    this.toServer = new Link({ ...opts.toServer, seed: `${seed}:up` });
    this.toClient = new Link({ ...opts.toClient, seed: `${seed}:down` });
  }

  onEvent: (side: Side, ev: EndpointEvent) => void = () => {};

  flush(): void {
    for (let n = 0; n < 100_000; n++) {
      let any = false;
      for (let ev = this.client.pollEvent(); ev; ev = this.client.pollEvent()) {
        any = true;
        this.onEvent("client", ev);
      }
      for (let ev = this.server.pollEvent(); ev; ev = this.server.pollEvent()) {
        any = true;
        this.onEvent("server", ev);
      }
      for (let tx = this.client.pollTransmit(this.now); tx; tx = this.client.pollTransmit(this.now)) {
        any = true;
        if (tx.to === SERVER) this.toServer.send(this.now, tx.bytes);
      }
      for (let tx = this.server.pollTransmit(this.now); tx; tx = this.server.pollTransmit(this.now)) {
        any = true;
        if (tx.to === this.pub) this.toClient.send(this.now, tx.bytes);
        else this.unmapped++;
      }
      if (!any) return;
    }
    throw new Error("flush never ran dry");
  }

  nextEvent(): number {
    return Math.min(
      this.toServer.nextDelivery() ?? Infinity,
      this.toClient.nextDelivery() ?? Infinity,
      this.server.pollTimeout() ?? Infinity,
      this.client.pollTimeout() ?? Infinity,
    );
  }

  /** Steps in a row at the same `now`, and how often that passed 1000 (a spin). */
  private sameNow = 0;
  spins = 0;

  /** Run until `until` (inclusive of events at it), at most `maxSteps` steps. */
  runUntil(until: number, maxSteps = 400_000): void {
    const start = this.steps;
    for (;;) {
      this.flush();
      let next = this.nextEvent();
      if (next > until) {
        this.now = Math.max(this.now, until);
        this.flush();
        return;
      }
      if (++this.steps - start > maxSteps) throw new Error(`seed ${this.seed}: step bound exceeded at ${this.now}`);
      if (next <= this.now) {
        if (++this.sameNow > 1000) {
          this.spins++;
          this.sameNow = 0;
          next = this.now + 0.001; // nudge past the stuck instant (recorded as a problem)
        }
      } else this.sameNow = 0;
      this.now = Math.max(this.now, next);
      for (let b = this.toServer.pollDelivery(this.now); b; b = this.toServer.pollDelivery(this.now)) this.server.handleDatagram(this.now, this.pub, b);
      for (let b = this.toClient.pollDelivery(this.now); b; b = this.toClient.pollDelivery(this.now)) this.client.handleDatagram(this.now, SERVER, b);
      if ((this.server.pollTimeout() ?? Infinity) <= this.now) this.server.handleTimeout(this.now);
      if ((this.client.pollTimeout() ?? Infinity) <= this.now) this.client.handleTimeout(this.now);
    }
  }
}
