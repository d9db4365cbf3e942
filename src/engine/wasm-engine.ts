/**
 * The WebAssembly engine: the AssemblyScript build of `assembly/` behind the `Engine` interface
 * of ./abi.ts, over one imported `WebAssembly.Memory` sized from the layout with
 * initial = maximum, so it never grows and every typed view made here stays attached.
 *
 * This is the hand-written, typed ABI module (STYLE.md): one call per batch or per sealed
 * packet, numbers only, no strings, no per-call allocation. The WASM bytes come from a
 * generated module (base64), so Node, Bun and Deno load them the same way.
 */
import { checkKeySlot, EngineUsageError } from "./layout.js";
import {
  DATA_OVERHEAD_BYTES,
  MAX_CHANNELS,
  MAX_DATAGRAM_BYTES,
  MAX_KEY_BYTES,
  PacketType,
  InitResult,
  ConfigField,
  SlotField,
  PACKET_WINDOW,
  type SettleOutcome,
  RECORD_INTS,
  SCRATCH_BYTES,
  type DropReason,
  type Engine,
  type EngineConfig,
  type Layout,
} from "./abi.js";
import {
  EngineConfigError,
  checkEngineConfig,
  computeLayout,
  isOrdered,
  memoryPages,
  scratchOffsetOf,
  writeConfigArea,
} from "./layout.js";
import { WASM_RELEASE_BASE64 } from "./wasm-bytes-release.generated.js";

// The few WebAssembly JS-API types used here (tsconfig has no DOM lib; every runtime has these).
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}
interface WasmModule {
  readonly __brand?: "WebAssembly.Module";
}
interface WasmInstance {
  readonly exports: Record<string, unknown>;
}
declare const WebAssembly: {
  Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory;
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => WasmInstance;
  compile(bytes: Uint8Array): Promise<WasmModule>;
  instantiate(module: WasmModule, imports: object): Promise<WasmInstance>;
};

/** The engine's exports (assembly/batch.ts). */
interface EngineExports {
  dataEnd(): number;
  init(configOffset: number): number;
  resetSlot(slot: number, initialSequence: number): void;
  keySlot(slot: number, length: number): number;
  processBatch(count: number): number;
  sealData(slot: number, offset: number, framesLength: number, type: number, now: number, eliciting: number): number;
  acknowledge(slot: number, sequence: number): number;
  detectLosses(slot: number, now: number, timeoutMs: number, timeThresholdMs: number, packetThreshold: number): number;
  evictNext(slot: number): number;
  sealControl(offset: number, length: number): number;
  crc32c(offset: number, length: number): number;
  parity(dest: number, count: number, length: number): number;
}

export type WasmBuild = "release" | "debug";

export { EngineUsageError };

const INIT_ERRORS: Record<number, string> = {
  [InitResult.StaticDataOverlaps]: "the WASM module's static data overlaps the layout: raise RESERVED_LOW_BYTES in src/engine/abi.definition.mjs",
  [InitResult.SlotStrideTooSmall]: "slotStride is smaller than the engine's per-slot state: src/engine/layout.ts and assembly/layout.ts disagree",
  [InitResult.BadChannelCount]: `channel count must be 1..${MAX_CHANNELS}`,
};

const modules = new Map<WasmBuild, Promise<WasmModule>>();
const compiled = new Map<WasmBuild, WasmModule>();

async function wasmBytes(build: WasmBuild): Promise<Uint8Array> {
  if (build === "release") return base64ToBytes(WASM_RELEASE_BASE64);
  // The debug build (bounds checks on) is only loaded by tests, so it is not bundled with release.
  const { WASM_DEBUG_BASE64 } = await import("./wasm-bytes-debug.generated.js");
  return base64ToBytes(WASM_DEBUG_BASE64);
}

/** Compile a build once per process; later engines instantiate the cached module. */
export function compileWasmEngine(build: WasmBuild = "release"): Promise<WasmModule> {
  let pending = modules.get(build);
  if (!pending) {
    pending = wasmBytes(build)
      .then((bytes) => WebAssembly.compile(bytes))
      .then((module) => {
        compiled.set(build, module);
        return module;
      });
    modules.set(build, pending);
  }
  return pending;
}

/** Create a WASM engine (async: compiles the build on first use). */
export async function createWasmEngine(config: EngineConfig, options: { build?: WasmBuild } = {}): Promise<WasmEngine> {
  const build = options.build ?? "release";
  const module = await compileWasmEngine(build);
  return new WasmEngine(config, module, build);
}

/** Create a WASM engine synchronously; the build must have been compiled (compileWasmEngine). */
export function createWasmEngineSync(config: EngineConfig, build: WasmBuild = "release"): WasmEngine {
  const module = compiled.get(build);
  if (!module)
    throw new EngineUsageError(`the ${build} WASM build is not compiled yet: await compileWasmEngine("${build}") first`);
  return new WasmEngine(config, module, build);
}

export class WasmEngine implements Engine {
  readonly kind = "wasm" as const;
  readonly build: WasmBuild;
  readonly layout: Layout;
  readonly bytes: Uint8Array;
  readonly descriptors: Int32Array;
  readonly records: Int32Array;
  readonly u32: Uint32Array;
  readonly f64: Float64Array;
  readonly lost: Int32Array;
  private readonly counters: Uint32Array;
  private readonly scratch: Int32Array;
  private readonly wasm: EngineExports;
  private readonly maxSlots: number;
  private readonly batchDatagrams: number;

  constructor(config: EngineConfig, module: WasmModule, build: WasmBuild) {
    checkEngineConfig(config);
    this.build = build;
    const L = computeLayout(config);
    this.layout = L;
    const pages = memoryPages(L);
    // initial = maximum: the memory never grows, so views never detach.
    const memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
    const instance = new WebAssembly.Instance(module, { env: { memory } });
    this.wasm = instance.exports as unknown as EngineExports;
    const buffer = memory.buffer;
    this.bytes = new Uint8Array(buffer);
    this.descriptors = new Int32Array(buffer, L.descriptorOffset, (L.recordOffset - L.descriptorOffset) >> 2);
    this.records = new Int32Array(buffer, L.recordOffset, L.maxRecords * RECORD_INTS);
    this.counters = new Uint32Array(buffer, L.counterOffset, 16);
    this.scratch = new Int32Array(buffer, scratchOffsetOf(L), SCRATCH_BYTES >> 2);
    this.u32 = new Uint32Array(buffer);
    this.f64 = new Float64Array(buffer);
    this.lost = new Int32Array(buffer, scratchOffsetOf(L), PACKET_WINDOW);
    this.maxSlots = config.maxSlots;
    this.batchDatagrams = config.batchDatagrams ?? 64;
    if (this.wasm.dataEnd() > L.configOffset) throw new EngineConfigError(INIT_ERRORS[InitResult.StaticDataOverlaps]);
    writeConfigArea(new DataView(buffer), L, config, config.channels.filter(isOrdered).length);
    const status = this.wasm.init(L.configOffset);
    if (status !== InitResult.Ok) throw new EngineConfigError(INIT_ERRORS[status] ?? `engine init failed (${status})`);
  }

  processBatch(count: number): number {
    if (!(count >= 0 && count <= this.batchDatagrams && Number.isInteger(count)))
      throw new EngineUsageError(`processBatch(count): count must be an integer in 0..${this.batchDatagrams}, got ${count}`);
    return this.wasm.processBatch(count);
  }

  consumed(): number {
    return this.u32[(this.layout.configOffset + ConfigField.Consumed) >> 2];
  }

  sealData(slot: number, offset: number, framesLength: number, type: PacketType, now = 0, eliciting = false): number {
    const seq = this.wasm.sealData(slot, offset, framesLength, type, now, eliciting ? 1 : 0);
    if (seq < 0)
      throw new EngineUsageError(
        `sealData(${slot}, ${offset}, ${framesLength}, ${type}): needs slot 0..${this.maxSlots - 1}, type DATA (0) or ` +
          `KEEPALIVE (9, framesLength 0), and the packet (${DATA_OVERHEAD_BYTES} + framesLength <= ${MAX_DATAGRAM_BYTES} bytes) inside the tx arena`,
      );
    return seq;
  }

  acknowledge(slot: number, sequence: number): SettleOutcome {
    this.checkSlot("acknowledge", slot);
    return this.wasm.acknowledge(slot, sequence & 0xffff);
  }

  detectLosses(slot: number, now: number, timeoutMs: number, timeThresholdMs: number, packetThreshold: number): number {
    this.checkSlot("detectLosses", slot);
    if (!(packetThreshold >= 1)) throw new EngineUsageError(`detectLosses: packetThreshold must be at least 1, got ${packetThreshold}`);
    return this.wasm.detectLosses(slot, now, timeoutMs, timeThresholdMs, Math.min(packetThreshold, 0x7fffffff) | 0);
  }

  evictNext(slot: number): number {
    this.checkSlot("evictNext", slot);
    return this.wasm.evictNext(slot);
  }

  private checkSlot(call: string, slot: number): void {
    if (!(Number.isInteger(slot) && slot >= 0 && slot < this.maxSlots))
      throw new EngineUsageError(`${call}(${slot}): slot must be an integer in 0..${this.maxSlots - 1}`);
  }

  sealControl(offset: number, length: number): number {
    const total = this.wasm.sealControl(offset, length);
    if (total < 0)
      throw new EngineUsageError(
        `sealControl(${offset}, ${length}): the packet and its 4 CRC bytes must fit in the tx arena and in ${MAX_DATAGRAM_BYTES} bytes`,
      );
    return total;
  }

  resetSlot(slot: number, initialSequence: number): void {
    this.checkSlot("resetSlot", slot);
    this.wasm.resetSlot(slot, initialSequence & 0xffff);
  }

  keySlot(slot: number, key: Uint8Array): void {
    checkKeySlot(slot, key, this.maxSlots, MAX_KEY_BYTES);
    this.bytes.set(key, scratchOffsetOf(this.layout));
    this.wasm.keySlot(slot, key.length);
  }

  sentCrc(slot: number, sequence: number): number {
    if (!(slot >= 0 && slot < this.maxSlots)) return 0;
    return this.u32[(this.layout.slotOffset + slot * this.layout.slotStride + SlotField.SentCrcs) / 4 + (sequence & (PACKET_WINDOW - 1))];
  }

  dropCount(reason: DropReason): number {
    return this.counters[reason];
  }

  crc32c(offset: number, length: number): number {
    if (!(offset >= 0 && length >= 0 && offset + length <= this.bytes.length))
      throw new EngineUsageError(`crc32c(${offset}, ${length}): range outside the engine memory`);
    return this.wasm.crc32c(offset, length) >>> 0;
  }

  parity(dest: number, offsets: readonly number[], length: number): void {
    const end = this.bytes.length;
    if (offsets.length > this.scratch.length || !(length >= 0 && dest >= 0 && dest + length <= end))
      throw new EngineUsageError(`parity: at most ${this.scratch.length} blocks, all inside the engine memory`);
    for (let i = 0; i < offsets.length; i++) {
      const o = offsets[i];
      if (!(o >= 0 && o + length <= end)) throw new EngineUsageError(`parity: block ${i} at ${o} is outside the engine memory`);
      this.scratch[i] = o;
    }
    this.wasm.parity(dest, offsets.length, length);
  }
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Decode standard base64 (load time only; no atob/Buffer so every runtime behaves the same). */
export function base64ToBytes(text: string): Uint8Array {
  const lookup = new Uint8Array(128);
  for (let i = 0; i < BASE64.length; i++) lookup[BASE64.charCodeAt(i)] = i;
  let end = text.length;
  while (end > 0 && text[end - 1] === "=") end--;
  const out = new Uint8Array((end * 3) >> 2);
  let bits = 0;
  let value = 0;
  let o = 0;
  for (let i = 0; i < end; i++) {
    value = (value << 6) | lookup[text.charCodeAt(i)];
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (value >> bits) & 0xff;
    }
  }
  return out;
}
