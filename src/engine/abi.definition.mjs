// The engine ABI, defined once: the constants, enums, memory structures and record types shared
// by the WebAssembly engine (assembly/) and the TypeScript side (src/engine/). scripts/abi.mjs
// generates assembly/abi.generated.ts and src/engine/abi.generated.ts from this file at build
// time; nothing here is mirrored by hand on either side.
//
// Structure offsets are not written down: they follow from the field order and sizes, each
// field aligned to its own size. Records are RECORD_INTS i32s: type, slot, then the record's
// named fields in order (a null keeps a position unused so a field stays where decoders expect
// it). Wire meanings: docs/PROTOCOL.md.

/** @typedef {{ name: string, value: number, doc: string, as?: "u32" | "i32" | "usize" | "u16" | "u8" }} Constant */

/** Constants of the wire format and the engine's memory. `as` is the AssemblyScript type (default u32). */
export const constants = [
  { name: "WIRE_VERSION", value: 9, doc: "Wire version in CONNECT_REQUEST (PROTOCOL §4)." },
  { name: "PROTOCOL_MAGIC", value: 0x776b6361, doc: '"ackw" little-endian: the first half of every CRC prefix (PROTOCOL §1).' },
  { name: "MAX_DATAGRAM_BYTES", value: 1500, as: "usize", doc: "Largest datagram the engine reads or seals." },
  { name: "MIN_DATAGRAM_BYTES", value: 5, as: "usize", doc: "A type byte and the CRC: anything shorter is TooShort." },
  { name: "DATA_HEADER_BYTES", value: 9, as: "usize", doc: "DATA/KEEPALIVE header: type u8, sequence u16, ack u16, ackBits u32 (PROTOCOL §2)." },
  { name: "CRC_BYTES", value: 4, as: "usize", doc: "The CRC32C that ends every datagram." },
  { name: "DATA_OVERHEAD_BYTES", value: 13, as: "usize", doc: "DATA header + CRC: the fixed per-datagram overhead." },
  {
    name: "ACK_DELAY_TRAILER_BYTES", value: 2, as: "usize",
    doc: "A DATA frames area of exactly this length is a pure ack's ack delay, not frames (PROTOCOL §2): no frames area of 1..5 bytes is otherwise valid.",
  },
  { name: "ACK_DELAY_UNITS_PER_MS", value: 10, doc: "Ack delays on the wire count 0.1 ms: a u16 covers 6.5 s." },
  { name: "ACKS_VALID", value: 0x10, doc: "Type byte bit 4 of DATA and KEEPALIVE: the ack fields mean something (PROTOCOL §2)." },
  { name: "FRAME_HEADER_BYTES", value: 6, as: "usize", doc: "channel u8, flags u8, messageSeq u16, length u16 (PROTOCOL §3)." },
  { name: "FRAME_FLAG_KIND_MASK", value: 0x07, doc: "Frame flags bits 0-2: the delivery kind." },
  { name: "FRAME_FLAG_FRAGMENT", value: 0x08, doc: "Frame flags bit 3: fragIndex u16 and fragCount u16 follow messageSeq." },
  {
    name: "FRAME_FLAG_GAP", value: 0x10,
    doc: "Frame flags bit 4 (reliable-ordered only): the frame's messageSeq and the next count - 1 will never carry data; its payload is the u16 count (PROTOCOL §3).",
  },
  { name: "FRAME_FLAG_RESERVED", value: 0xe0, doc: "Frame flags bits 5-7: must be zero." },
  { name: "GAP_PAYLOAD_BYTES", value: 2, as: "usize", doc: "A GAP frame's payload: the u16 count of message sequences it skips." },
  { name: "FRAGMENT_EXTRA_BYTES", value: 4, as: "usize", doc: "fragIndex u16 + fragCount u16." },
  { name: "LATEST_STATE_EXTRA_BYTES", value: 4, as: "usize", doc: "The latest-state key u32." },
  { name: "SYSTEM_CHANNEL", value: 255, doc: "Channel of the transport's own frames (acks, clock, MTU probes)." },
  { name: "CONNECT_REQUEST_BYTES", value: 256, doc: "CONNECT_REQUEST is padded to this so no reply can be larger (anti-amplification)." },
  { name: "REBIND_BODY_BYTES", value: 16, doc: "Body of the three REBIND packets: u32 sessionId, u32 token low, u32 token high, u32 proof." },
  { name: "PUNCH_BODY_BYTES", value: 8, doc: "Body of NAT_PUNCH: the introducer's 8-byte token for the pair." },
  { name: "CONNECTION_KEY_BYTES", value: 8, doc: "A connection key (PROTOCOL §1): clientSalt u32, sessionId u32." },
  { name: "MAX_KEY_BYTES", value: 64, doc: "Longest key keySlot takes." },
  { name: "PACKET_WINDOW", value: 256, doc: "Packets remembered per direction for dedup and the ack scan. Power of two." },
  { name: "MESSAGE_WINDOW", value: 1024, doc: "Per-channel message window (reorder, dedup). Power of two, below 32768." },
  { name: "MAX_FRAGMENT_COUNT", value: 1024, doc: "A fragmented message spans at most one message window." },
  { name: "MAX_CHANNELS", value: 32, doc: "Channels an engine can be configured with." },
  { name: "WINDOW_ENTRY_PRESENT", value: 0x10000, doc: "Sequence-window entries are 0 (empty) or this | the 16-bit sequence held there; in the sent ring, this bit means in flight." },
  { name: "SENT_ELICITING", value: 0x20000, doc: "Sent-ring entry bit: the packet is ack-eliciting (it carries a congestion controller record; the RTO runs from the oldest such)." },
  { name: "SENT_LOST", value: 0x40000, doc: "Sent-ring entry bit: declared lost (no longer in flight); an ack of it is a late ack." },
  { name: "SENT_BYTES_SHIFT", value: 19, doc: "Sent-ring entry bits 19-29: the packet's size in bytes (at most MAX_DATAGRAM_BYTES < 2048)." },
  { name: "SLOT_FLAG_RECEIVED", value: 1, doc: "Slot flags bit 0: a packet was received, so the ack fields are valid." },
  { name: "CHANNEL_FLAG_DELIVERED", value: 1, doc: "Channel flags bit 0: something was delivered (sequenced kinds)." },
  { name: "RECORD_INTS", value: 8, doc: "A record is this many i32s." },
  { name: "DESCRIPTOR_INTS", value: 4, doc: "A receive descriptor: offset, length, slot (-1 = unknown), unused." },
  { name: "MAX_PARITY_BLOCKS", value: 256, doc: "Blocks one parity call XORs (their offsets are i32s in the scratch area)." },
  { name: "COUNTER_BYTES", value: 64, doc: "Size of the drop counters (a u32 per DropReason)." },
  { name: "SCRATCH_BYTES", value: 1024, doc: "Size of the scratch area (parity offsets, a slot's key, the sequences a loss call declared lost: at most PACKET_WINDOW i32s)." },
  { name: "RESERVED_LOW_BYTES", value: 65536, doc: "Linear memory below the layout: AssemblyScript's static data and stack." },
];

/** Enums: TypeScript gets a const enum, AssemblyScript constants named PREFIX + MEMBER. */
export const enums = [
  {
    name: "PacketType", as: "u32", prefix: "TYPE_",
    doc: "Packet types: the low nibble of byte 0 (PROTOCOL §1).",
    members: [
      ["Data", 0], ["ConnectRequest", 1], ["Challenge", 2], ["ConnectResponse", 3], ["Accept", 4], ["Deny", 5],
      ["Disconnect", 6], ["DisconnectAck", 7], ["NoConnection", 8], ["Keepalive", 9],
      ["RebindRequest", 10, "Client -> server from a new address: this connection is mine now (PROTOCOL §4, migration)."],
      ["RebindChallenge", 11, "Server -> the new address: prove you are there (a random token)."],
      ["RebindResponse", 12, "Client -> server from the new address: the token back; the connection moves."],
      ["NatPunch", 13, "Between two endpoints behind NATs: opens the sender's NAT for the peer (PROTOCOL §7)."],
    ],
  },
  {
    name: "DeliveryKind", as: "u32", prefix: "KIND_",
    doc: "Delivery kinds: frame flags bits 0-2 (PROTOCOL §3).",
    members: [
      ["Unreliable", 0], ["UnreliableSequenced", 1], ["ReliableUnordered", 2], ["ReliableOrdered", 3],
      ["ReliableSequenced", 4], ["LatestState", 5],
    ],
  },
  {
    name: "DropReason", as: "i32", prefix: "DROP_",
    doc: "Why a datagram or a frame was dropped; each has a counter.",
    members: [
      ["TooShort", 1], ["BadCrc", 2], ["UnknownType", 3], ["BadLength", 4], ["StalePacket", 5],
      ["DuplicatePacket", 6], ["MalformedFrame", 7], ["UnknownPeer", 8], ["StaleMessage", 9],
      ["DuplicateMessage", 10], ["TooFarAhead", 11],
    ],
  },
  {
    name: "SettleOutcome", as: "i32", prefix: "SETTLED_",
    doc: "How an ack settled a sent-ring entry (Settled records, acknowledge).",
    members: [
      ["None", 0, "Nothing to settle: not sent, already acked, or overwritten."],
      ["Acked", 1, "In flight, now acknowledged: delivered."],
      ["LateAck", 2, "Declared lost earlier, acknowledged now: the loss was spurious."],
    ],
  },
  {
    name: "InitResult", as: "i32", prefix: "INIT_",
    doc: "What the engine's init returns.",
    members: [
      ["Ok", 0],
      ["StaticDataOverlaps", 1, "The module's static data reaches into the host's layout: raise RESERVED_LOW_BYTES."],
      ["SlotStrideTooSmall", 2, "The host's slot stride is below the engine's per-slot state."],
      ["BadChannelCount", 3, "The channel count is outside 1..MAX_CHANNELS."],
    ],
  },
];

/** DROP_REASON_COUNT is one past the largest DropReason: the counters are indexed by reason. */
export const DROP_REASON_COUNT = 12;

/**
 * The body-length rule of each packet type (PROTOCOL §1), body = datagram - type byte - CRC:
 * exact: body == fixed; atLeast: body >= fixed; userData: body == fixed + a u16 userDataLength
 * read at datagram offset `at`, which is at most `max`.
 */
export const packetLengths = [
  { type: "Data", rule: "atLeast", fixed: 8 },
  { type: "ConnectRequest", rule: "exact", fixed: 251 },
  { type: "Challenge", rule: "exact", fixed: 20 },
  { type: "ConnectResponse", rule: "userData", fixed: 36, at: 35, max: 512 },
  { type: "Accept", rule: "userData", fixed: 10, at: 9, max: 512 },
  { type: "Deny", rule: "userData", fixed: 7, at: 6, max: 200 },
  { type: "Disconnect", rule: "userData", fixed: 7, at: 6, max: 512 },
  { type: "DisconnectAck", rule: "exact", fixed: 4 },
  { type: "NoConnection", rule: "exact", fixed: 6, doc: "the echoed sequence and CRC (PROTOCOL §4)" },
  { type: "Keepalive", rule: "exact", fixed: 8 },
  { type: "RebindRequest", rule: "exact", fixed: 16 },
  { type: "RebindChallenge", rule: "exact", fixed: 16 },
  { type: "RebindResponse", rule: "exact", fixed: 16 },
  { type: "NatPunch", rule: "exact", fixed: 8 },
];

/**
 * Memory structures. Each field is [name, type, count?, doc?]; `count` may name a constant.
 * TypeScript gets `const enum <name>Field` of byte offsets and `<NAME>_BYTES`; AssemblyScript
 * gets `<PREFIX><FIELD>: usize` offsets. A structure with `tail` ends with a variable part that
 * starts at the offset named by it.
 */
export const structures = [
  {
    name: "Config", prefix: "CONFIG_", size: 256,
    doc: "The config area the host writes before init (all u32 but the channel kinds).",
    fields: [
      ["Magic", "u32", 1, "first half of the CRC prefix"],
      ["ProtocolId", "u32", 1, "second half of the CRC prefix"],
      ["MaxSlots", "u32"],
      ["ChannelCount", "u32"],
      ["SlotStride", "u32"],
      ["RxArenaOffset", "u32"],
      ["DescriptorOffset", "u32", 1, "also where the rx arena ends"],
      ["RecordOffset", "u32"],
      ["MaxRecords", "u32"],
      ["TxArenaOffset", "u32"],
      ["SlotOffset", "u32", 1, "also where the tx arena ends"],
      ["CounterOffset", "u32"],
      ["Consumed", "u32", 1, "written by processBatch: datagrams fully processed"],
      ["ScratchOffset", "u32"],
      ["OrderedChannelCount", "u32"],
      ["RecordsPerDatagram", "u32", 1, "the most records one datagram can produce (layout.ts maxRecordsPerDatagram): processBatch stops before a datagram that might not fit"],
      ["ChannelKinds", "u8", "MAX_CHANNELS", "DeliveryKind per channel"],
    ],
  },
  {
    name: "Slot", prefix: "SLOT_", tail: "Channels",
    doc: "Per-connection state at slotOffset + slot * slotStride; the channels' state follows.",
    fields: [
      ["Flags", "u32", 1, "SLOT_FLAG_RECEIVED"],
      ["NextSendSequence", "u32"],
      ["MostRecentReceived", "u32"],
      ["CrcState", "u32", 1, "CRC state after the connection's prefix (PROTOCOL §1), before the final xor"],
      ["LargestAcked", "u32", 1, "sent ring: 0 before any ack, else WINDOW_ENTRY_PRESENT | the newest sequence acknowledged while in flight"],
      ["InFlight", "u32", 1, "sent ring: packets in flight (sealed, neither acked nor declared lost)"],
      ["BytesInFlight", "u32", 1, "sent ring: their bytes"],
      ["OldestSent", "u32", 1, "sent ring: no packet before this sequence is in flight (where loss scans start)"],
      ["Dispatched", "u32", 1, "sent ring: packets sealed"],
      ["Delivered", "u32", 1, "sent ring: packets acknowledged while in flight"],
      ["Dropped", "u32", 1, "sent ring: packets declared lost"],
      ["LateAcks", "u32", 1, "sent ring: packets acknowledged after they were declared lost"],
      ["ReceivedWindow", "u32", "PACKET_WINDOW / 32", "bit seq % PACKET_WINDOW (word bit / 32, bit bit % 32): that sequence of the PACKET_WINDOW up to MostRecentReceived was received"],
      ["SentWindow", "u32", "PACKET_WINDOW", "the sent ring (assembly/sent-ring.ts), index seq % PACKET_WINDOW: 0 (acked or never sent), else seq | bytes << SENT_BYTES_SHIFT | SENT_ELICITING (if so) | WINDOW_ENTRY_PRESENT (in flight) or SENT_LOST (declared lost)"],
      ["SentCrcs", "u32", "PACKET_WINDOW", "CRC of the newest packet sealed per index (checks a NO_CONNECTION echo)"],
      ["SentTimes", "f64", "PACKET_WINDOW", "the sent ring: when each packet was sealed (the host's clock, ms)"],
    ],
  },
  {
    name: "Channel", prefix: "CHANNEL_",
    doc: "Per-channel receive state at slot + SLOT_CHANNELS + channel * CHANNEL_BYTES.",
    fields: [
      ["Base", "u32", 1, "next expected messageSeq (ordered), highest seen (dedup kinds), newest delivered id (sequenced)"],
      ["Flags", "u32", 1, "CHANNEL_FLAG_DELIVERED"],
      ["Reserved", "u32", 2],
      ["Bitmap", "u8", "MESSAGE_WINDOW / 8", "bit seq % MESSAGE_WINDOW: held (ordered) or seen (dedup)"],
    ],
  },
];

/**
 * Records written by processBatch. Fields are i32s after type and slot; payload fields
 * (offset, length) are byte ranges in the receive arena.
 */
export const records = [
  {
    name: "DatagramDropped", id: 1,
    doc: "A datagram was dropped. The slot may be -1.",
    fields: [["reason", "DropReason"], ["datagram", "index in the batch"]],
  },
  {
    name: "PacketReceived", id: 2,
    doc: "A DATA or KEEPALIVE packet was accepted.",
    fields: [["sequence", "its packet sequence"], ["datagram", "index in the batch"], ["packetType", "PacketType"]],
  },
  {
    name: "Settled", id: 3,
    doc: "An ack settled one of our packets in the sent ring: exactly once per sequence (acked in flight, or late after it was declared lost).",
    fields: [["sequence", "the acknowledged packet sequence"], ["outcome", "SettleOutcome: Acked or LateAck"],
      ["largestAcked", "the slot's newest acknowledged sequence once this ack is counted (-1: none)"]],
  },
  {
    name: "Control", id: 4,
    doc: "A handshake or control packet passed its CRC and length checks. The slot may be -1.",
    fields: [["packetType", "PacketType"], ["datagram", "index in the batch"], null, null,
      ["offset", "the body: after the type byte"], ["length", "before the CRC"]],
  },
  {
    name: "Message", id: 5,
    doc: "Deliver now.",
    fields: [["channel"], ["messageSeq"], ["fragment", "(fragIndex << 16) | fragCount, 0 if not a fragment"],
      ["key", "latest-state key, 0 on other kinds"], ["offset", "payload in the receive arena"], ["length"]],
  },
  {
    name: "Hold", id: 6, sameLayoutAs: "Message",
    doc: "A reliable-ordered message arrived ahead of a gap: copy the payload now and hold it by (channel, messageSeq) until a Release names it.",
    fields: [["channel"], ["messageSeq"], ["fragment", "as Message"], ["key", "as Message"], ["offset"], ["length"]],
  },
  {
    name: "Release", id: 7,
    doc: "Deliver the held message: the gap before it has closed.",
    fields: [["channel"], ["messageSeq"]],
  },
  {
    name: "FrameDropped", id: 8,
    doc: "A frame of an accepted datagram was dropped.",
    fields: [["reason", "DropReason"], ["channel"], ["messageSeq"]],
  },
  {
    name: "Skip", id: 10,
    doc: "Reliable-ordered: a GAP reached the in-order point; messageSeq .. messageSeq + count - 1 carry nothing (drop what is held or partial for them) and count as delivered.",
    fields: [["channel"], ["messageSeq", "the first skipped"], ["count", "1..MAX_FRAGMENT_COUNT"]],
  },
  {
    name: "HoldGap", id: 11, sameLayoutAs: "Skip",
    doc: "Reliable-ordered: a GAP arrived ahead of the in-order point; hold a marker for each of its sequences (replacing what is held there) until its Release.",
    fields: [["channel"], ["messageSeq", "the first skipped"], ["count", "1..MAX_FRAGMENT_COUNT"]],
  },
  {
    name: "UnknownPeer", id: 9,
    doc: "DATA or KEEPALIVE from an address with no slot (its CRC cannot be checked without a key): answer NO_CONNECTION.",
    fields: [null, ["datagram", "index in the batch"], ["sequence", "its packet sequence"], ["crc", "its CRC field"]],
  },
];
