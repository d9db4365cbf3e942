/**
 * The keys that seal datagrams, derived from the token's two keys (PROTOCOL §9). The token's keys
 * never seal anything themselves: each connection attempt seals under keys of its own, so that
 * a packet number starting again at 0 never meets a key it was used with before.
 *
 * - client -> server: ChaCha20(token c2s key, nonce = client nonce (8) || 0x00000000) — the client
 *   picks a random client nonce per attempt and sends it in its HELLO, so two attempts with one
 *   token (which the server refuses anyway) still never share a key;
 * - server -> client: ChaCha20(token s2c key, nonce = client nonce (8) || association id (u32
 *   LE)) — a new association gets a new random id, hence a new key, even for a client nonce seen
 *   before;
 * each the first 32 bytes of the keystream (block 0): ChaCha20 as a PRF, as RFC 8439 §2.6 uses it
 * for the Poly1305 key.
 */
import { KEY_BYTES } from "./aead.js";
import { chacha20Keystream } from "./xchacha.js";

export const CLIENT_NONCE_BYTES = 8;

export function clientToServerKey(tokenKey: Uint8Array, clientNonce: Uint8Array): Uint8Array {
  const nonce = new Uint8Array(12);
  nonce.set(clientNonce.subarray(0, CLIENT_NONCE_BYTES), 0);
  return chacha20Keystream(tokenKey, nonce, KEY_BYTES);
}

export function serverToClientKey(tokenKey: Uint8Array, clientNonce: Uint8Array, associationId: number): Uint8Array {
  const nonce = new Uint8Array(12);
  nonce.set(clientNonce.subarray(0, CLIENT_NONCE_BYTES), 0);
  new DataView(nonce.buffer).setUint32(8, associationId >>> 0, true);
  return chacha20Keystream(tokenKey, nonce, KEY_BYTES);
}
