/**
 * The receive-budget attackers (bench/attack/attackers.ts) withhold every datagram carrying a
 * fragment of their first reliable-ordered message, resends included, so that the server holds
 * all that follows for ordering. Sans-IO, two endpoints on a virtual clock with a 1 ms one-way
 * delay; the attacker's datagrams go through the same filter as in the benchmark.
 */
import { describe, expect, it } from "vitest";
import { Endpoint } from "../../src/session/endpoint.js";
import type { Address } from "../../src/session/sans-io.js";
import { carriesFirst, FIRST_BYTE, OTHER_BYTE } from "../../bench/attack/withhold.js";

const SERVER: Address = "10.0.0.1:4000";
const ATTACKER: Address = "10.0.0.2:5000";
const KIB = 1024;

describe("the receive-budget attackers' filter", () => {
  it("withholds the first message's resends too (sent with ACKS_VALID): the server never delivers it and holds what follows", () => {
    const server = new Endpoint({ protocolId: 7, seed: 1, server: true, maxTotalReceiveBufferBytes: 64 * 1024 * KIB });
    const attacker = new Endpoint({ protocolId: 7, seed: 2, engine: "ts", congestion: "none" });
    const conn = attacker.connect(0, SERVER);
    const wire: { at: number; to: "server" | "attacker"; bytes: Uint8Array }[] = [];
    let withheld = 0;
    let flagged = 0;
    let up = false;
    let sent = 0;
    let delivered = 0;
    let firstDelivered = false;
    let held = 0;
    for (let now = 0; now <= 3000; now += 0.5) {
      for (let tx = attacker.pollTransmit(now); tx !== undefined; tx = attacker.pollTransmit(now)) {
        if (carriesFirst(tx.bytes)) {
          withheld++;
          if ((tx.bytes[0]! & 0xf0) !== 0) flagged++;
          continue;
        }
        wire.push({ at: now + 1, to: "server", bytes: tx.bytes.slice() });
      }
      for (let tx = server.pollTransmit(now); tx !== undefined; tx = server.pollTransmit(now)) wire.push({ at: now + 1, to: "attacker", bytes: tx.bytes.slice() });
      for (let ev = attacker.pollEvent(); ev !== undefined; ev = attacker.pollEvent()) if (ev.type === "connect") up = true;
      for (let ev = server.pollEvent(); ev !== undefined; ev = server.pollEvent()) {
        if (ev.type !== "message") continue;
        delivered++;
        if (ev.data[0] === FIRST_BYTE) firstDelivered = true;
      }
      // The first message, then one 60 KiB message per 100 ms (4 in all).
      if (up && sent < 5 && now >= sent * 100) attacker.send(conn, new Uint8Array(60 * KIB).fill(sent++ === 0 ? FIRST_BYTE : OTHER_BYTE), { channel: 6 }, now);
      for (let i = 0; i < wire.length; ) {
        const w = wire[i]!;
        if (w.at > now) {
          i++;
          continue;
        }
        wire.splice(i, 1);
        if (w.to === "server") server.handleDatagram(now, ATTACKER, w.bytes);
        else attacker.handleDatagram(now, SERVER, w.bytes);
      }
      if ((attacker.pollTimeout() ?? Infinity) <= now) attacker.handleTimeout(now);
      if ((server.pollTimeout() ?? Infinity) <= now) server.handleTimeout(now);
      held = Math.max(held, server.receiveBudget.total);
    }
    const why = JSON.stringify({ withheld, flagged, sent, delivered, firstDelivered, held });
    expect(sent, why).toBe(5);
    expect(firstDelivered, why).toBe(false);
    expect(delivered, why).toBe(0);
    // Resends of the first message went out flagged and were withheld as well.
    expect(flagged, why).toBeGreaterThan(0);
    // The four messages after the gap are held for ordering.
    expect(held, why).toBeGreaterThanOrEqual(4 * 60 * KIB);
  });
});
