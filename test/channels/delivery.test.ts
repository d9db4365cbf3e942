/**
 * End-to-end channel behaviour over the TS reference engine (sealData / processBatch) and a
 * seeded lossy link on a virtual clock. Seeds are fixed and printed on failure.
 */
import { describe, expect, it } from "vitest";
import { DeliveryKind } from "../../src/engine/abi.js";
import { deliveryKindOf, type ChannelOptions } from "../../src/channels/index.js";
import { Pair, Peer, check, drainMessages, pairOf as pairOn, payload, rng, withSeed } from "./harness.js";

const pairOf = (configs: ChannelOptions[], link: Parameters<typeof pairOn>[1], bound?: number) => pairOn(configs, link, { bound });



describe("delivery over a lossy link (TS reference engine)", () => {
  for (const seed of [1, 2]) {
    it(`a 1 MiB message round-trips byte-exact under 10% loss and jitter (seed ${seed})`, withSeed(seed, () => {
      for (const mode of ["reliable-ordered", "reliable-unordered", "reliable-sequenced"] as const) {
        const pair = pairOf([{ mode }], { seed, loss: 0.1, jitterMs: 25 });
        const [a, b] = pair.peers;
        const big = new Uint8Array(1 << 20);
        const r = rng(seed * 77);
        for (let i = 0; i < big.length; i++) big[i] = (r() * 256) | 0;
        const receipt = a.channels.send(0, 0, big, { receipt: true });
        const got: Uint8Array[] = [];
        let receipts = 0;
        const ticks = pair.run(20_000, () => got.length > 0 && receipts > 0, () => {
          got.push(...drainMessages(b.channels).map((m) => m.data));
          for (let x = a.channels.pollReceipt(); x; x = a.channels.pollReceipt()) {
            expect(x).toEqual({ receipt, delivered: true });
            receipts++;
          }
        });
        expect(ticks, `${mode}: the message and its receipt within the tick budget`).toBeLessThan(20_000);
        expect(receipts).toBe(1);
        expect(got.length).toBe(1);
        expect(got[0].length).toBe(big.length);
        expect(Buffer.compare(got[0], big)).toBe(0);
        expect(a.channels.stats().resends).toBeGreaterThan(0);
        expect(b.channels.receiveBufferedBytes()).toBe(0);
        expect(a.channels.queuedBytes()).toBe(0);
      }
    }));
  }

  it("ordered channel: every message exactly once, in order, under 20% loss, reorder and duplication; across messageSeq wrap", withSeed(3, () => {
    const pair = pairOf([{ mode: "reliable-ordered" }, { mode: "reliable-unordered" }], { seed: 3, loss: 0.2, jitterMs: 40, duplicate: 0.05 });
    const [a, b] = pair.peers;
    const N = 70_000; // > 65536: the 16-bit message sequence wraps
    let sent = 0;
    const orderedGot: number[] = [];
    const unorderedGot = new Uint8Array(N);
    let unorderedCount = 0;
    pair.run(100_000, () => orderedGot.length === N && unorderedCount === N, () => {
      for (let i = 0; i < 400 && sent < N; i++, sent++) {
        a.channels.send(0, 0, payload(sent, 4 + (sent % 13)));
        a.channels.send(0, 1, payload(sent, 4 + (sent % 7)));
      }
      for (const m of drainMessages(b.channels)) {
        const index = check(m.data);
        if (m.channel === 0) {
          expect(index).toBe(orderedGot.length);
          orderedGot.push(index);
        } else {
          expect(unorderedGot[index]).toBe(0);
          unorderedGot[index] = 1;
          unorderedCount++;
        }
      }
    });
    expect(orderedGot.length).toBe(N);
    expect(unorderedCount).toBe(N);
    expect(b.channels.stats().messagesReceived).toEqual([N, N]);
  }));

  it("head-of-line isolation: a second channel keeps flowing while an ordered one waits for a resend", withSeed(4, () => {
    const pair = pairOf([{ mode: "reliable-ordered" }, { mode: "unreliable" }], { seed: 4, loss: 0, latencyMs: 30 });
    const [a, b] = pair.peers;
    a.channels.send(0, 0, payload(0, 8));
    // Lose the first packet on purpose by flushing it into nowhere.
    a.flush(0, 1, false);
    a.channels.send(0, 0, payload(1, 8));
    const ordered: number[] = [];
    const other: number[] = [];
    let tickOfFirstOrdered = -1;
    let tickOfFirstOther = -1;
    pair.run(200, () => ordered.length === 2, (tick) => {
      if (tick < 20) a.channels.send(0, 1, payload(tick, 8));
      for (const m of drainMessages(b.channels)) {
        if (m.channel === 0) {
          ordered.push(check(m.data));
          if (tickOfFirstOrdered < 0) tickOfFirstOrdered = tick;
        } else {
          other.push(check(m.data));
          if (tickOfFirstOther < 0) tickOfFirstOther = tick;
        }
      }
    });
    expect(ordered).toEqual([0, 1]);
    expect(tickOfFirstOther).toBeGreaterThanOrEqual(0);
    expect(tickOfFirstOther).toBeLessThan(tickOfFirstOrdered);
  }));

  for (const mode of ["unreliable-sequenced", "reliable-sequenced"] as const) {
    it(`${mode}: never an older message after a newer one; fragments too (seed 5)`, withSeed(5, () => {
      const pair = pairOf([{ mode }], { seed: 5, loss: 0.15, jitterMs: 60, duplicate: 0.1 });
      const [a, b] = pair.peers;
      let newest = -1;
      let count = 0;
      let sent = 0;
      const N = 600;
      pair.run(3_000, () => false, (tick) => {
        if (tick % 2 === 0 && sent < N) {
          // every 5th message is fragmented (3 fragments)
          a.channels.send(pair.now, 0, payload(sent, sent % 5 === 0 ? 3000 : 20));
          sent++;
        }
        for (const m of drainMessages(b.channels)) {
          const index = check(m.data);
          expect(index).toBeGreaterThan(newest);
          newest = index;
          count++;
        }
      });
      expect(count).toBeGreaterThan(N / 3);
      if (mode === "reliable-sequenced") expect(newest).toBe(N - 1); // the newest is guaranteed
    }));
  }

  it("unreliable: never duplicated or corrupted", withSeed(6, () => {
    const pair = pairOf([{ mode: "unreliable" }], { seed: 6, loss: 0.2, jitterMs: 50, duplicate: 0.2 });
    const [a, b] = pair.peers;
    const seen = new Set<number>();
    let sent = 0;
    pair.run(500, () => false, () => {
      for (let i = 0; i < 5; i++) a.channels.send(pair.now, 0, payload(sent++, sent % 10 === 0 ? 2500 : 30));
      for (const m of drainMessages(b.channels)) {
        const index = check(m.data);
        expect(seen.has(index)).toBe(false);
        seen.add(index);
      }
    });
    expect(seen.size).toBeGreaterThan(sent * 0.6);
    expect(seen.size).toBeLessThan(sent);
  }));

  it("LatestState under 20% loss converges to the latest values with fewer bytes than resending every lost update", withSeed(7, () => {
    const KEYS = 64;
    const TICKS = 300;
    const run = (mode: "latest-state" | "reliable-unordered") => {
      const pair = pairOf([{ mode }], { seed: 7, loss: 0.2, jitterMs: 20 });
      const [a, b] = pair.peers;
      const latest = new Map<number, number>();
      const value = (key: number, version: number) => {
        const d = new Uint8Array(40);
        const v = new DataView(d.buffer);
        v.setUint32(0, key, true);
        v.setUint32(4, version, true);
        return d;
      };
      const received = new Map<number, number>();
      pair.run(TICKS + 1_000, () => pair.now > TICKS * 10 && !a.channels.hasPending(pair.now) && a.dnm.inFlight <= 2 &&
        [...latest].every(([k, v]) => received.get(k) === v), (tick) => {
        if (tick < TICKS) {
          // a quarter of the keys change every tick
          for (let k = tick % 4; k < KEYS; k += 4) {
            const version = tick;
            latest.set(k, version);
            if (mode === "latest-state") a.channels.send(0, 0, value(k, version), { key: k });
            else a.channels.send(0, 0, value(k, version));
          }
        }
        for (const m of drainMessages(b.channels)) {
          const v = new DataView(m.data.buffer, m.data.byteOffset);
          const key = v.getUint32(0, true);
          const version = v.getUint32(4, true);
          if (mode === "latest-state") {
            expect(m.key).toBe(key);
            expect(version).toBeGreaterThan(received.get(key) ?? -1); // never goes backwards
            received.set(key, version);
          } else if (version > (received.get(key) ?? -1)) received.set(key, version);
        }
      });
      return { latest, received, bytes: a.frameBytesSent, resends: a.channels.stats().resends };
    };
    const ls = run("latest-state");
    const ru = run("reliable-unordered");
    for (const [k, v] of ls.latest) expect(ls.received.get(k)).toBe(v);
    for (const [k, v] of ru.latest) expect(ru.received.get(k)).toBe(v);
    console.log(`LatestState frame bytes ${ls.bytes} (resends ${ls.resends}) vs resend-everything ${ru.bytes} (resends ${ru.resends})`);
    expect(ls.bytes).toBeLessThan(ru.bytes);
    expect(ls.resends).toBeLessThan(ru.resends / 2);
  }));

  it("receipts fire exactly once each; reliable ones report delivered; failAll reports the rest lost", withSeed(8, () => {
    const configs: ChannelOptions[] = [
      { mode: "reliable-ordered" },
      { mode: "unreliable" },
      { mode: "reliable-unordered" },
      { mode: "unreliable-sequenced" },
      { mode: "latest-state" },
    ];
    const pair = pairOf(configs, { seed: 8, loss: 0.2, jitterMs: 30 });
    const [a] = pair.peers;
    const ids = new Map<number, number>(); // receipt -> channel
    const outcome = new Map<number, boolean>();
    const drain = () => {
      for (let r = a.channels.pollReceipt(); r; r = a.channels.pollReceipt()) {
        expect(outcome.has(r.receipt)).toBe(false);
        expect(ids.has(r.receipt)).toBe(true);
        outcome.set(r.receipt, r.delivered);
      }
    };
    let n = 0;
    pair.run(400, () => false, (tick) => {
      if (tick < 200) {
        for (let ch = 0; ch < configs.length; ch++) {
          const big = n % 9 === 0;
          const id = a.channels.send(0, ch, payload(n++, big ? 3000 : 20), { receipt: true, key: ch === 4 ? n % 5 : undefined });
          expect(id).toBeGreaterThan(0);
          ids.set(id, ch);
        }
      }
      drain();
    });
    // everything settled well after the last send; reliable channels all delivered
    for (const [id, ch] of ids) {
      if (ch === 0 || ch === 2 || ch === 4) expect(outcome.get(id), `receipt ${id} on channel ${ch}`).toBe(true);
    }
    const lostUnreliable = [...ids].filter(([id, ch]) => (ch === 1 || ch === 3) && outcome.get(id) === false).length;
    expect(lostUnreliable).toBeGreaterThan(0);
    // now leave messages outstanding and close
    const pending: number[] = [];
    for (let ch = 0; ch < configs.length; ch++) {
      const id = a.channels.send(0, ch, payload(n++, 20), { receipt: true, key: ch === 4 ? 1 : undefined });
      ids.set(id, ch);
      pending.push(id);
    }
    a.flush(pair.now, 4, false); // in flight, never answered
    a.channels.failAll();
    drain();
    for (const id of pending) expect(outcome.get(id)).toBe(false);
    expect(outcome.size).toBe(ids.size);
    // late feedback after close reports nothing more
    a.dnm.dropAll(pair.now + 10_000);
    expect(a.channels.pollReceipt()).toBeUndefined();
  }));
});
