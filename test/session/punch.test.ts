/**
 * NAT_PUNCH (PROTOCOL §7, src/session/punch.ts), sans-IO: which punches are reported, that none
 * is ever answered, and that two endpoints behind filtering NATs (a model below: port-preserving
 * mapping, address-and-port-dependent filtering) connect after punching and not before.
 */
import { describe, expect, it } from "vitest";
import { DropReason } from "../../src/engine/abi.js";
import type { Endpoint } from "../../src/session/endpoint.js";
import { MAX_PUNCH_TOKENS, PUNCH_ACCEPT_MS, PUNCH_EVENTS_PER_TOKEN } from "../../src/session/punch.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { endpoint } from "../game/helpers.js";

const TOKEN = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);
const OTHER = new Uint8Array([8, 7, 6, 5, 4, 3, 2, 1]);

function events(e: Endpoint): EndpointEvent[] {
  const out: EndpointEvent[] = [];
  for (let ev = e.pollEvent(); ev !== undefined; ev = e.pollEvent()) out.push(ev);
  return out;
}

/** Sends what `from` has queued to `to`, as coming from `fromAddress`; returns the datagram sizes. */
function deliver(from: Endpoint, fromAddress: string, to: Endpoint, now: number): number[] {
  const sizes: number[] = [];
  for (let t = from.pollTransmit(now); t !== undefined; t = from.pollTransmit(now)) {
    sizes.push(t.bytes.length);
    to.handleDatagram(now, fromAddress, t.bytes.slice());
  }
  return sizes;
}

describe("NAT_PUNCH on one endpoint", () => {
  it("is 13 bytes, reported only for a token the receiver punches with, and never answered", () => {
    const a = endpoint(1, { server: true });
    const b = endpoint(2, { server: true });
    a.punch(0, "10.0.0.2:2000", TOKEN);
    // b is not punching with this token: dropped and counted, no event.
    expect(deliver(a, "10.0.0.1:1000", b, 0)).toEqual([13]);
    expect(events(b)).toEqual([]);
    expect(b.counters.punchesIgnored).toBe(1);
    expect(b.pollTransmit(0)).toBeUndefined();

    b.punch(1, "10.0.0.1:1000", TOKEN);
    b.pollTransmit(1); // b's own punch: lost on the way
    a.punch(2, "10.0.0.2:2000", TOKEN);
    deliver(a, "10.0.0.1:1000", b, 2);
    const evs = events(b);
    expect(evs).toEqual([{ type: "punch", address: "10.0.0.1:1000", token: TOKEN }]);
    expect(b.counters.punchesReceived).toBe(1);
    // Never answered: the receiver sent nothing of its own.
    expect(b.pollTransmit(2)).toBeUndefined();
    expect(a.counters.punchesSent).toBe(2);

    // A punch with another token is still dropped.
    a.punch(3, "10.0.0.2:2000", OTHER);
    deliver(a, "10.0.0.1:1000", b, 3);
    expect(events(b)).toEqual([]);
    expect(b.counters.punchesIgnored).toBe(2);
  });

  it("with a token to send and another to accept, a party that saw our punches cannot answer as the peer", () => {
    const joiner = endpoint(10, { server: true });
    const host = endpoint(11, { server: true });
    const eavesdropper = endpoint(12, { server: true });
    // The joiner sends TOKEN and listens for OTHER (the host's); the host the other way round.
    joiner.punch(0, "10.0.0.9:7777", TOKEN, OTHER);
    const seen = joiner.pollTransmit(0)!;
    expect(Array.from(seen.bytes.subarray(1, 9))).toEqual(Array.from(TOKEN));
    // The eavesdropper (holding the host's local address on the joiner's network) echoes the
    // token it saw: ignored.
    eavesdropper.punch(1, "10.0.0.1:1000", TOKEN);
    deliver(eavesdropper, "10.0.0.9:7777", joiner, 1);
    expect(events(joiner)).toEqual([]);
    expect(joiner.counters.punchesIgnored).toBe(1);
    // The host's own punch carries OTHER: reported.
    host.punch(2, "10.0.0.1:1000", OTHER, TOKEN);
    deliver(host, "198.51.100.2:7777", joiner, 2);
    expect(events(joiner)).toEqual([{ type: "punch", address: "198.51.100.2:7777", token: OTHER }]);
    expect(() => joiner.punch(3, "10.0.0.9:7777", TOKEN, new Uint8Array(9))).toThrow(expect.objectContaining({ code: "ERR_INVALID_PUNCH_TOKEN" }));
  });

  it("stops reporting a token PUNCH_ACCEPT_MS after the receiver's last punch, and after PUNCH_EVENTS_PER_TOKEN events", () => {
    const a = endpoint(3, { server: true });
    const b = endpoint(4, { server: true });
    b.punch(0, "10.0.0.1:1000", TOKEN);
    b.pollTransmit(0);
    let reported = 0;
    for (let i = 0; i < PUNCH_EVENTS_PER_TOKEN + 5; i++) {
      a.punch(10, "10.0.0.2:2000", TOKEN);
      deliver(a, "10.0.0.1:1000", b, 10);
      reported += events(b).length;
    }
    expect(reported).toBe(PUNCH_EVENTS_PER_TOKEN);
    expect(b.counters.punchesIgnored).toBe(5);

    const c = endpoint(5, { server: true });
    c.punch(0, "10.0.0.1:1000", TOKEN);
    c.pollTransmit(0);
    a.punch(PUNCH_ACCEPT_MS, "10.0.0.3:3000", TOKEN);
    deliver(a, "10.0.0.1:1000", c, PUNCH_ACCEPT_MS);
    expect(events(c).length).toBe(1); // still within the window
    a.punch(PUNCH_ACCEPT_MS + 1, "10.0.0.3:3000", TOKEN);
    deliver(a, "10.0.0.1:1000", c, PUNCH_ACCEPT_MS + 1);
    expect(events(c)).toEqual([]);
    expect(c.counters.punchesIgnored).toBe(1);
  });

  it(`remembers at most ${MAX_PUNCH_TOKENS} tokens, forgetting the least recently punched`, () => {
    const a = endpoint(6, { server: true });
    const b = endpoint(7, { server: true });
    const token = (i: number) => new Uint8Array([i & 255, i >> 8, 0, 0, 0, 0, 0, 9]);
    for (let i = 0; i <= MAX_PUNCH_TOKENS; i++) b.punch(i, "10.0.0.1:1000", token(i));
    for (let t = b.pollTransmit(100); t !== undefined; t = b.pollTransmit(100));
    a.punch(100, "10.0.0.2:2000", token(0)); // the oldest: forgotten
    a.punch(100, "10.0.0.2:2000", token(MAX_PUNCH_TOKENS)); // the newest: kept
    deliver(a, "10.0.0.1:1000", b, 100);
    expect(events(b).map((e) => (e.type === "punch" ? e.token[0] : -1))).toEqual([MAX_PUNCH_TOKENS & 255]);
    expect(b.counters.punchesIgnored).toBe(1);
  });

  it("throws typed errors for a bad token or address; a punch of the wrong length is a BadLength drop", () => {
    const a = endpoint(8, { server: true });
    expect(() => a.punch(0, "10.0.0.2:2000", new Uint8Array(7))).toThrow(expect.objectContaining({ code: "ERR_INVALID_PUNCH_TOKEN" }));
    expect(() => a.punch(0, "10.0.0.2:2000", "12345678" as unknown as Uint8Array)).toThrow(expect.objectContaining({ code: "ERR_INVALID_PUNCH_TOKEN" }));
    expect(() => a.punch(0, "nowhere", TOKEN)).toThrow(expect.objectContaining({ code: "ERR_INVALID_ADDRESS" }));
    expect(a.counters.punchesSent).toBe(0);

    const b = endpoint(9, { server: true });
    b.punch(0, "10.0.0.1:1000", TOKEN);
    b.pollTransmit(0);
    // A punch body of 9 bytes, sealed with the right CRC (the engine checks the CRC first).
    const bytes = a.engine.bytes;
    const at = a.engine.layout.txArenaOffset;
    bytes.set([13, ...TOKEN, 0], at);
    const length = a.engine.sealControl(at, 10);
    expect(length).toBe(14);
    b.handleDatagram(1, "10.0.0.1:1000", bytes.slice(at, at + length));
    expect(events(b)).toEqual([]);
    expect(b.counters.drops[DropReason.BadLength]).toBe(1);
  });
});

/**
 * A NAT in the model: one public IP; an inside address keeps its port outside (port-preserving,
 * endpoint-independent mapping); an outside packet is let in only from an address the inside
 * host has sent to (address-and-port-dependent filtering), what a home router does.
 */
class NatModel {
  readonly allowed = new Set<string>();
  dropped = 0;
  constructor(
    readonly publicIp: string,
    readonly inside: string,
  ) {}

  get publicAddress(): string {
    return `${this.publicIp}:${this.inside.slice(this.inside.lastIndexOf(":") + 1)}`;
  }

  out(to: string): string {
    this.allowed.add(to);
    return this.publicAddress;
  }

  in(from: string): boolean {
    if (this.allowed.has(from)) return true;
    this.dropped++;
    return false;
  }
}

describe("two endpoints behind filtering NATs (model)", () => {
  function lab() {
    const host = endpoint(20, { server: true });
    const joiner = endpoint(21, { server: true });
    const natH = new NatModel("198.51.100.2", "10.1.0.2:7777");
    const natJ = new NatModel("203.0.113.2", "10.2.0.2:5555");
    const log = { host: [] as EndpointEvent[], joiner: [] as EndpointEvent[] };
    /** 10 ms steps of virtual time; every datagram crosses both NATs. */
    const run = (from: number, steps: number, until?: () => boolean) => {
      let now = from;
      for (let i = 0; i < steps && !(until?.() ?? false); i++, now += 10) {
        for (const [self, nat, peerNat, peer, events] of [
          [host, natH, natJ, joiner, log.host],
          [joiner, natJ, natH, host, log.joiner],
        ] as const) {
          self.handleTimeout(now);
          for (let t = self.pollTransmit(now); t !== undefined; t = self.pollTransmit(now)) {
            if (t.to !== peerNat.publicAddress) continue; // nothing else exists here
            const source = nat.out(t.to);
            if (peerNat.in(source)) peer.handleDatagram(now, source, t.bytes.slice());
          }
          for (let ev = self.pollEvent(); ev !== undefined; ev = self.pollEvent()) events.push(ev);
        }
      }
      return now;
    };
    return { host, joiner, natH, natJ, log, run };
  }

  it("a direct connect to the host's public address never gets through its NAT", () => {
    const { joiner, natH, log, run } = lab();
    joiner.connect(0, natH.publicAddress);
    run(0, 1200);
    expect(log.joiner.map((e) => e.type)).toEqual(["disconnect"]);
    expect(log.joiner[0]).toMatchObject({ reason: "connect-timeout" });
    expect(log.host).toEqual([]);
    expect(natH.dropped).toBeGreaterThan(3);
  });

  it("after both punch, the joiner hears the host's punch and connects to where it came from", () => {
    const { host, joiner, natH, natJ, log, run } = lab();
    // The introducer told each the other's public address (as the NAT shows it) and a token.
    let now = 0;
    for (let round = 0; round < 5; round++) {
      host.punch(now, natJ.publicAddress, TOKEN);
      joiner.punch(now, natH.publicAddress, TOKEN);
      now = run(now, 10);
    }
    const heard = log.joiner.filter((e) => e.type === "punch");
    expect(heard.length).toBeGreaterThan(0);
    expect(heard[0]).toMatchObject({ address: natH.publicAddress });
    // The first punches were dropped: each NAT filtered the other's until its own host punched.
    expect(natH.dropped + natJ.dropped).toBeGreaterThan(0);

    const id = joiner.connect(now, natH.publicAddress);
    now = run(now, 300, () => log.joiner.some((e) => e.type === "connect"));
    expect(log.joiner.find((e) => e.type === "connect")).toMatchObject({ connection: id, address: natH.publicAddress });
    const accepted = log.host.find((e) => e.type === "connect");
    expect(accepted).toMatchObject({ address: natJ.publicAddress });

    joiner.send(id, new Uint8Array([42, 43]), { channel: 0 }, now);
    run(now, 50, () => log.host.some((e) => e.type === "message"));
    expect(log.host.find((e) => e.type === "message")).toMatchObject({ data: new Uint8Array([42, 43]) });
  });
});
