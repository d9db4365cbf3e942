/**
 * Test-only fake packet layer for the channel tests.
 *  - decodeFrames: a frame reader written from docs/PROTOCOL.md §3 only (conformance check).
 *  - Peer / runPair: two ChannelSets over two TS reference engines (sealData / processBatch),
 *    a DeliveryNotificationManager per side, and a seeded lossy, reordering link on a virtual
 *    clock. Every loop is bounded.
 */
import { DATA_HEADER_BYTES, DATA_OVERHEAD_BYTES, PacketType, RECORD_INTS, RecordType, SettledRecord } from "../../src/engine/abi.js";
import type { DeliveryKind } from "../../src/engine/abi.js";
import { TsEngine } from "../../src/engine/ts-engine.js";
import { ChannelSet, type ChannelOptions, DeliveryNotificationManager, PacketContents, deliveryKindOf } from "../../src/channels/index.js";

export interface DecodedFrame {
  channel: number;
  kind: number;
  fragmented: boolean;
  seq: number;
  fragIndex: number;
  fragCount: number;
  key: number;
  payload: Uint8Array;
}

/** PROTOCOL.md §3: channel u8, flags u8, messageSeq u16, [fragIndex u16, fragCount u16], [key u32], length u16, payload. */
export function decodeFrames(bytes: Uint8Array, start: number, end: number): DecodedFrame[] {
  const out: DecodedFrame[] = [];
  const u16 = (p: number) => bytes[p] | (bytes[p + 1] << 8);
  let p = start;
  while (p < end) {
    if (p + 4 > end) throw new Error(`frame header runs past end at ${p}`);
    const channel = bytes[p];
    const flags = bytes[p + 1];
    if (flags & 0xf0) throw new Error("reserved flag bits set");
    const kind = flags & 0x07;
    const fragmented = (flags & 0x08) !== 0;
    const seq = u16(p + 2);
    p += 4;
    let fragIndex = 0;
    let fragCount = 0;
    if (fragmented) {
      fragIndex = u16(p);
      fragCount = u16(p + 2);
      if (fragCount < 2 || fragIndex >= fragCount) throw new Error("bad fragment fields");
      p += 4;
    }
    let key = 0;
    if (kind === 5) {
      key = (bytes[p] | (bytes[p + 1] << 8) | (bytes[p + 2] << 16) | (bytes[p + 3] << 24)) >>> 0;
      p += 4;
    }
    const length = u16(p);
    p += 2;
    if (p + length > end) throw new Error("payload runs past end");
    out.push({ channel, kind, fragmented, seq, fragIndex, fragCount, key, payload: bytes.slice(p, p + length) });
    p += length;
  }
  return out;
}

/** mulberry32: small seeded PRNG for tests. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Peer {
  readonly engine: TsEngine;
  readonly channels: ChannelSet;
  readonly dnm: DeliveryNotificationManager<PacketContents>;
  dataBytesSent = 0;
  frameBytesSent = 0;
  packetsSent = 0;
  private now = 0;

  constructor(
    kinds: DeliveryKind[],
    configs: readonly ChannelOptions[],
    readonly mtu: number,
    initialSequence: number,
    maxReceiveBufferBytes = 8 * 1024 * 1024,
  ) {
    this.engine = new TsEngine({ protocolId: 0xace, maxSlots: 1, channels: kinds });
    this.engine.resetSlot(0, initialSequence);
    this.channels = new ChannelSet({ channels: configs, mtu, maxReceiveBufferBytes });
    const channels = this.channels;
    const self = this;
    this.dnm = new DeliveryNotificationManager<PacketContents>({
      onDelivered(_seq, contents) {
        channels.onDelivered(self.now, contents);
        channels.releaseContents(contents);
      },
      onDropped(_seq, contents) {
        channels.onLost(self.now, contents);
        channels.releaseContents(contents);
      },
    });
  }

  /** Up to maxPackets datagrams; a keepalive (pure ack) if nothing else is due and ack is set. */
  flush(now: number, maxPackets: number, ack: boolean): Uint8Array[] {
    this.now = now;
    const out: Uint8Array[] = [];
    const off = this.engine.layout.txArenaOffset;
    for (let i = 0; i < maxPackets && this.channels.hasPending(now); i++) {
      const contents = this.channels.acquireContents();
      const n = this.channels.writeFrames(now, this.engine.bytes, off + DATA_HEADER_BYTES, this.mtu - DATA_OVERHEAD_BYTES, contents);
      if (n === 0) {
        this.channels.releaseContents(contents);
        break;
      }
      const seq = this.engine.sealData(0, off, n, PacketType.Data);
      this.dnm.dispatch(seq, now, n + DATA_OVERHEAD_BYTES, contents);
      out.push(this.engine.bytes.slice(off, off + n + DATA_OVERHEAD_BYTES));
      this.frameBytesSent += n;
    }
    if (out.length === 0 && ack) {
      const seq = this.engine.sealData(0, off, 0, PacketType.Keepalive);
      out.push(this.engine.bytes.slice(off, off + DATA_OVERHEAD_BYTES));
      // Keepalives are sequenced too: the DNM tracks them with empty contents.
      this.dnm.dispatch(seq, now, DATA_OVERHEAD_BYTES, this.channels.acquireContents());
    }
    this.packetsSent += out.length;
    for (const d of out) this.dataBytesSent += d.length;
    return out;
  }

  receive(now: number, datagram: Uint8Array): void {
    this.now = now;
    const rx = this.engine.layout.rxArenaOffset;
    this.engine.bytes.set(datagram, rx);
    this.engine.descriptors[0] = rx;
    this.engine.descriptors[1] = datagram.length;
    this.engine.descriptors[2] = 0;
    this.engine.descriptors[3] = 0;
    const n = this.engine.processBatch(1);
    const r = this.engine.records;
    for (let i = 0; i < n; i++) {
      const at = i * RECORD_INTS;
      const type = r[at];
      if (type === RecordType.Settled) this.dnm.acknowledge(r[at + SettledRecord.Sequence], now);
      else this.channels.onRecord(now, r, at, this.engine.bytes);
    }
  }

  tick(now: number, rtoMs: number): void {
    this.now = now;
    this.dnm.detectLosses(now, rtoMs);
  }
}

export interface LinkOptions {
  seed: number;
  loss: number;
  latencyMs: number;
  jitterMs: number;
  duplicate?: number;
}

interface InFlight {
  at: number;
  order: number;
  to: 0 | 1;
  bytes: Uint8Array;
}

/** Two peers, a lossy link, a 10 ms tick. `step` is called every tick before flushing. */
export class Pair {
  readonly peers: [Peer, Peer];
  now = 0;
  private readonly random: () => number;
  private queue: InFlight[] = [];
  private order = 0;
  constructor(
    a: Peer,
    b: Peer,
    readonly link: LinkOptions,
  ) {
    this.peers = [a, b];
    this.random = rng(link.seed);
  }

  /** Run ticks until `done()` or `maxTicks`; returns ticks run. */
  run(maxTicks: number, done: () => boolean, step?: (tick: number) => void, packetsPerTick = 64): number {
    for (let tick = 0; tick < maxTicks; tick++) {
      this.now = tick * 10;
      // deliver due datagrams
      this.queue.sort((x, y) => x.at - y.at || x.order - y.order);
      let i = 0;
      while (i < this.queue.length && this.queue[i].at <= this.now) {
        const d = this.queue[i++];
        this.peers[d.to].receive(this.now, d.bytes);
      }
      this.queue = this.queue.slice(i);
      step?.(tick);
      for (const p of this.peers) p.tick(this.now, 4 * this.link.latencyMs + 4 * this.link.jitterMs + 20);
      if (done()) return tick;
      for (let side = 0 as 0 | 1; side < 2; side = (side + 1) as 0 | 1) {
        for (const d of this.peers[side].flush(this.now, packetsPerTick, true)) this.transmit(side === 0 ? 1 : 0, d);
      }
    }
    return maxTicks;
  }

  private transmit(to: 0 | 1, bytes: Uint8Array): void {
    if (this.random() < this.link.loss) return;
    const copies = this.link.duplicate !== undefined && this.random() < this.link.duplicate ? 2 : 1;
    for (let c = 0; c < copies; c++) {
      const at = this.now + this.link.latencyMs + Math.floor(this.random() * this.link.jitterMs);
      this.queue.push({ at, order: this.order++, to, bytes });
    }
  }
}

export function drainMessages(channels: ChannelSet): { channel: number; data: Uint8Array; key?: number }[] {
  const out = [];
  for (let i = 0; i < 1_000_000; i++) {
    const m = channels.pollMessage();
    if (m === undefined) break;
    out.push(m);
  }
  return out;
}

/** Two peers with the same channels over the seeded fake link; `mtu` and the receive bound are optional. */
export function pairOf(
  configs: ChannelOptions[],
  link: { seed: number; loss: number; latencyMs?: number; jitterMs?: number; duplicate?: number },
  options: { mtu?: number; bound?: number } = {},
): Pair {
  const kinds = configs.map((c) => deliveryKindOf(c.mode)) as DeliveryKind[];
  const a = new Peer(kinds, configs, options.mtu ?? 1200, 65500, options.bound);
  const b = new Peer(kinds, configs, options.mtu ?? 1200, 123, options.bound);
  return new Pair(a, b, { latencyMs: link.latencyMs ?? 30, jitterMs: link.jitterMs ?? 0, ...link });
}

/** Self-checking payload: 4-byte index then bytes derived from it. */
export function payload(index: number, length: number): Uint8Array {
  const out = new Uint8Array(Math.max(4, length));
  new DataView(out.buffer).setUint32(0, index, true);
  for (let i = 4; i < out.length; i++) out[i] = (index * 31 + i) & 0xff;
  return out;
}

/** The payload's index; throws if any byte is not what `payload` wrote. */
export function check(data: Uint8Array): number {
  const index = new DataView(data.buffer, data.byteOffset).getUint32(0, true);
  for (let i = 4; i < data.length; i++) if (data[i] !== ((index * 31 + i) & 0xff)) throw new Error(`corrupt payload ${index}`);
  return index;
}

/** Wraps a test body so a failure prints its seed. */
export const withSeed = (seed: number, body: () => void) => () => {
  try {
    body();
  } catch (e) {
    console.error(`failing seed: ${seed}`);
    throw e;
  }
};
