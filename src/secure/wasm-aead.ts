/**
 * ChaCha20-Poly1305 (RFC 8439) in WebAssembly: the `PacketAead` the secure layer uses per
 * packet. The module is assembly/aead/ (its own small module, not the engine's), loaded from the
 * generated base64 so Node, Bun and Deno load it the same way, and instantiated synchronously on
 * first use: one instance per thread, one fixed 64 KiB page that never grows, no imports.
 *
 * A call copies the key, the associated data and the payload into fixed regions of the module's
 * memory, makes one exported call that does the whole seal (or open), and copies the result out.
 * Limits: plaintext up to WASM_AEAD_MAX_PLAINTEXT (2048) bytes, associated data up to
 * WASM_AEAD_MAX_AD (64) bytes. seal() throws a RangeError on anything out of range; open()
 * never throws and returns -1 instead (a too-long datagram is just one that does not open).
 *
 * Tested against `nobleAead` (./aead.ts) in test/secure/aead.test.ts.
 */
import { MAX_PACKET_NUMBER, KEY_BYTES, TAG_BYTES, type PacketAead } from "./aead.js";
import { base64ToBytes } from "../engine/wasm-engine.js";
import { WASM_AEAD_BASE64 } from "./wasm-aead-bytes.generated.js";

/** Largest plaintext wasmAead seals (and largest sealed payload it opens, minus the tag). */
export const WASM_AEAD_MAX_PLAINTEXT = 2048;
/** Largest associated data wasmAead accepts. */
export const WASM_AEAD_MAX_AD = 64;

// The few WebAssembly JS-API types used here (tsconfig has no DOM lib; every runtime has these).
interface WasmModule {
  readonly __brand?: "WebAssembly.Module";
}
interface WasmInstance {
  readonly exports: Record<string, unknown>;
}
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => WasmInstance;
};

/** The module's exports (assembly/aead/index.ts). Lengths are bytes; -1 means rejected. */
interface AeadExports {
  memory: { readonly buffer: ArrayBuffer };
  keyOffset(): number;
  nonceOffset(): number;
  adOffset(): number;
  dataOffset(): number;
  tagOffset(): number;
  maxData(): number;
  maxAd(): number;
  seal(adLen: number, len: number, pnLo: number, pnHi: number): number;
  open(adLen: number, sealedLen: number, pnLo: number, pnHi: number): number;
  sealNonce(adLen: number, len: number): number;
  openNonce(adLen: number, sealedLen: number): number;
  chacha20(counter: number, len: number): number;
  poly1305(len: number): number;
}

interface AeadInstance {
  readonly wasm: AeadExports;
  /** The module's whole memory (one page, never grows, so this view never detaches). */
  readonly mem: Uint8Array;
  readonly key: number;
  readonly nonce: number;
  readonly ad: number;
  readonly data: number;
  readonly tag: number;
}

let instance: AeadInstance | undefined;

function load(): AeadInstance {
  const module = new WebAssembly.Module(base64ToBytes(WASM_AEAD_BASE64));
  const wasm = new WebAssembly.Instance(module, {}).exports as unknown as AeadExports;
  if (wasm.maxData() !== WASM_AEAD_MAX_PLAINTEXT || wasm.maxAd() !== WASM_AEAD_MAX_AD)
    throw new Error("src/secure/wasm-aead.ts and assembly/aead/index.ts disagree on the size limits: rebuild");
  return {
    wasm,
    mem: new Uint8Array(wasm.memory.buffer),
    key: wasm.keyOffset(),
    nonce: wasm.nonceOffset(),
    ad: wasm.adOffset(),
    data: wasm.dataOffset(),
    tag: wasm.tagOffset(),
  };
}

/** The module instance, created on first use. */
function aead(): AeadInstance {
  return (instance ??= load());
}

const TWO_32 = 0x1_0000_0000;

/** The module, with the key, associated data and payload copied into their regions. */
function loaded(key: Uint8Array, ad: Uint8Array, data: Uint8Array): AeadInstance {
  const a = aead();
  a.mem.set(key, a.key);
  a.mem.set(ad, a.ad);
  a.mem.set(data, a.data);
  return a;
}

function validPn(pn: number): boolean {
  return Number.isInteger(pn) && pn >= 0 && pn <= MAX_PACKET_NUMBER;
}

export const wasmAead: PacketAead = {
  seal(key, pn, ad, plaintext, out, outOffset) {
    const len = plaintext.length;
    if (key.length !== KEY_BYTES) throw new RangeError(`wasmAead.seal: the key must be ${KEY_BYTES} bytes, got ${key.length}`);
    if (!validPn(pn)) throw new RangeError(`wasmAead.seal: pn must be an integer in 0..2^53-1, got ${pn}`);
    if (ad.length > WASM_AEAD_MAX_AD)
      throw new RangeError(`wasmAead.seal: associated data is ${ad.length} bytes, over ${WASM_AEAD_MAX_AD}`);
    if (len > WASM_AEAD_MAX_PLAINTEXT)
      throw new RangeError(`wasmAead.seal: plaintext is ${len} bytes, over ${WASM_AEAD_MAX_PLAINTEXT}`);
    if (!(Number.isInteger(outOffset) && outOffset >= 0 && outOffset + len + TAG_BYTES <= out.length))
      throw new RangeError(`wasmAead.seal: out has no room for ${len + TAG_BYTES} bytes at offset ${outOffset}`);
    const a = loaded(key, ad, plaintext);
    const mem = a.mem;
    // pn < 2^53: `>>> 0` takes it modulo 2^32 exactly, and the high word is < 2^21.
    const n = a.wasm.seal(ad.length, len, pn >>> 0, (pn / TWO_32) >>> 0);
    out.set(mem.subarray(a.data, a.data + n), outOffset);
    return n;
  },

  open(key, pn, ad, sealed, out) {
    const sealedLen = sealed.length;
    if (
      key.length !== KEY_BYTES ||
      !validPn(pn) ||
      ad.length > WASM_AEAD_MAX_AD ||
      sealedLen < TAG_BYTES ||
      sealedLen > WASM_AEAD_MAX_PLAINTEXT + TAG_BYTES ||
      sealedLen - TAG_BYTES > out.length
    )
      return -1;
    const a = loaded(key, ad, sealed);
    const mem = a.mem;
    const n = a.wasm.open(ad.length, sealedLen, pn >>> 0, (pn / TWO_32) >>> 0);
    if (n < 0) return -1;
    out.set(mem.subarray(a.data, a.data + n), 0);
    return n;
  },
};

function nonceArg(nonce: Uint8Array): Uint8Array {
  if (nonce.length !== 12) throw new RangeError(`the nonce must be 12 bytes, got ${nonce.length}`);
  return nonce;
}

function keyArg(key: Uint8Array): Uint8Array {
  if (key.length !== KEY_BYTES) throw new RangeError(`the key must be ${KEY_BYTES} bytes, got ${key.length}`);
  return key;
}

function dataArg(data: Uint8Array, max: number): Uint8Array {
  if (data.length > max) throw new RangeError(`${data.length} bytes is over the limit of ${max}`);
  return data;
}

/**
 * The module's other entry points (arbitrary 12-byte nonces, ChaCha20 and Poly1305 alone): for
 * the RFC 8439 test vectors, and for what xchacha.ts builds on them (a connection's keys, connect
 * tokens). Not for the packet path: they allocate their results.
 */
export const wasmAeadInternals = {
  /** AEAD seal with any 12-byte nonce: ciphertext || tag. */
  seal(key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, plaintext: Uint8Array): Uint8Array {
    const a = aead();
    a.mem.set(keyArg(key), a.key);
    a.mem.set(nonceArg(nonce), a.nonce);
    a.mem.set(dataArg(ad, WASM_AEAD_MAX_AD), a.ad);
    a.mem.set(dataArg(plaintext, WASM_AEAD_MAX_PLAINTEXT), a.data);
    const n = a.wasm.sealNonce(ad.length, plaintext.length);
    return a.mem.slice(a.data, a.data + n);
  },
  /** AEAD open with any 12-byte nonce: the plaintext, or null when the tag does not match. */
  open(key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, sealed: Uint8Array): Uint8Array | null {
    const a = aead();
    a.mem.set(keyArg(key), a.key);
    a.mem.set(nonceArg(nonce), a.nonce);
    a.mem.set(dataArg(ad, WASM_AEAD_MAX_AD), a.ad);
    a.mem.set(dataArg(sealed, WASM_AEAD_MAX_PLAINTEXT + TAG_BYTES), a.data);
    const n = a.wasm.openNonce(ad.length, sealed.length);
    return n < 0 ? null : a.mem.slice(a.data, a.data + n);
  },
  /** `data` XOR the ChaCha20 keystream of (key, nonce) from block `counter` (RFC 8439 §2.4). */
  chacha20(key: Uint8Array, nonce: Uint8Array, counter: number, data: Uint8Array): Uint8Array {
    const a = aead();
    a.mem.set(keyArg(key), a.key);
    a.mem.set(nonceArg(nonce), a.nonce);
    a.mem.set(dataArg(data, WASM_AEAD_MAX_PLAINTEXT), a.data);
    a.wasm.chacha20(counter >>> 0, data.length);
    return a.mem.slice(a.data, a.data + data.length);
  },
  /** The Poly1305 tag of `message` under the 32-byte one-time key r || s (RFC 8439 §2.5). */
  poly1305(oneTimeKey: Uint8Array, message: Uint8Array): Uint8Array {
    const a = aead();
    a.mem.set(keyArg(oneTimeKey), a.key);
    a.mem.set(dataArg(message, WASM_AEAD_MAX_PLAINTEXT), a.data);
    a.wasm.poly1305(message.length);
    return a.mem.slice(a.tag, a.tag + TAG_BYTES);
  },
};
