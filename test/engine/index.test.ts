// createEngine: WASM by default (synchronously, the module is compiled at import), TS by option.
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/index.js";
import { config } from "./helpers.js";

describe("createEngine", () => {
  it("returns the WASM engine by default and the TS engine on request", () => {
    const wasm = createEngine(config());
    const ts = createEngine(config(), "ts");
    expect(wasm.kind).toBe("wasm");
    expect(ts.kind).toBe("ts");
    expect(wasm.layout).toEqual(ts.layout);
    expect(wasm.crc32c(wasm.layout.txArenaOffset, 0)).toBe(0);
  });

  it("misuse gets a typed error that says what to do", () => {
    const wasm = createEngine(config({ maxSlots: 2 }));
    expect(() => wasm.resetSlot(2, 0)).toThrowError(expect.objectContaining({ code: "ERR_ENGINE_USAGE" }));
    expect(() => wasm.sealData(0, 0, 0, 0)).toThrowError(/tx arena/);
  });
});
