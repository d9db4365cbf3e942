// Where everything lives in linear memory. The host computes the layout (src/engine/layout.ts),
// writes it into the config area, and calls `init(configOffset)` once; the engine reads the
// numbers from there, never allocates and never grows memory. The field offsets below mirror
// ConfigField / SlotField / ChannelField in src/engine/layout.ts exactly.

// Config area fields (u32, byte offsets from configOffset).
export const CONFIG_MAGIC: usize = 0;
export const CONFIG_PROTOCOL_ID: usize = 4;
export const CONFIG_MAX_SLOTS: usize = 8;
export const CONFIG_CHANNEL_COUNT: usize = 12;
export const CONFIG_SLOT_STRIDE: usize = 16;
export const CONFIG_RX_ARENA: usize = 20;
export const CONFIG_DESCRIPTORS: usize = 24;
export const CONFIG_RECORDS: usize = 28;
export const CONFIG_MAX_RECORDS: usize = 32;
export const CONFIG_TX_ARENA: usize = 36;
export const CONFIG_SLOTS: usize = 40;
export const CONFIG_COUNTERS: usize = 44;
export const CONFIG_CONSUMED: usize = 48;
export const CONFIG_SCRATCH: usize = 52;
export const CONFIG_ORDERED_CHANNELS: usize = 56;
/** u8[32]: delivery kind per channel. */
export const CONFIG_CHANNEL_KINDS: usize = 64;
/** The scratch area holds i32 offsets for `parity`. */
export const MAX_PARITY_BLOCKS: u32 = 256;

// Per-slot state at slotOffset + slot * slotStride.
/** u32 bit 0: has received a packet (the ack fields are valid from then on). */
export const SLOT_FLAGS: usize = 0;
export const SLOT_NEXT_SEND: usize = 4;
export const SLOT_MOST_RECENT_RECEIVED: usize = 8;
/** u32: the CRC state after this connection's prefix (protocol prefix + connection key), before
 *  the final xor: DATA and KEEPALIVE of the slot are sealed and checked from it (PROTOCOL §1). */
export const SLOT_CRC_STATE: usize = 12;
/** u32[256], index seq % 256: 0 = empty, else 0x10000 | seq (seed 002's sequence buffer). */
export const SLOT_RX_WINDOW: usize = 16;
/** u32[256]: 0x10000 | seq while in flight, 0 once acked or never sent. */
export const SLOT_TX_WINDOW: usize = 16 + 256 * 4;
/** u32[256], index seq % 256: the CRC of the newest packet sealed with that index (the
 *  NO_CONNECTION echo is checked against it, PROTOCOL §4). */
export const SLOT_TX_CRCS: usize = 16 + 256 * 8;
export const SLOT_CHANNELS: usize = 16 + 256 * 12;
export const SLOT_FLAG_RECEIVED: u32 = 1;
export const ENTRY_PRESENT: u32 = 0x10000;

// Per-channel state at slot + SLOT_CHANNELS + channel * CHANNEL_STRIDE.
/** u32: next expected (ordered), highest seen (dedup kinds), newest delivered id (sequenced). */
export const CHANNEL_BASE: usize = 0;
/** u32 bit 0: something delivered (sequenced kinds). */
export const CHANNEL_FLAGS: usize = 4;
/** 1024 bits, bit (seq % 1024) at byte bit>>3, bit bit&7 (little-endian u32 words agree). */
export const CHANNEL_BITMAP: usize = 16;
export const CHANNEL_STRIDE: usize = 16 + 128;

export const PACKET_WINDOW: u32 = 256;
export const MESSAGE_WINDOW: u32 = 1024;

export let configOffset: usize = 0;
export let counterOffset: usize = 0;
export let rxStart: usize = 0;
export let rxEnd: usize = 0;
export let descriptorOffset: usize = 0;
export let recordOffset: usize = 0;
export let maxRecords: u32 = 0;
export let txStart: usize = 0;
export let txEnd: usize = 0;
export let slotOffset: usize = 0;
export let slotStride: usize = 0;
export let maxSlots: i32 = 0;
export let channelCount: u32 = 0;
export let orderedChannels: u32 = 0;
export let scratchOffset: usize = 0;

/** Read the layout the host wrote into the config area. */
export function readLayout(config: usize): void {
  configOffset = config;
  maxSlots = load<i32>(config + CONFIG_MAX_SLOTS);
  channelCount = load<u32>(config + CONFIG_CHANNEL_COUNT);
  slotStride = <usize>load<u32>(config + CONFIG_SLOT_STRIDE);
  rxStart = <usize>load<u32>(config + CONFIG_RX_ARENA);
  descriptorOffset = <usize>load<u32>(config + CONFIG_DESCRIPTORS);
  rxEnd = descriptorOffset; // the rx arena ends where the descriptors begin
  recordOffset = <usize>load<u32>(config + CONFIG_RECORDS);
  maxRecords = load<u32>(config + CONFIG_MAX_RECORDS);
  txStart = <usize>load<u32>(config + CONFIG_TX_ARENA);
  slotOffset = <usize>load<u32>(config + CONFIG_SLOTS);
  txEnd = slotOffset; // the tx arena ends where the slots begin
  counterOffset = <usize>load<u32>(config + CONFIG_COUNTERS);
  scratchOffset = <usize>load<u32>(config + CONFIG_SCRATCH);
  orderedChannels = load<u32>(config + CONFIG_ORDERED_CHANNELS);
}

export function slotBytesNeeded(channels: u32): usize {
  return SLOT_CHANNELS + <usize>channels * CHANNEL_STRIDE;
}

@inline
export function slotBase(slot: i32): usize {
  return slotOffset + <usize>slot * slotStride;
}

@inline
export function channelBase(slot: usize, channel: u32): usize {
  return slot + SLOT_CHANNELS + <usize>channel * CHANNEL_STRIDE;
}

@inline
export function channelKind(channel: u32): u32 {
  return load<u8>(configOffset + CONFIG_CHANNEL_KINDS + channel);
}
