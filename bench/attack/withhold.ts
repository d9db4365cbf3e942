// What the receive-budget attackers (attackers.ts) withhold: every datagram carrying a fragment
// of their first message, so the server holds all that follows it for ordering.
import { PacketType } from "../../src/engine/abi.js";

/** The first message's bytes are all FIRST_BYTE, the others' all OTHER_BYTE. */
export const FIRST_BYTE = 1;
export const OTHER_BYTE = 7;

/**
 * A DATA datagram with a fragment of the first message: a run of 32 bytes of FIRST_BYTE anywhere
 * (a fragment of it may share a datagram with other frames). The type is byte 0's low nibble
 * (PROTOCOL §2): 0x10 (ACKS_VALID) is set on every packet sent once the peer's first one has
 * arrived, resends included.
 */
export function carriesFirst(b: Uint8Array): boolean {
  if (b.length === 0 || (b[0]! & 0x0f) !== PacketType.Data) return false;
  let run = 0;
  for (let i = 0; i < b.length; i++) {
    if (b[i] !== FIRST_BYTE) run = 0;
    else if (++run >= 32) return true;
  }
  return false;
}
