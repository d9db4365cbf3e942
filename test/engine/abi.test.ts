// The one ABI definition: the generated sides are current, records round-trip through the typed
// decoder and encoder, and the generator refuses definitions that would break either side.
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import * as definition from "../../src/engine/abi.definition.mjs";
import { generate, layOut } from "../../scripts/abi.mjs";
import {
  CHANNEL_BYTES,
  ChannelField,
  ConfigField,
  MESSAGE_WINDOW,
  PACKET_WINDOW,
  RECORD_INTS,
  RecordType,
  SLOT_BYTES,
  SlotField,
  decodeRecord,
  encodeRecord,
  type EngineRecord,
} from "../../src/engine/abi.js";
import { createWasmEngine } from "../../src/engine/wasm-engine.js";
import { TsEngine } from "../../src/engine/ts-engine.js";
import { config } from "./helpers.js";

type Definition = typeof definition;
const copy = (): Definition => structuredClone({ ...definition }) as Definition;

describe("the ABI definition", () => {
  it("generated both sides from the committed definition (build.mjs keeps them current)", () => {
    expect(() => execFileSync(process.execPath, ["scripts/abi.mjs", "--check"], { stdio: "pipe" })).not.toThrow();
  });

  it("lays structures out from field sizes: the windows follow the slot's twelve u32s, each aligned", () => {
    expect(SlotField.ReceivedWindow).toBe(48);
    expect(SlotField.SentWindow).toBe(48 + PACKET_WINDOW / 8);
    expect(SlotField.SentCrcs).toBe(SlotField.SentWindow + PACKET_WINDOW * 4);
    // The f64 send times start at a multiple of 8 (the slot stride is a multiple of 16).
    expect(SlotField.SentTimes % 8).toBe(0);
    expect(SlotField.SentTimes).toBe(SlotField.SentCrcs + PACKET_WINDOW * 4);
    expect(SlotField.Channels).toBe(SLOT_BYTES);
    expect(ChannelField.Bitmap + MESSAGE_WINDOW / 8).toBe(CHANNEL_BYTES);
    expect(ConfigField.ChannelKinds % 4).toBe(0);
  });

  it("round-trips every record type through encodeRecord and decodeRecord by field name", () => {
    const records = new Int32Array(RECORD_INTS * definition.records.length);
    definition.records.forEach((r, i) => {
      const rec: Record<string, number> = { type: r.id, slot: i - 1 };
      for (const [k, f] of r.fields.entries()) if (f !== null) rec[f[0]] = 1000 * (i + 1) + k;
      encodeRecord(records, i * RECORD_INTS, rec as unknown as EngineRecord);
      expect(decodeRecord(records, i * RECORD_INTS)).toEqual(rec);
    });
    expect(() => decodeRecord(new Int32Array(RECORD_INTS), 0)).toThrow(RangeError);
  });

  it("both engines emit records the typed decoder reads: a control packet's body range", async () => {
    const wasm = await createWasmEngine(config());
    for (const engine of [new TsEngine(config()), wasm]) {
      const at = engine.layout.txArenaOffset;
      engine.bytes[at] = 7; // DISCONNECT_ACK, a 4-byte body
      engine.bytes.fill(0xab, at + 1, at + 5);
      const length = engine.sealControl(at, 5);
      const rx = engine.layout.rxArenaOffset;
      engine.bytes.copyWithin(rx, at, at + length);
      engine.descriptors.set([rx, length, -1, 0], 0);
      expect(engine.processBatch(1)).toBe(1);
      expect(decodeRecord(engine.records, 0)).toEqual({
        type: RecordType.Control, slot: -1, packetType: 7, datagram: 0, offset: rx + 1, length: 4,
      });
    }
  });

  it("refuses a duplicate record id, a Hold that drifts from Message, and an unknown count", () => {
    const dup = copy();
    dup.records[1].id = dup.records[0].id;
    expect(() => generate(dup)).toThrow(/record id/);
    const drift = copy();
    const hold = drift.records.find((r) => r.name === "Hold")!;
    hold.fields = [...hold.fields].reverse();
    expect(() => generate(drift)).toThrow(/Message's field layout/);
    expect(() => layOut({ name: "X", fields: [["a", "u32", "NO_SUCH"]] }, {})).toThrow(/unknown constant/);
  });

  it("refuses a structure that outgrows its declared size", () => {
    expect(() => layOut({ name: "X", size: 4, fields: [["a", "u32", 2]] }, {})).toThrow(/more than its size/);
  });
});
