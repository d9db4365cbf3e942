/**
 * Redundancy (unreliable kinds) and piggyback (reliable kinds): copies of recent messages in
 * later datagrams (seed 004). Frames are checked with the PROTOCOL.md §3 decoder; behaviour
 * over a lossy link uses the TS reference engine and the seeded fake link of harness.ts.
 */
import { describe, expect, it } from "vitest";
import { DATA_OVERHEAD_BYTES, DeliveryKind } from "../../src/engine/abi.js";
import { ChannelConfigError, ChannelSet, deliveryKindOf, type ChannelOptions } from "../../src/channels/index.js";
import { Pair, Peer, check, decodeFrames, drainMessages, pairOf as pairOn, payload, withSeed } from "./harness.js";

const pairOf = (configs: ChannelOptions[], link: Parameters<typeof pairOn>[1]) => pairOn(configs, link, { mtu: MTU, bound: 8 << 20 });

const MTU = 1200;
const ROOM = MTU - DATA_OVERHEAD_BYTES;
const make = (channels: ChannelOptions[]) => new ChannelSet({ channels, mtu: MTU, maxReceiveBufferBytes: 1 << 20 });

function write(cs: ChannelSet, now: number, room = ROOM) {
  const bytes = new Uint8Array(2048);
  const contents = cs.acquireContents();
  const n = cs.writeFrames(now, bytes, 100, room, contents);
  return { n, frames: decodeFrames(bytes, 100, 100 + n), contents };
}
const seqs = (p: ReturnType<typeof write>) => p.frames.map((f) => f.seq);



describe("copy options: configuration", () => {
  it("redundancy only on unreliable kinds, piggyback only on reliable kinds, 0..3", () => {
    expect(() => make([{ mode: "reliable-ordered", redundancy: 1 }])).toThrow(ChannelConfigError);
    expect(() => make([{ mode: "unreliable", piggyback: 1 }])).toThrow(/use redundancy/);
    expect(() => make([{ mode: "unreliable-sequenced", redundancy: 4 }])).toThrow(/0\.\.3/);
    expect(() => make([{ mode: "latest-state", piggyback: 1.5 }])).toThrow(ChannelConfigError);
    expect(() => make([{ mode: "unreliable", redundancy: 0, piggyback: 0 }])).not.toThrow();
  });
});

describe("redundancy (unreliable kinds)", () => {
  it("each datagram with a new message carries copies of up to N previous ones, oldest first, before it", () => {
    const cs = make([{ mode: "unreliable-sequenced", redundancy: 2 }]);
    const p: ReturnType<typeof write>[] = [];
    for (let i = 0; i < 4; i++) {
      cs.send(i * 33, 0, new Uint8Array([i, 1, 2]));
      p.push(write(cs, i * 33));
    }
    expect(seqs(p[0])).toEqual([0]);
    expect(seqs(p[1])).toEqual([0, 1]);
    expect(seqs(p[2])).toEqual([0, 1, 2]);
    expect(seqs(p[3])).toEqual([1, 2, 3]);
    // Copies are the message's own frame, byte for byte.
    expect(Array.from(p[3].frames[0].payload)).toEqual([1, 1, 2]);
    expect(p[3].frames.every((f) => f.kind === DeliveryKind.UnreliableSequenced)).toBe(true);
    // Two new messages in one datagram: no copy of a message in the same datagram, no copy twice.
    cs.send(140, 0, new Uint8Array([4]));
    cs.send(140, 0, new Uint8Array([5]));
    expect(seqs(write(cs, 140))).toEqual([2, 3, 4, 5]);
    const stats = cs.stats();
    expect(stats.copiesSent).toBe(1 + 2 + 2 + 2);
    expect(stats.resends).toBe(0);
    expect(cs.queuedBytes()).toBe(0); // messages kept for copies are not queued data
  });

  it("no copies of messages older than 100 ms, and none that would not fit beside the new message", () => {
    const cs = make([{ mode: "unreliable", redundancy: 1 }]);
    cs.send(0, 0, new Uint8Array(10));
    write(cs, 0);
    cs.send(101, 0, new Uint8Array(10));
    expect(seqs(write(cs, 101))).toEqual([1]);
    cs.send(150, 0, new Uint8Array(10));
    // Room for the new frame (16 bytes) but not for the copy as well.
    expect(seqs(write(cs, 150, 16 + 15))).toEqual([2]);
    cs.send(160, 0, new Uint8Array(10));
    expect(seqs(write(cs, 160, 32))).toEqual([2, 3]);
  });

  it("receipts: a lost datagram whose message arrived in a copy reports delivered; all carriers lost reports lost", () => {
    const cs = make([{ mode: "unreliable", redundancy: 1 }]);
    const r0 = cs.send(0, 0, new Uint8Array([0]), { receipt: true });
    const d0 = write(cs, 0);
    const r1 = cs.send(33, 0, new Uint8Array([1]), { receipt: true });
    const d1 = write(cs, 33); // copy of 0 + message 1
    cs.onLost(40, d0.contents);
    expect(cs.pollReceipt()).toBeUndefined(); // the copy is still in flight
    cs.onDelivered(70, d1.contents);
    expect(cs.pollReceipt()).toEqual({ receipt: r0, delivered: true });
    expect(cs.pollReceipt()).toEqual({ receipt: r1, delivered: true });
    // Message 2: its datagram is lost before the next message was written: the loss waits,
    // because a copy may still go out; it does (with 3), and is lost too -> reported lost.
    const r2 = cs.send(66, 0, new Uint8Array([2]), { receipt: true });
    const d2 = write(cs, 66);
    cs.onLost(90, d2.contents);
    expect(cs.pollReceipt()).toBeUndefined();
    cs.send(99, 0, new Uint8Array([3]));
    const d3 = write(cs, 99);
    expect(seqs(d3)).toEqual([2, 3]);
    cs.onLost(130, d3.contents);
    expect(cs.pollReceipt()).toEqual({ receipt: r2, delivered: false });
    // Message 4: lost, and no later message within 100 ms: reported lost when it ages out.
    const r4 = cs.send(140, 0, new Uint8Array([4]), { receipt: true });
    const d4 = write(cs, 140);
    cs.onLost(170, d4.contents);
    expect(cs.pollReceipt()).toBeUndefined();
    cs.send(300, 0, new Uint8Array([5]));
    expect(seqs(write(cs, 300))).toEqual([5]);
    expect(cs.pollReceipt()).toEqual({ receipt: r4, delivered: false });
    expect(cs.pollReceipt()).toBeUndefined();
  });

  it("unreliable: the receiver delivers each message once although copies arrive; copies are not duplicates/stale", withSeed(21, () => {
    const pair = pairOf([{ mode: "unreliable", redundancy: 2 }], { seed: 21, loss: 0.1, jitterMs: 25, duplicate: 0.05 });
    const [a, b] = pair.peers;
    const seen = new Set<number>();
    const N = 600;
    pair.run(N * 3 + 50, () => false, (tick) => {
      if (tick % 3 === 0 && tick / 3 < N) a.channels.send(pair.now, 0, payload(tick / 3, 24));
      for (const m of drainMessages(b.channels)) {
        const i = check(m.data);
        expect(seen.has(i), `message ${i} delivered twice`).toBe(false);
        seen.add(i);
      }
    });
    const st = b.channels.stats();
    expect(seen.size).toBeGreaterThan(N * 0.98); // ~1 - 0.1^3; without copies ~0.9
    expect(st.duplicates).toBe(0);
    expect(st.stale).toBe(0);
    expect(st.copiesDropped).toBeGreaterThan(N); // most copies arrive after their original
  }));

  it("unreliable without redundancy on the receiver still filters copies within its window", () => {
    const sender = make([{ mode: "unreliable", redundancy: 1 }]);
    const kinds = [DeliveryKind.Unreliable];
    const a = new Peer(kinds, [{ mode: "unreliable", redundancy: 1 }], MTU, 1);
    const b = new Peer(kinds, [{ mode: "unreliable" }], MTU, 2);
    void sender;
    const got: number[] = [];
    for (let i = 0; i < 10; i++) {
      a.channels.send(i * 30, 0, payload(i, 8));
      for (const d of a.flush(i * 30, 4, false)) b.receive(i * 30 + 5, d);
      for (const m of drainMessages(b.channels)) got.push(check(m.data));
    }
    expect(got).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(b.channels.stats().duplicates).toBe(9); // counted as plain duplicates there
  });

  it("unreliable-sequenced: newest-state arrival rises with redundancy, never older after newer", () => {
    const fraction: number[] = [];
    for (const redundancy of [0, 1, 2]) {
      const seed = 31;
      const pair = pairOf([{ mode: "unreliable-sequenced", redundancy }], { seed, loss: 0.1, latencyMs: 40 });
      const [a, b] = pair.peers;
      let newest = -1;
      let delivered = 0;
      const N = 900;
      pair.run(N * 3 + 50, () => false, (tick) => {
        if (tick % 3 === 0 && tick / 3 < N) a.channels.send(pair.now, 0, payload(tick / 3, 40));
        for (const m of drainMessages(b.channels)) {
          const i = check(m.data);
          expect(i, `seed ${seed}`).toBeGreaterThan(newest);
          newest = i;
          delivered++;
        }
      });
      fraction.push(delivered / N);
      expect(b.channels.stats().stale).toBe(0);
    }
    expect(fraction[0]).toBeLessThan(0.95);
    expect(fraction[1]).toBeGreaterThan(0.97);
    expect(fraction[2]).toBeGreaterThanOrEqual(fraction[1]);
  });
});

describe("piggyback (reliable kinds)", () => {
  it("spare room carries a copy of the previous unacknowledged frame; an acknowledged copy prevents the resend", () => {
    const cs = make([{ mode: "reliable-ordered", piggyback: 1 }]);
    cs.send(0, 0, new Uint8Array([0]));
    const d0 = write(cs, 0);
    expect(seqs(d0)).toEqual([0]);
    cs.send(33, 0, new Uint8Array([1]));
    const d1 = write(cs, 33);
    expect(seqs(d1)).toEqual([1, 0]); // due data first, the copy after it
    cs.onDelivered(60, d1.contents);
    cs.onLost(70, d0.contents);
    expect(cs.hasPending(70)).toBe(false);
    expect(cs.stats().resends).toBe(0);
    expect(cs.stats().copiesSent).toBe(1);
    expect(cs.queuedBytes()).toBe(0);
  });

  it("a lost original is resent only when its copy is lost too", () => {
    const cs = make([{ mode: "reliable-unordered", piggyback: 1 }]);
    cs.send(0, 0, new Uint8Array([0]));
    const d0 = write(cs, 0);
    cs.send(33, 0, new Uint8Array([1]));
    const d1 = write(cs, 33); // 1 + copy of 0
    cs.onLost(100, d0.contents);
    expect(cs.hasPending(100)).toBe(false);
    cs.onLost(110, d1.contents);
    const d2 = write(cs, 110);
    expect(seqs(d2).sort()).toEqual([0, 1]);
    expect(cs.stats().resends).toBe(2);
  });

  it("never displaces due data, leaves the connection's reserve free, and copies each frame at most N times", () => {
    const cs = make([{ mode: "reliable-ordered", piggyback: 2 }, { mode: "reliable-ordered" }]);
    cs.send(0, 0, new Uint8Array(100));
    write(cs, 0);
    // Due data that fills the datagram: no copy fits, and the due frame is not shortened.
    cs.send(10, 1, new Uint8Array(ROOM - 6));
    const full = write(cs, 10);
    expect(full.frames.map((f) => f.channel)).toEqual([1]);
    // Due data leaving less than copy + 64 bytes free: still no copy.
    cs.send(20, 1, new Uint8Array(ROOM - 6 - 106 - 63));
    expect(write(cs, 20).frames.map((f) => f.channel)).toEqual([1]);
    // Enough room: a copy rides along (on any datagram with due data, here channel 1's).
    for (let k = 0; k < 4; k++) {
      cs.send(30 + k, 1, new Uint8Array(8));
      const p = write(cs, 30 + k);
      expect(p.frames.filter((f) => f.channel === 0).length).toBe(k < 2 ? 1 : 0);
    }
    // Nothing due: copies never make a datagram on their own.
    cs.send(40, 0, new Uint8Array(8));
    write(cs, 40);
    expect(write(cs, 41).n).toBe(0);
  });

  for (const mode of ["reliable-ordered", "reliable-unordered", "latest-state"] as const) {
    it(`${mode}: 30 Hz stream at 10% loss: fewer resends and lower latency with piggyback, each message exactly once`, withSeed(41, () => {
      const result: { resends: number; copies: number; mean: number; p99: number; bytes: number }[] = [];
      for (const piggyback of [0, 1]) {
        const pair = pairOf([{ mode, piggyback }], { seed: 41, loss: 0.1, latencyMs: 30, jitterMs: 10 });
        const [a, b] = pair.peers;
        const N = 450; // 15 s at 30 Hz
        const sentAt: number[] = [];
        const latency: number[] = [];
        const got = new Set<number>();
        let last = -1;
        pair.run(N * 3 + 400, () => got.size === N, (tick) => {
          if (tick % 3 === 0 && tick / 3 < N) {
            const i = tick / 3;
            sentAt[i] = pair.now;
            a.channels.send(pair.now, 0, payload(i, 60), mode === "latest-state" ? { key: i } : undefined);
          }
          for (const m of drainMessages(b.channels)) {
            const i = check(m.data);
            expect(got.has(i), `message ${i} twice`).toBe(false);
            if (mode === "reliable-ordered") expect(i).toBe(last + 1);
            last = i;
            got.add(i);
            latency.push(pair.now - sentAt[i]);
          }
        });
        expect(got.size).toBe(N);
        latency.sort((x, y) => x - y);
        const st = a.channels.stats();
        result.push({
          resends: st.resends,
          copies: st.copiesSent,
          mean: latency.reduce((s, x) => s + x, 0) / latency.length,
          p99: latency[Math.floor(latency.length * 0.99)],
          bytes: a.frameBytesSent,
        });
        if (piggyback === 1) {
          expect(b.channels.stats().duplicates).toBe(0);
          expect(b.channels.stats().copiesDropped).toBeGreaterThan(0);
        }
      }
      console.log(`${mode} 30 Hz, 10% loss: piggyback 0 -> 1`, JSON.stringify(result));
      const [off, on] = result;
      expect(on.resends).toBeLessThan(off.resends * 0.4);
      expect(on.mean).toBeLessThan(off.mean);
      expect(on.p99).toBeLessThanOrEqual(off.p99);
      expect(off.copies).toBe(0);
    }));
  }
});
