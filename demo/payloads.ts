/**
 * Self-checking payloads: every message carries what the receiver needs to prove it intact
 * (an FNV-1a checksum over its bytes, or SHA-256 for the bulk transfer) and where it belongs
 * in its stream (origin client, sequence). Contents derive from (seed, client, sequence), so a
 * receiver can also regenerate what the text should be. All integers little-endian.
 */

export const Kind = { Move: 0x4d, Snapshot: 0x53, Chat: 0x43, State: 0x45 } as const;

/** Channel indices in ackwire's DEFAULT_CHANNELS. */
export const Channel = { Chat: 0, Move: 1, State: 5, Bulk: 6 } as const;

export const BULK_BYTES = 1024 * 1024;
export const STATE_KEYS = 16;

/** FNV-1a, 32 bits, over bytes[start, end). */
export function fnv1a(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h >>> 0;
}

/** A 32-bit avalanche mix of two words (a murmur3-style finalizer over a + b * golden). */
export function mix(a: number, b: number): number {
  let h = (a ^ Math.imul(b, 0x9e3779b9)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const view = (b: Uint8Array): DataView => new DataView(b.buffer, b.byteOffset, b.byteLength);

function seal(bytes: Uint8Array): Uint8Array {
  view(bytes).setUint32(bytes.length - 4, fnv1a(bytes, 0, bytes.length - 4), true);
  return bytes;
}

function sealed(bytes: Uint8Array): boolean {
  return bytes.length >= 8 && view(bytes).getUint32(bytes.length - 4, true) === fnv1a(bytes, 0, bytes.length - 4);
}

// ---- movement: client -> server, 30 Hz, unreliable-sequenced --------------------------------
// kind u8 | client u8 | pad u16 | seq u32 | x f32 | y f32 | fnv u32   (20 bytes)

export interface Move {
  client: number;
  seq: number;
  x: number;
  y: number;
}

/** Where client `client` is at tick `seq`: a circle, so the server can re-derive it. */
export function positionAt(client: number, seq: number): { x: number; y: number } {
  const angle = seq / 30 + client;
  return { x: Math.fround(100 * Math.cos(angle)), y: Math.fround(100 * Math.sin(angle)) };
}

export function encodeMove(client: number, seq: number): Uint8Array {
  const b = new Uint8Array(20);
  const v = view(b);
  const p = positionAt(client, seq);
  b[0] = Kind.Move;
  b[1] = client;
  v.setUint32(4, seq, true);
  v.setFloat32(8, p.x, true);
  v.setFloat32(12, p.y, true);
  return seal(b);
}

export function decodeMove(b: Uint8Array): Move | undefined {
  if (b.length !== 20 || b[0] !== Kind.Move || !sealed(b)) return undefined;
  const v = view(b);
  const m = { client: b[1]!, seq: v.getUint32(4, true), x: v.getFloat32(8, true), y: v.getFloat32(12, true) };
  const p = positionAt(m.client, m.seq);
  return p.x === m.x && p.y === m.y ? m : undefined;
}

// ---- snapshot: server -> each client, 30 Hz, unreliable-sequenced ----------------------------
// kind u8 | count u8 | pad u16 | tick u32 | count x (client u32, x f32, y f32) | fnv u32

export function encodeSnapshot(tick: number, positions: readonly Move[]): Uint8Array {
  const b = new Uint8Array(12 + 12 * positions.length);
  const v = view(b);
  b[0] = Kind.Snapshot;
  b[1] = positions.length;
  v.setUint32(4, tick, true);
  positions.forEach((p, i) => {
    v.setUint32(8 + 12 * i, p.client, true);
    v.setFloat32(12 + 12 * i, p.x, true);
    v.setFloat32(16 + 12 * i, p.y, true);
  });
  return seal(b);
}

/** The snapshot's tick, or undefined if it fails its check. */
export function decodeSnapshot(b: Uint8Array): number | undefined {
  if (b.length < 12 || b[0] !== Kind.Snapshot || b.length !== 12 + 12 * b[1]! || !sealed(b)) return undefined;
  return view(b).getUint32(4, true);
}

// ---- chat: reliable-ordered, both ways -------------------------------------------------------
// kind u8 | origin u8 | textLen u16 | seq u32 | relaySeq u32 | text | fnv u32
// seq numbers the origin client's messages; relaySeq numbers the server's messages to one client
// (0 on the way up). The text is regenerated from (seed, origin, seq) and must match.

export interface Chat {
  origin: number;
  seq: number;
  relaySeq: number;
}

function chatText(seed: number, origin: number, seq: number): Uint8Array {
  let r = mix(mix(seed, origin + 1), seq);
  const length = 8 + (r % 180);
  const text = new Uint8Array(length);
  for (let i = 0; i < length; i++) {
    r = mix(r, i);
    text[i] = 0x20 + (r % 95); // printable ASCII
  }
  return text;
}

export function encodeChat(seed: number, chat: Chat): Uint8Array {
  const text = chatText(seed, chat.origin, chat.seq);
  const b = new Uint8Array(12 + text.length + 4);
  const v = view(b);
  b[0] = Kind.Chat;
  b[1] = chat.origin;
  v.setUint16(2, text.length, true);
  v.setUint32(4, chat.seq, true);
  v.setUint32(8, chat.relaySeq, true);
  b.set(text, 12);
  return seal(b);
}

export function decodeChat(seed: number, b: Uint8Array): Chat | undefined {
  if (b.length < 16 || b[0] !== Kind.Chat || !sealed(b)) return undefined;
  const v = view(b);
  const chat = { origin: b[1]!, seq: v.getUint32(4, true), relaySeq: v.getUint32(8, true) };
  const text = chatText(seed, chat.origin, chat.seq);
  if (v.getUint16(2, true) !== text.length || b.length !== 16 + text.length) return undefined;
  for (let i = 0; i < text.length; i++) if (b[12 + i] !== text[i]) return undefined;
  return chat;
}

// ---- latest-state entity: client -> server, keyed -------------------------------------------
// kind u8 | client u8 | key u16 | version u32 | value u32 | fnv u32   (16 bytes)

export interface EntityState {
  client: number;
  key: number;
  version: number;
  value: number;
}

export function stateValue(seed: number, client: number, key: number, version: number): number {
  return mix(mix(seed, (client << 16) | key), version);
}

export function encodeState(s: EntityState): Uint8Array {
  const b = new Uint8Array(16);
  const v = view(b);
  b[0] = Kind.State;
  b[1] = s.client;
  v.setUint16(2, s.key, true);
  v.setUint32(4, s.version, true);
  v.setUint32(8, s.value, true);
  return seal(b);
}

export function decodeState(b: Uint8Array): EntityState | undefined {
  if (b.length !== 16 || b[0] !== Kind.State || !sealed(b)) return undefined;
  const v = view(b);
  return { client: b[1]!, key: v.getUint16(2, true), version: v.getUint32(4, true), value: v.getUint32(8, true) };
}

// ---- bulk: one 1 MiB reliable message, seeded bytes, the last 32 are their SHA-256 ----------

export function bulkBody(seed: number, client: number): Uint8Array {
  const body = new Uint8Array(BULK_BYTES - 32);
  const words = new DataView(body.buffer);
  let r = mix(seed, 0xb01c + client);
  for (let i = 0; i + 4 <= body.length; i += 4) {
    r = mix(r, i);
    words.setUint32(i, r, true);
  }
  return body;
}
