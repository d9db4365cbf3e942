/**
 * The wire codec: every byte layout of docs/PROTOCOL.md the session and the channels write or
 * read themselves (the engine seals and parses DATA headers and frames; the relay, §8, and the
 * secure layer, §9, keep their own in src/relay/wire.ts and src/secure/wire.ts).
 *
 * - bytes.ts: little-endian integers and doubles;
 * - datagram.ts: §1-2, the CRC field, the DATA header's ack, a pure ack's ack delay, ack-only packets;
 * - frame.ts: §3, channel frame headers, GAP frames, the frames-area walk;
 * - system.ts: §3, the system channel's messages;
 * - control.ts: §1's connection key, §4 handshake, §5 REBIND, §7 NAT_PUNCH;
 * - control-server.ts: §4, what only a server reads (REQUEST, RESPONSE) and writes (CHALLENGE,
 *   ACCEPT, DENY).
 */
export * from "./bytes.js";
export * from "./datagram.js";
export * from "./frame.js";
export * from "./system.js";
export * from "./control.js";
export * from "./control-server.js";
