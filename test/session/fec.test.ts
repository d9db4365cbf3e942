/**
 * Parity end to end (src/fec, PROTOCOL §3 PARITY) through two real Endpoints, datagrams carried
 * by hand so that exactly the chosen one is lost: it is rebuilt at the receiver from its group's
 * parity, delivered in order with no round trip, acknowledged, and never resent. Then a 30 Hz
 * stream over the simulator's random loss: what parity repairs is not resent.
 */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import type { ChannelConfig, EndpointEvent } from "../../src/session/types.js";
import { PROTOCOL_ID, checkPayload, connectPair, makePair, payload } from "./helpers.js";

const SERVER = "10.0.0.1:7777";
const CLIENT = "10.0.0.2:50000";
const ONE_WAY_MS = 20;

interface InFlight {
  at: number;
  to: string;
  bytes: Uint8Array;
}

/** Two endpoints and a hand-carried network: `drop` decides per datagram, `now` moves by hand. */
class Wire {
  now = 1000;
  readonly flight: InFlight[] = [];
  drop: (bytes: Uint8Array, to: string) => boolean = () => false;
  readonly events = new Map<string, EndpointEvent[]>([
    [SERVER, []],
    [CLIENT, []],
  ]);
  constructor(
    readonly server: Endpoint,
    readonly client: Endpoint,
  ) {}

  /** Collect what each endpoint sends now; returns those sent to `toward`. */
  flush(toward?: string): Uint8Array[] {
    const sent: Uint8Array[] = [];
    for (const [ep, to] of [
      [this.server, CLIENT],
      [this.client, SERVER],
    ] as const) {
      for (let i = 0; i < 1000; i++) {
        const t = ep.pollTransmit(this.now);
        if (t === undefined) break;
        const bytes = t.bytes.slice();
        if (to === toward) sent.push(bytes);
        if (!this.drop(bytes, to)) this.flight.push({ at: this.now + ONE_WAY_MS, to, bytes });
      }
    }
    return sent;
  }

  /** Run to `until` in 1 ms steps: deliveries, timers, sends. */
  run(until: number): void {
    for (; this.now <= until; this.now += 1) {
      for (let i = 0; i < this.flight.length; ) {
        const f = this.flight[i];
        if (f.at > this.now) {
          i++;
          continue;
        }
        this.flight.splice(i, 1);
        (f.to === SERVER ? this.server : this.client).handleDatagram(this.now, f.to === SERVER ? CLIENT : SERVER, f.bytes);
      }
      for (const [address, ep] of [
        [SERVER, this.server],
        [CLIENT, this.client],
      ] as const) {
        ep.handleTimeout(this.now);
        for (let ev = ep.pollEvent(); ev !== undefined; ev = ep.pollEvent()) this.events.get(address)!.push(ev);
      }
      this.flush();
    }
    this.now = until + 1;
  }
}

/** Index of `needle` in `hay`, or -1. */
function find(hay: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

function connected(channels: ChannelConfig[], engine: "ts" | "wasm"): { wire: Wire; c: number; s: number } {
  const common = { protocolId: PROTOCOL_ID, engine, channels, maxMtu: 1200 } as const; // no MTU probes
  const server = new Endpoint({ ...common, server: true, seed: 11 });
  const client = new Endpoint({ ...common, seed: 12 });
  const wire = new Wire(server, client);
  const c = client.connect(wire.now, SERVER);
  wire.flush();
  wire.run(wire.now + 500);
  const s = wire.events.get(SERVER)!.find((e) => e.type === "connect")?.connection;
  expect(s, "server connect event").toBeDefined();
  expect(wire.events.get(CLIENT)!.some((e) => e.type === "connect")).toBe(true);
  wire.run(wire.now + 1000); // settle: acks, clock requests
  return { wire, c, s: s! };
}

describe("parity rebuilds a lost datagram with no round trip", () => {
  for (const engine of ["ts", "wasm"] as const) {
    it(`the middle datagram of a group of 3 is lost: rebuilt, delivered in order, never resent (${engine})`, () => {
      const { wire, c, s } = connected([{ mode: "reliable-ordered", fec: 3 }], engine);
      const before = wire.client.stats(c);
      const messages = [0, 1, 2].map((i) => payload(i + 40, 120));
      const marker = messages[1].subarray(8, 24);
      let lostAt = -1;
      wire.drop = (bytes, to) => {
        if (to !== SERVER || lostAt >= 0 || find(bytes, marker) < 0) return false;
        lostAt = wire.now;
        return true;
      };
      const sent: Uint8Array[] = [];
      for (const m of messages) {
        wire.client.send(c, m, { channel: 0 });
        sent.push(...wire.flush(SERVER)); // each message in a datagram of its own
      }
      expect(lostAt).toBeGreaterThan(0);
      // After the third data datagram, the parity: a DATA packet whose one frame is PARITY.
      const isParity = (d: Uint8Array): boolean => (d[0] & 0x0f) === 0 && d[9] === 255 && d[9 + 6] === 7;
      expect(sent.filter(isParity).length).toBe(1);
      expect(isParity(sent[sent.length - 1])).toBe(true);
      // The group's last datagram and its parity arrive one way after the lost one would have:
      // so does the rebuilt message, well before the sender could learn of the loss (one RTT
      // after it), and its acknowledgement comes with the others' (no loss timer fires).
      const received: { index: number; at: number }[] = [];
      for (let t = wire.now, end = wire.now + 300; t < end; t++) {
        wire.run(t);
        for (const ev of wire.events.get(SERVER)!.splice(0)) if (ev.type === "message") received.push({ index: checkPayload(ev.data), at: wire.now });
      }
      expect(received.map((r) => r.index)).toEqual([40, 41, 42]);
      expect(received[1].at).toBeLessThanOrEqual(lostAt + ONE_WAY_MS + 2);
      const server = wire.server.stats(s).fec!;
      expect(server.rebuilt).toBe(1);
      expect(server.parityInvalid).toBe(0);
      const client = wire.client.stats(c);
      expect(client.fec!.paritySent).toBe(1);
      expect(client.fec!.protectedSent).toBe(3);
      expect(client.resends - before.resends).toBe(0);
      expect(client.packets.dropped - before.packets.dropped).toBe(0); // the lost one was acknowledged
    });
  }

  it("two lost of one group: parity cannot help, the resend delivers (in order, once)", () => {
    const { wire, c, s } = connected([{ mode: "reliable-ordered", fec: 3 }], "ts");
    const messages = [0, 1, 2].map((i) => payload(i + 70, 120));
    const markers = [messages[0].subarray(8, 24), messages[2].subarray(8, 24)];
    wire.drop = (bytes, to) => to === SERVER && markers.some((m) => find(bytes, m) >= 0) && wire.client.stats(c).resends === 0;
    for (const m of messages) {
      wire.client.send(c, m, { channel: 0 });
      wire.flush();
      wire.now += 5;
    }
    wire.run(wire.now + 1500);
    const got = wire.events.get(SERVER)!.filter((e) => e.type === "message").map((e) => checkPayload((e as { data: Uint8Array }).data));
    expect(got).toEqual([70, 71, 72]);
    expect(wire.server.stats(s).fec!.unrecoverable).toBe(1);
    expect(wire.server.stats(s).fec!.rebuilt).toBe(0);
    expect(wire.client.stats(c).resends).toBeGreaterThanOrEqual(2);
  });

  it("no fec channel: no parity; a malformed PARITY message reaching a connection is a counted drop", () => {
    const { wire, c, s } = connected([{ mode: "reliable-ordered" }], "ts");
    wire.client.send(c, payload(1, 50), { channel: 0 });
    wire.run(wire.now + 200);
    expect(wire.client.stats(c).fec).toBeUndefined();
    expect(wire.server.stats(s).fec).toBeUndefined();
    // As the engine hands a system message over (a CRC-valid datagram of the peer's): type 7,
    // a mask without bit 0, then a short parity.
    const conn = (wire.server as unknown as { byId: Map<number, { onSystemMessage(now: number, b: Uint8Array, at: number, n: number): void }> }).byId.get(s)!;
    const invalid = wire.server.stats(s).invalid;
    conn.onSystemMessage(wire.now, Uint8Array.of(7, 1, 0, 2, 0, 0, 0, ...new Uint8Array(20)), 0, 27);
    conn.onSystemMessage(wire.now, Uint8Array.of(7, 1, 0, 1, 0), 0, 5);
    expect(wire.server.stats(s).invalid).toBe(invalid + 2);
    expect(wire.server.stats(s).fec!.parityInvalid).toBe(2);
    wire.client.send(c, payload(2, 50), { channel: 0 });
    wire.run(wire.now + 200);
    expect(wire.events.get(SERVER)!.filter((e) => e.type === "message").length).toBe(2);
  });
});

describe("parity on the simulator", () => {
  it("30 Hz reliable-ordered, 5% loss each way, fec: 1: nearly every loss rebuilt, far fewer resends than without", () => {
    const run = (fec: number | undefined) => {
      const channels: ChannelConfig[] = [{ mode: "reliable-ordered", ...(fec !== undefined ? { fec } : {}) }];
      const pair = makePair(303, { server: { channels }, client: { channels }, pair: { link: { latencyMs: 25, lossRate: 0.05 } } });
      const [c, s] = connectPair(pair);
      const start = pair.now;
      const got: number[] = [];
      for (let i = 0; i < 300; i++) {
        pair.drive({ until: start + (i * 1000) / 30, maxSteps: 100_000 });
        pair.client.send(c, payload(i, 200), { channel: 0 });
        pair.server.send(s, payload(i, 200), { channel: 0 });
        pair.network.flush();
        for (const ev of pair.serverEvents()) if (ev.type === "message") got.push(checkPayload(ev.data));
        pair.clientEvents();
      }
      pair.drive({ until: pair.now + 3000, maxSteps: 100_000 });
      for (const ev of pair.serverEvents()) if (ev.type === "message") got.push(checkPayload(ev.data));
      return { got, client: pair.client.stats(c), server: pair.server.stats(s), lost: pair.toServer.stats.lost };
    };
    const plain = run(undefined);
    const fec = run(1);
    const why = JSON.stringify({ plainResends: plain.client.resends, fecResends: fec.client.resends, fec: fec.server.fec, lost: fec.lost });
    for (const r of [plain, fec]) expect(r.got, why).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect(fec.server.fec!.rebuilt, why).toBeGreaterThan(0);
    // Half the datagrams lost are parities; a datagram and its parity are both lost 0.25 % of
    // the time: the data losses are rebuilt, and what parity rebuilt is not resent.
    expect(fec.server.fec!.rebuilt, why).toBeGreaterThanOrEqual(fec.lost / 4);
    expect(fec.client.resends, why).toBeLessThan(plain.client.resends / 3);
  });
});
