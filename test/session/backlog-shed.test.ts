/**
 * While the socket has a backlog (Endpoint.backlogged, set by the driver for a full read batch),
 * DATA of a connection holding over 16 KiB received is mostly dropped before it is decoded
 * (counters.backlogShed); a connection whose data arrives in order holds nothing and loses
 * nothing. Sans-IO: a server, an attacker that withholds its first reliable-ordered message
 * (bench/attack/withhold.ts) so the server holds what follows, and an honest client pinging on
 * channel 0, on a virtual clock with a 1 ms one-way delay.
 */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import type { Address } from "../../src/session/sans-io.js";
import { carriesFirst, FIRST_BYTE, OTHER_BYTE } from "../../bench/attack/withhold.js";

const SERVER: Address = "10.0.0.1:4000";
const ATTACKER: Address = "10.0.0.2:5000";
const HONEST: Address = "10.0.0.3:6000";
const KIB = 1024;

interface Run {
  shed: number;
  honestSent: number;
  honestEchoed: number;
  /** The attacker's datagrams that reached the server. */
  fromAttacker: number;
  /** Most the server held received. */
  held: number;
}

function run(backloggedFrom: number): Run {
  const server = new Endpoint({ protocolId: 7, seed: 1, server: true });
  const attacker = new Endpoint({ protocolId: 7, seed: 2, engine: "ts", congestion: "none" });
  const honest = new Endpoint({ protocolId: 7, seed: 3 });
  const aConn = attacker.connect(0, SERVER);
  const hConn = honest.connect(0, SERVER);
  const wire: { at: number; to: Address; from: Address; bytes: Uint8Array }[] = [];
  const peers = new Map<Address, Endpoint>([
    [ATTACKER, attacker],
    [HONEST, honest],
  ]);
  let aUp = false;
  let hUp = false;
  let sent = 0;
  let honestSent = 0;
  let honestEchoed = 0;
  let held = 0;
  let fromAttacker = 0;
  for (let now = 0; now <= 3000; now += 0.5) {
    server.backlogged = now >= backloggedFrom;
    for (let tx = attacker.pollTransmit(now); tx !== undefined; tx = attacker.pollTransmit(now)) {
      if (!carriesFirst(tx.bytes)) wire.push({ at: now + 1, to: SERVER, from: ATTACKER, bytes: tx.bytes.slice() });
    }
    for (let tx = honest.pollTransmit(now); tx !== undefined; tx = honest.pollTransmit(now)) wire.push({ at: now + 1, to: SERVER, from: HONEST, bytes: tx.bytes.slice() });
    for (let tx = server.pollTransmit(now); tx !== undefined; tx = server.pollTransmit(now)) wire.push({ at: now + 1, to: tx.to, from: SERVER, bytes: tx.bytes.slice() });
    for (let ev = attacker.pollEvent(); ev !== undefined; ev = attacker.pollEvent()) if (ev.type === "connect") aUp = true;
    for (let ev = honest.pollEvent(); ev !== undefined; ev = honest.pollEvent()) {
      if (ev.type === "connect") hUp = true;
      else if (ev.type === "message") honestEchoed++;
    }
    for (let ev = server.pollEvent(); ev !== undefined; ev = server.pollEvent()) {
      if (ev.type === "message" && ev.channel === 0) server.send(ev.connection, ev.data, { channel: 0 }, now);
    }
    // The attacker: its first message (withheld), then one 60 KiB message per 50 ms (10 in all).
    if (aUp && sent < 11 && now >= sent * 50) attacker.send(aConn, new Uint8Array(60 * KIB).fill(sent++ === 0 ? FIRST_BYTE : OTHER_BYTE), { channel: 6 }, now);
    // The honest client: a 100 B ping every 33 ms on a reliable-ordered channel, until 2.5 s.
    if (hUp && now < 2500 && now >= honestSent * 33) {
      honest.send(hConn, new Uint8Array(100).fill(honestSent & 0xff), { channel: 0 }, now);
      honestSent++;
    }
    for (let i = 0; i < wire.length; ) {
      const w = wire[i]!;
      if (w.at > now) {
        i++;
        continue;
      }
      wire.splice(i, 1);
      if (w.to === SERVER) {
        if (w.from === ATTACKER) fromAttacker++;
        server.handleDatagram(now, w.from, w.bytes);
      }
      else peers.get(w.to)?.handleDatagram(now, SERVER, w.bytes);
    }
    for (const ep of [attacker, honest, server]) if ((ep.pollTimeout() ?? Infinity) <= now) ep.handleTimeout(now);
    held = Math.max(held, server.receiveBudget.total);
  }
  return { shed: server.counters.backlogShed, honestSent, honestEchoed, fromAttacker, held };
}

describe("shedding while the socket has a backlog", () => {
  it("drops most DATA of a connection holding over 16 KiB, none of a connection whose data arrives in order", () => {
    const calm = run(Infinity);
    const behind = run(0);
    const why = JSON.stringify({ calm, behind });
    expect(calm.shed, why).toBe(0);
    // Without a backlog the attacker's 10 messages after the gap are all held.
    expect(calm.held, why).toBeGreaterThanOrEqual(10 * 60 * KIB);
    // With one, once it holds 16 KiB most of what it sends is dropped unread (7 in 8: it
    // resends those, and the kept ones still get its messages in, more slowly).
    expect(behind.shed, why).toBeGreaterThan(0.7 * behind.fromAttacker);
    expect(behind.shed, why).toBeLessThan((7 / 8) * behind.fromAttacker + 8);
    // The honest client's pings hold nothing at the server: every one echoed, either way.
    for (const r of [calm, behind]) {
      expect(r.honestSent, why).toBeGreaterThan(60);
      expect(r.honestEchoed, why).toBe(r.honestSent);
    }
  });
});
