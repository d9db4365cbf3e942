/**
 * Engine selection. The WASM engine is the default; the TypeScript reference engine is chosen
 * with `kind: "ts"` (tests, differential checks, environments without WebAssembly).
 *
 * The release WASM module is compiled once when this module loads (top-level await), so
 * `createEngine` stays synchronous: each engine is one `WebAssembly.Instance` over its own memory.
 */
import type { Engine, EngineConfig } from "./abi.js";
import { TsEngine } from "./ts-engine.js";
import { compileWasmEngine, createWasmEngineSync, EngineUsageError } from "./wasm-engine.js";

export type EngineKind = "wasm" | "ts";

let wasmFactory: ((config: EngineConfig) => Engine) | undefined;
let wasmLoadError: unknown;

/** Replace the WASM factory (e.g. tests that want the debug build everywhere). */
export function registerWasmEngine(factory: (config: EngineConfig) => Engine): void {
  wasmFactory = factory;
}

const hasWebAssembly = typeof (globalThis as { WebAssembly?: unknown }).WebAssembly !== "undefined";
if (hasWebAssembly) {
  try {
    await compileWasmEngine("release");
    wasmFactory ??= (config) => createWasmEngineSync(config, "release");
  } catch (error) {
    wasmLoadError = error;
  }
}

export function createEngine(config: EngineConfig, kind: EngineKind = "wasm"): Engine {
  if (kind === "ts") return new TsEngine(config);
  if (wasmFactory) return wasmFactory(config);
  if (!hasWebAssembly) return new TsEngine(config); // no WebAssembly in this environment
  throw new EngineUsageError(`the WASM engine failed to load (${String(wasmLoadError)}): pass kind "ts" to use the TypeScript engine`);
}

export { TsEngine };
export { WasmEngine, createWasmEngine, compileWasmEngine, EngineUsageError } from "./wasm-engine.js";
export * from "./abi.js";
export { sequenceGreaterThan, sequenceDiff } from "./sequence.js";
