// Where everything lives in linear memory. The host computes the layout (src/engine/layout.ts),
// writes it into the config area, and calls `init(configOffset)` once; the engine reads the
// numbers from there, never allocates and never grows memory. Field offsets come from the one
// ABI definition (assembly/abi.generated.ts).

import {
  CHANNEL_BYTES, CONFIG_CHANNEL_COUNT, CONFIG_CHANNEL_KINDS, CONFIG_COUNTER_OFFSET, CONFIG_DESCRIPTOR_OFFSET,
  CONFIG_MAX_RECORDS, CONFIG_MAX_SLOTS, CONFIG_ORDERED_CHANNEL_COUNT, CONFIG_RECORD_OFFSET, CONFIG_RX_ARENA_OFFSET,
  CONFIG_SCRATCH_OFFSET, CONFIG_SLOT_OFFSET, CONFIG_SLOT_STRIDE, CONFIG_TX_ARENA_OFFSET, SLOT_CHANNELS,
} from "./abi.generated";

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
  rxStart = <usize>load<u32>(config + CONFIG_RX_ARENA_OFFSET);
  descriptorOffset = <usize>load<u32>(config + CONFIG_DESCRIPTOR_OFFSET);
  rxEnd = descriptorOffset; // the rx arena ends where the descriptors begin
  recordOffset = <usize>load<u32>(config + CONFIG_RECORD_OFFSET);
  maxRecords = load<u32>(config + CONFIG_MAX_RECORDS);
  txStart = <usize>load<u32>(config + CONFIG_TX_ARENA_OFFSET);
  slotOffset = <usize>load<u32>(config + CONFIG_SLOT_OFFSET);
  txEnd = slotOffset; // the tx arena ends where the slots begin
  counterOffset = <usize>load<u32>(config + CONFIG_COUNTER_OFFSET);
  scratchOffset = <usize>load<u32>(config + CONFIG_SCRATCH_OFFSET);
  orderedChannels = load<u32>(config + CONFIG_ORDERED_CHANNEL_COUNT);
}

export function slotBytesNeeded(channels: u32): usize {
  return SLOT_CHANNELS + <usize>channels * CHANNEL_BYTES;
}

@inline
export function slotBase(slot: i32): usize {
  return slotOffset + <usize>slot * slotStride;
}

@inline
export function channelBase(slot: usize, channel: u32): usize {
  return slot + SLOT_CHANNELS + <usize>channel * CHANNEL_BYTES;
}

@inline
export function channelKind(channel: u32): u32 {
  return load<u8>(configOffset + CONFIG_CHANNEL_KINDS + channel);
}
