/**
 * The reference `PacketAead`, on the audited @noble/ciphers (a devDependency): the tests and
 * benchmarks check wasmAead (./wasm-aead.ts) against it. Nothing the package exports imports
 * this module, and the package does not ship it.
 */
import { chacha20poly1305 } from "@noble/ciphers/chacha.js";
import { packetNonce, TAG_BYTES, validPacketNumber, type PacketAead } from "./aead.js";

/** The reference implementation, on @noble/ciphers (about 6 us per 100 B packet on Node). */
export const nobleAead: PacketAead = {
  seal(key, pn, ad, plaintext, out, outOffset) {
    if (!validPacketNumber(pn)) throw new RangeError(`packet number must be an integer in 0..2^53-1, got ${pn}`);
    const sealed = chacha20poly1305(key, packetNonce(pn), ad).encrypt(plaintext);
    out.set(sealed, outOffset);
    return sealed.length;
  },
  open(key, pn, ad, sealed, out) {
    if (sealed.length < TAG_BYTES || !validPacketNumber(pn)) return -1;
    try {
      const plain = chacha20poly1305(key, packetNonce(pn), ad).decrypt(sealed);
      out.set(plain, 0);
      return plain.length;
    } catch {
      return -1;
    }
  },
};
