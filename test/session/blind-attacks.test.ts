/**
 * Off-path ("blind") attacks: an attacker who knows the protocol id (it is in every copy of the
 * game) and the two addresses, but sees none of the connection's packets. It can spoof the
 * peer's source address. It must not be able to inject messages, forge acknowledgements (which
 * would make the sender drop reliable data it believes delivered), or tear the connection down
 * with a forged NO_CONNECTION (docs/PROTOCOL.md §1 and §4: the connection key and the echo).
 */
import { describe, expect, it } from "vitest";
import { DropReason, PacketType } from "../../src/engine/abi.js";
import { config, sealControlPacket, tsEngine } from "../engine/helpers.js";
import { Rng } from "../../src/sim/rng.js";
import { Endpoint } from "../../src/session/endpoint.js";
import { encodeDisconnect } from "../../src/wire/control.js";
import { PROTOCOL_ID, connectPair, makePair, pollEvents, transmitsOf } from "./helpers.js";

/** The CRC every datagram would carry if only the protocol id were mixed in (an engine's
 *  handshake sealing, which is all an off-path attacker can compute). */
const attackerEngine = tsEngine(config({ protocolId: PROTOCOL_ID }));
const sealWithProtocolId = (body: Uint8Array): Uint8Array => sealControlPacket(attackerEngine, body);

/** A DATA packet with sequence `seq` acknowledging everything up to `ack`, carrying one
 *  reliable-ordered message "EVIL" on channel 0 (messageSeq `messageSeq`). */
function forgedData(seq: number, ack: number, messageSeq: number): Uint8Array {
  const body = new Uint8Array(9 + 6 + 4);
  const v = new DataView(body.buffer);
  body[0] = PacketType.Data | 0x10; // ACKS_VALID
  v.setUint16(1, seq, true);
  v.setUint16(3, ack, true);
  v.setUint32(5, 0xffffffff, true);
  body[9] = 0; // channel 0 (reliable-ordered in DEFAULT_CHANNELS)
  body[10] = 3; // kind ReliableOrdered
  v.setUint16(11, messageSeq, true);
  v.setUint16(13, 4, true);
  body.set([69, 86, 73, 76], 15);
  return sealWithProtocolId(body);
}

describe("blind attacks", () => {
  it("forged DATA from the server's address, every sequence and ack: nothing delivered, nothing acknowledged", () => {
    const seed = 811;
    const pair = makePair(seed);
    const [c] = connectPair(pair);
    // A reliable message whose datagram the attacker wants the client to believe delivered.
    pair.client.send(c, new Uint8Array([1, 2, 3]), { channel: 0 });
    pair.network.flush();
    let withheld = 0;
    for (let d = pair.toServer.pollDelivery(Infinity); d !== undefined; d = pair.toServer.pollDelivery(Infinity)) withheld++;
    expect(withheld, `seed ${seed}`).toBeGreaterThan(0);
    const crcDropsBefore = pair.client.counters.drops[DropReason.BadCrc];
    // 65,536 datagrams: every packet sequence once, each acknowledging the 33 sequences up to
    // a different ack (so some ack covers the withheld packet whatever its sequence).
    for (let s = 0; s < 65536; s++) {
      pair.client.handleDatagram(pair.now, pair.serverAddress, forgedData(s, (s * 7919) & 0xffff, s & 0x3ff));
      if ((s & 63) === 63) pair.client.handleTimeout(pair.now);
    }
    pair.client.handleTimeout(pair.now);
    const injected = pollEvents(pair.client).filter((e) => e.type === "message" || e.type === "disconnect");
    expect(injected, `seed ${seed}`).toEqual([]);
    expect(pair.client.counters.drops[DropReason.BadCrc] - crcDropsBefore, `seed ${seed}: forged datagrams dropped as BadCrc`).toBe(65536);
    // The withheld message was never acknowledged by anyone: it is resent and arrives.
    pair.drive({ maxTimeMs: 3000 });
    const got = pair.serverEvents().flatMap((e) => (e.type === "message" ? [Array.from(e.data)] : []));
    expect(got, `seed ${seed}`).toEqual([[1, 2, 3]]);
    expect(pair.client.stats(c).packets.delivered, `seed ${seed}`).toBeGreaterThan(0);
  });

  it("forged NO_CONNECTION from the server's address does not close the connection", () => {
    const seed = 812;
    const pair = makePair(seed);
    const [c, s] = connectPair(pair);
    pair.client.send(c, new Uint8Array([5]), { channel: 0 });
    pair.drive({ maxTimeMs: 200 });
    pair.serverEvents();
    const rng = new Rng(seed);
    // The old empty form, then guesses at the echoed sequence and CRC: the first 256 with a
    // CRC of 0 (what the engine's ring holds where this young connection sealed nothing yet).
    pair.client.handleDatagram(pair.now, pair.serverAddress, sealWithProtocolId(new Uint8Array([PacketType.NoConnection])));
    for (let i = 0; i < 2000; i++) {
      const body = new Uint8Array(7);
      const v = new DataView(body.buffer);
      body[0] = PacketType.NoConnection;
      v.setUint16(1, i < 256 ? i : rng.nextU32() & 0xffff, true);
      v.setUint32(3, i < 256 ? 0 : rng.nextU32(), true);
      pair.client.handleDatagram(pair.now, pair.serverAddress, sealWithProtocolId(body));
    }
    pair.client.handleTimeout(pair.now);
    expect(pollEvents(pair.client).filter((e) => e.type === "disconnect"), `seed ${seed}`).toEqual([]);
    // The empty form is no longer a legal NO_CONNECTION (BadLength); the guesses are read and
    // found not to echo any packet of ours.
    expect(pair.client.counters.drops[DropReason.BadLength], `seed ${seed}`).toBe(1);
    expect(pair.client.counters.unverifiedNoConnection, `seed ${seed}`).toBe(2000);
    // Still connected both ways.
    pair.client.send(c, new Uint8Array([6]), { channel: 0 });
    pair.server.send(s, new Uint8Array([7]), { channel: 0 });
    pair.drive({ maxTimeMs: 500 });
    expect(pair.serverEvents().filter((e) => e.type === "message").length, `seed ${seed}`).toBe(1);
    expect(pair.clientEvents().filter((e) => e.type === "message").length, `seed ${seed}`).toBe(1);
  });
});

describe("a connection replaced inside one receive batch", () => {
  it("DATA of the old connection after the new one's CONNECT_RESPONSE in the same batch is not delivered to the new one", () => {
    const seed = 813;
    const pair = makePair(seed);
    const [c] = connectPair(pair);
    // The same address restarts: a second client endpoint at it completes a challenge.
    const restarted = new Endpoint({ protocolId: PROTOCOL_ID, seed: seed * 7 + 3, engine: "ts" });
    restarted.connect(pair.now, pair.serverAddress);
    const request = [...transmitsOf(restarted, pair.now)].map((t) => t.bytes.slice());
    for (const r of request) pair.server.handleDatagram(pair.now, pair.clientAddress, r);
    const challenge = [...transmitsOf(pair.server, pair.now)].filter((t) => t.to === pair.clientAddress).map((t) => t.bytes.slice());
    expect(challenge.length, `seed ${seed}`).toBe(1);
    restarted.handleDatagram(pair.now, pair.serverAddress, challenge[0]);
    const response = [...transmitsOf(restarted, pair.now)].map((t) => t.bytes.slice());
    expect(response.length, `seed ${seed}`).toBe(1);
    // The old connection's last message, sealed before the restart, arrives after the response.
    pair.client.send(c, new Uint8Array([9, 9, 9]), { channel: 0 });
    const old = [...transmitsOf(pair.client, pair.now)].map((t) => t.bytes.slice());
    expect(old.length, `seed ${seed}`).toBeGreaterThan(0);
    pair.server.handleDatagram(pair.now, pair.clientAddress, response[0]);
    for (const d of old) pair.server.handleDatagram(pair.now, pair.clientAddress, d);
    pair.server.handleTimeout(pair.now);
    const events = pollEvents(pair.server);
    const connected = events.filter((e) => e.type === "connect").map((e) => e.connection);
    expect(connected.length, `seed ${seed}`).toBe(1);
    const onNew = events.filter((e) => e.type === "message" && e.connection === connected[0]);
    expect(onNew, `seed ${seed}`).toEqual([]);
    expect(events.some((e) => e.type === "disconnect"), `seed ${seed}`).toBe(true);
  });

  it("session ids are not a step of a generator: a client cannot predict the next client's from its own", () => {
    const SERVER = "192.0.2.1:7777";
    const xorshift = (x: number): number => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return x >>> 0;
    };
    const server = new Endpoint({ protocolId: PROTOCOL_ID, server: true, seed: 0x1234567 });
    const peers = new Map<string, Endpoint>();
    const pump = (now: number) => {
      for (let k = 0; k < 20; k++) {
        for (const [address, ep] of peers) for (const tx of transmitsOf(ep, now)) server.handleDatagram(now, address, tx.bytes.slice());
        for (const tx of transmitsOf(server, now)) peers.get(tx.to)?.handleDatagram(now, SERVER, tx.bytes.slice());
      }
    };
    const sessionOf = (ep: Endpoint, id: number): number => (ep as unknown as { byId: Map<number, { sessionId: number }> }).byId.get(id)!.sessionId;
    const attacker = new Endpoint({ protocolId: PROTOCOL_ID, seed: 7 });
    peers.set("203.0.113.66:1000", attacker);
    const a = attacker.connect(0, SERVER);
    pump(0);
    const own = sessionOf(attacker, a); // came with ACCEPT
    expect(own).not.toBe(0);
    const victim = new Endpoint({ protocolId: PROTOCOL_ID, seed: 8 });
    const victimAddress = "198.51.100.20:5555";
    peers.set(victimAddress, victim);
    const v = victim.connect(10, SERVER);
    pump(10);
    const target = sessionOf(victim, v);
    expect(target).not.toBe(0);
    // The next 64 outputs of the generator the server used to draw them from, after ours.
    const guesses: number[] = [];
    for (let x = own, k = 0; k < 64; k++) guesses.push((x = xorshift(x)));
    expect(guesses).not.toContain(target);
    // Nor does a DISCONNECT spoofed from the victim with any of them close it.
    const attackerEngine = tsEngine(config({ protocolId: PROTOCOL_ID }));
    for (const guess of guesses) {
      const b = new Uint8Array(8);
      const length = encodeDisconnect(b, 0, guess, 0, new Uint8Array(0));
      server.handleDatagram(20, victimAddress, sealControlPacket(attackerEngine, b.subarray(0, length)));
    }
    server.handleTimeout(20);
    expect(pollEvents(server).filter((e) => e.type === "disconnect")).toEqual([]);
  });
});
