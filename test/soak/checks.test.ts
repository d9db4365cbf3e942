// The soak's own checks must catch what they claim to (bench/soak/checks.ts): a soak that
// passes because its checks cannot fail would prove nothing.
import { describe, expect, it } from "vitest";
import { checkArrival, Channel } from "../../bench/soak/checks.js";
import { Failures, LifeLedger } from "../../bench/soak/ledger.js";
import { decodeSoak, encodeSoak, MIN_MESSAGE_BYTES, Stream } from "../../bench/soak/payload.js";
import { parseSoakArgs, SoakUsageError } from "../../bench/soak/args.js";

describe("soak payloads", () => {
  it("round-trip, and a flipped bit anywhere is caught", () => {
    for (const length of [MIN_MESSAGE_BYTES, 17, 100, 1203]) {
      const m = encodeSoak(77, Stream.UpState, 9, length, 3);
      expect(m.length).toBe(length);
      expect(decodeSoak(m)).toEqual({ life: 77, seq: 9, stream: Stream.UpState, key: 3 });
      for (let i = 0; i < length; i += Math.max(1, Math.floor(length / 97))) {
        const copy = m.slice();
        copy[i]! ^= 1 << (i % 8);
        expect(decodeSoak(copy), `length ${length} byte ${i}`).toBeUndefined();
      }
    }
    // Different (life, stream, seq) give different bodies, not only different headers.
    expect(encodeSoak(1, Stream.UpBulk, 0, 64).subarray(12, 60)).not.toEqual(encodeSoak(1, Stream.UpBulk, 1, 64).subarray(12, 60));
    expect(() => encodeSoak(1, Stream.UpBulk, 0, MIN_MESSAGE_BYTES - 1)).toThrow(RangeError);
  });
});

describe("soak checks", () => {
  const arrive = (ledger: LifeLedger, failures: Failures, channel: number, up: boolean, stream: Parameters<typeof encodeSoak>[1], seq: number, key = 0) =>
    checkArrival(ledger, channel, up, encodeSoak(ledger.id, stream, seq, 40, key), 0, failures);

  it("reliable-ordered: the next one in order passes; a gap, a repeat or an earlier one fails", () => {
    const ledger = new LifeLedger(5, "graceful");
    const failures = new Failures();
    expect(arrive(ledger, failures, Channel.Ordered, true, Stream.UpOrdered, 0)).toBe(true);
    expect(arrive(ledger, failures, Channel.Ordered, true, Stream.UpOrdered, 1)).toBe(true);
    expect(arrive(ledger, failures, Channel.Ordered, true, Stream.UpOrdered, 3)).toBe(false);
    expect(arrive(ledger, failures, Channel.Ordered, true, Stream.UpOrdered, 1)).toBe(false);
    expect(arrive(ledger, failures, Channel.Ordered, true, Stream.UpOrdered, 2)).toBe(true);
    expect(failures.count).toBe(2);
    expect(ledger.count(ledger.arrived, Stream.UpOrdered)).toBe(3);
  });

  it("reliable-unordered: any order passes, a second copy fails", () => {
    const ledger = new LifeLedger(5, "graceful");
    const failures = new Failures();
    for (const seq of [4, 0, 2]) expect(arrive(ledger, failures, Channel.Unordered, true, Stream.UpUnordered, seq)).toBe(true);
    expect(arrive(ledger, failures, Channel.Unordered, true, Stream.UpUnordered, 0)).toBe(false);
    expect(failures.lines[0]).toMatch(/arrived twice/);
  });

  it("sequenced: gaps pass, an older or repeated one fails", () => {
    const ledger = new LifeLedger(5, "graceful");
    const failures = new Failures();
    expect(arrive(ledger, failures, Channel.Sequenced, false, Stream.DownSnapshot, 3)).toBe(true);
    expect(arrive(ledger, failures, Channel.Sequenced, false, Stream.DownSnapshot, 9)).toBe(true);
    expect(arrive(ledger, failures, Channel.Sequenced, false, Stream.DownSnapshot, 9)).toBe(false);
    expect(arrive(ledger, failures, Channel.Sequenced, false, Stream.DownSnapshot, 5)).toBe(false);
    expect(failures.count).toBe(2);
  });

  it("latest-state: newer versions of a key pass, an older one fails; the table must match to settle", () => {
    const ledger = new LifeLedger(5, "graceful");
    const failures = new Failures();
    ledger.clientState.set(2, 4);
    expect(arrive(ledger, failures, Channel.State, true, Stream.UpState, 1, 2)).toBe(true);
    expect(ledger.unsettled()).toEqual(["state key 2 at 1 of 4"]);
    expect(arrive(ledger, failures, Channel.State, true, Stream.UpState, 4, 2)).toBe(true);
    expect(arrive(ledger, failures, Channel.State, true, Stream.UpState, 3, 2)).toBe(false);
    expect(ledger.unsettled()).toEqual([]);
  });

  it("a corrupt message, another life's, or a stream on the wrong channel fails", () => {
    const ledger = new LifeLedger(5, "graceful");
    const failures = new Failures();
    const bad = encodeSoak(5, Stream.UpOrdered, 0, 40);
    bad[20]! ^= 4;
    expect(checkArrival(ledger, Channel.Ordered, true, bad, 0, failures)).toBe(false);
    expect(checkArrival(ledger, Channel.Ordered, true, encodeSoak(6, Stream.UpOrdered, 0, 40), 0, failures)).toBe(false);
    expect(checkArrival(ledger, Channel.Bulk, true, encodeSoak(5, Stream.UpOrdered, 0, 40), 0, failures)).toBe(false);
    expect(checkArrival(ledger, 7, true, encodeSoak(5, Stream.UpOrdered, 0, 40), 0, failures)).toBe(false);
    expect(failures.count).toBe(4);
    expect(ledger.count(ledger.arrived, Stream.UpOrdered)).toBe(0);
  });

  it("a life is unsettled while any reliable stream has more sent than arrived", () => {
    const ledger = new LifeLedger(5, "graceful");
    const failures = new Failures();
    ledger.bump(ledger.sent, Stream.DownBulk);
    ledger.bump(ledger.sent, Stream.UpMove); // unreliable: never waited for
    expect(ledger.unsettled()).toEqual(["down-bulk 0/1"]);
    expect(arrive(ledger, failures, Channel.Bulk, false, Stream.DownBulk, 0)).toBe(true);
    expect(ledger.unsettled()).toEqual([]);
  });
});

describe("soak flags", () => {
  it("parses every flag and refuses bad ones", () => {
    const o = parseSoakArgs(["--seconds", "30", "--clients", "4", "--secure", "--vanish", "0", "--out", "/tmp/x.json"]);
    expect(o).toMatchObject({ seconds: 30, clients: 4, secure: true, vanishPercent: 0, out: "/tmp/x.json" });
    expect(parseSoakArgs(["--help"])).toBe("help");
    for (const bad of [["--clients", "0"], ["--clients", "1.5"], ["--loss", "x"], ["--seconds"], ["--nope", "1"], ["--secure", "--secure"], ["--min-life", "9", "--max-life", "3"]]) {
      expect(() => parseSoakArgs(bad), bad.join(" ")).toThrow(SoakUsageError);
    }
  });
});
