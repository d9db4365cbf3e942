/**
 * Engine selection. The WASM engine is the default; the TypeScript reference engine is chosen
 * with `kind: "ts"` (tests, differential checks, environments without WebAssembly).
 */
import type { Engine, EngineConfig } from "./abi.js";
import { TsEngine } from "./ts-engine.js";

export type EngineKind = "wasm" | "ts";

let wasmFactory: ((config: EngineConfig) => Engine) | undefined;

/** Called by the WASM engine module when it is loaded (see wasm-engine.ts). */
export function registerWasmEngine(factory: (config: EngineConfig) => Engine): void {
  wasmFactory = factory;
}

export function createEngine(config: EngineConfig, kind: EngineKind = "wasm"): Engine {
  if (kind === "ts") return new TsEngine(config);
  if (!wasmFactory) return new TsEngine(config); // replaced once wasm-engine registers
  return wasmFactory(config);
}

export { TsEngine };
export * from "./abi.js";
export { sequenceGreaterThan, sequenceDiff } from "./sequence.js";
