import { describe, expect, it } from "vitest";
import { TurnReceiver } from "../../src/api/turn-receiver.js";
import type { DatagramBatch } from "../../src/api/socket.js";

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function recorder(receiver: TurnReceiver): number[][] {
  const calls: number[][] = [];
  receiver.onDatagrams((batch: DatagramBatch) => {
    const seqs: number[] = [];
    for (let i = 0; i < batch.length; i++) seqs.push(batch.bytes[i]![0]!);
    calls.push(seqs);
  });
  return calls;
}

const datagram = (seq: number): Uint8Array => new Uint8Array([seq]);

describe("TurnReceiver", () => {
  it("delivers one datagram per turn at once, never deferred", async () => {
    const receiver = new TurnReceiver();
    const calls = recorder(receiver);
    for (let seq = 0; seq < 50; seq++) {
      receiver.push("127.0.0.1:1", datagram(seq));
      expect(calls.at(-1)).toEqual([seq]);
      await nextTurn();
    }
    expect(calls.length).toBe(50);
  });

  it("batches the rest of a burst once traffic is bursty, in arrival order", async () => {
    const receiver = new TurnReceiver();
    const calls = recorder(receiver);
    let seq = 0;
    for (let turn = 0; turn < 4; turn++) {
      for (let i = 0; i < 40; i++) receiver.push("127.0.0.1:1", datagram(seq++ & 255));
      await nextTurn();
    }
    const all = calls.flat();
    expect(all).toEqual(Array.from({ length: 160 }, (_, i) => i & 255));
    // After the first burst is noticed, each later burst is one delivery at the turn end.
    expect(calls.at(-1)!.length).toBe(40);
    expect(calls.at(-2)!.length).toBe(40);
  });

  it("hands a long burst over MAX_HELD (64) at a time, without waiting for the turn end", async () => {
    const receiver = new TurnReceiver();
    const calls = recorder(receiver);
    for (let i = 0; i < 40; i++) receiver.push("127.0.0.1:1", datagram(i));
    await nextTurn();
    const before = calls.length;
    for (let i = 0; i < 200; i++) receiver.push("127.0.0.1:1", datagram(i));
    expect(calls.slice(before).map((c) => c.length)).toEqual([64, 64, 64]);
    await nextTurn();
    expect(calls.slice(before).map((c) => c.length)).toEqual([64, 64, 64, 8]);
    expect(calls.slice(before).flat()).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it("while bursty, a turn's single datagram is delivered at that turn's end", async () => {
    const receiver = new TurnReceiver();
    const calls = recorder(receiver);
    for (let i = 0; i < 40; i++) receiver.push("127.0.0.1:1", datagram(i));
    await nextTurn();
    const before = calls.length;
    receiver.push("127.0.0.1:1", datagram(7));
    expect(calls.length).toBe(before);
    await nextTurn();
    expect(calls.slice(before)).toEqual([[7]]);
  });

  it("everything pushed in a turn is delivered by the end of that turn", async () => {
    const receiver = new TurnReceiver();
    const calls = recorder(receiver);
    for (let i = 0; i < 100; i++) receiver.push("127.0.0.1:1", datagram(i));
    await nextTurn();
    expect(calls.flat().length).toBe(100);
  });

  it("returns to per-datagram delivery after quiet turns", async () => {
    const receiver = new TurnReceiver();
    const calls = recorder(receiver);
    for (let i = 0; i < 40; i++) receiver.push("127.0.0.1:1", datagram(i));
    await nextTurn();
    for (let turn = 0; turn < 20; turn++) {
      receiver.push("127.0.0.1:1", datagram(turn));
      await nextTurn();
    }
    // Two datagrams in one turn while quiet: both at once, none held for the turn end.
    const before = calls.length;
    receiver.push("127.0.0.1:1", datagram(1));
    receiver.push("127.0.0.1:1", datagram(2));
    expect(calls.length).toBe(before + 2);
  });

  it("delivers nothing after close", async () => {
    const receiver = new TurnReceiver();
    const calls = recorder(receiver);
    for (let i = 0; i < 40; i++) receiver.push("127.0.0.1:1", datagram(i));
    await nextTurn();
    receiver.push("127.0.0.1:1", datagram(1));
    receiver.push("127.0.0.1:1", datagram(2));
    const before = calls.length;
    receiver.close();
    await nextTurn();
    receiver.push("127.0.0.1:1", datagram(3));
    await nextTurn();
    expect(calls.length).toBe(before);
  });
});
