// Seeded generators of hostile and valid datagram streams for the differential and fuzz tests.
import { DeliveryKind, FRAME_FLAG_GAP, PacketType, type Engine } from "../../src/engine/abi.js";
import { sealControlPacket, sealPacket, type FrameSpec } from "./helpers.js";

/** Legal body lengths per control type (PROTOCOL §1), and where userDataLength sits. */
const CONTROL_RULES: Record<number, { fixed: number; udlAt?: number; max?: number }> = {
  [PacketType.ConnectRequest]: { fixed: 251 },
  [PacketType.Challenge]: { fixed: 20 },
  [PacketType.ConnectResponse]: { fixed: 36, udlAt: 35, max: 512 },
  [PacketType.Accept]: { fixed: 10, udlAt: 9, max: 512 },
  [PacketType.Deny]: { fixed: 7, udlAt: 6, max: 200 },
  [PacketType.Disconnect]: { fixed: 7, udlAt: 6, max: 512 },
  [PacketType.DisconnectAck]: { fixed: 4 },
  [PacketType.NoConnection]: { fixed: 6 },
};

export interface Datagram {
  bytes: Uint8Array;
  slot: number;
}

/**
 * A peer that builds datagrams for slot 0 of a receiver: valid DATA with random frames (gaps,
 * duplicates, fragments, far-ahead), keepalives, malformed frames, garbage with a valid CRC,
 * control packets with legal and illegal lengths, random bytes and mutations of earlier ones.
 */
export class HostileStream {
  private readonly nextMessage: number[];
  private readonly history: Uint8Array[] = [];

  constructor(
    readonly peer: Engine,
    readonly channels: readonly DeliveryKind[],
    private readonly rand: () => number,
  ) {
    this.nextMessage = channels.map(() => 0);
  }

  private int(n: number): number {
    return Math.floor(this.rand() * n);
  }

  private randomBytes(n: number): Uint8Array {
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i++) b[i] = this.int(256);
    return b;
  }

  private frame(): FrameSpec {
    const useSystem = this.int(20) === 0;
    if (useSystem) return { channel: 255, kind: DeliveryKind.Unreliable, seq: 0, payload: this.randomBytes(1 + this.int(12)) };
    const channel = this.int(this.channels.length);
    const kind = this.channels[channel];
    let seq = this.nextMessage[channel];
    const r = this.int(100);
    if (r < 70) this.nextMessage[channel] = (seq + 1) & 0xffff; // in order
    else if (r < 80) seq = (seq - 1 - this.int(40)) & 0xffff; // a resend / duplicate
    else if (r < 92) {
      seq = (seq + 1 + this.int(30)) & 0xffff; // ahead of a gap
    } else if (r < 96) seq = (seq + 1000 + this.int(100)) & 0xffff; // near / past the window
    else seq = this.int(65536);
    if (kind === DeliveryKind.ReliableOrdered && this.int(10) === 0) {
      // A GAP (PROTOCOL §3): mostly a legal count of a few, now and then an illegal 0 or 1025.
      // (A legal in-order one moves the stream on; were its datagram dropped, a long one would
      // leave every later frame of the channel too far ahead.)
      const legal = this.int(12) !== 0;
      const count = legal ? 1 + this.int(8) : [0, 1025][this.int(2)];
      if (legal && seq === ((this.nextMessage[channel] - 1) & 0xffff)) this.nextMessage[channel] = (seq + count) & 0xffff;
      return { channel, kind, seq, payload: new Uint8Array([count & 0xff, count >> 8]), flags: FRAME_FLAG_GAP };
    }
    const f: FrameSpec = { channel, kind, seq, payload: this.randomBytes(this.int(r < 5 ? 200 : 24)) };
    if (this.int(8) === 0) {
      const count = 2 + this.int(6);
      f.fragment = [this.int(count), count];
    }
    if (kind === DeliveryKind.LatestState) f.key = this.int(0x100000000);
    return f;
  }

  /** One more datagram. */
  next(): Datagram {
    const slot = this.int(40) === 0 ? -1 : this.int(30) === 0 ? 1 : 0;
    const r = this.int(100);
    let bytes: Uint8Array;
    if (r < 45) {
      const frames: FrameSpec[] = [];
      const n = this.int(6);
      let size = 13;
      for (let i = 0; i < n; i++) {
        const f = this.frame();
        size += 6 + 8 + f.payload.length;
        if (size > 1400) break;
        frames.push(f);
      }
      bytes = sealPacket(this.peer, 0, frames).bytes;
    } else if (r < 50) {
      bytes = sealPacket(this.peer, 0, [], true).bytes;
    } else if (r < 62 && this.history.length > 0) {
      bytes = this.mutate(this.history[this.int(this.history.length)]);
    } else if (r < 70 && this.history.length > 0) {
      bytes = this.history[this.int(this.history.length)].slice(); // exact duplicate / late copy
    } else if (r < 78) {
      bytes = this.randomBytes(this.int(r < 74 ? 8 : 80));
    } else if (r < 90) {
      // Valid CRC around garbage: a type byte (mostly DATA) and random frames.
      const body = this.randomBytes(this.int(60));
      body[0] = [0x00, 0x10, 0x09, 0x19, this.int(256)][this.int(5)];
      if (body.length === 0) return this.next();
      bytes = sealControlPacket(this.peer, body);
    } else {
      bytes = this.control();
    }
    if (this.history.length < 64) this.history.push(bytes);
    else this.history[this.int(64)] = bytes;
    return { bytes, slot };
  }

  /** A control packet whose length is legal or off by a little, sealed with a valid CRC. */
  private control(): Uint8Array {
    const type = 1 + this.int(8);
    const rule = CONTROL_RULES[type];
    let udl = rule.udlAt !== undefined ? this.int(3) === 0 ? (rule.max ?? 0) + this.int(3) : this.int(40) : 0;
    let body = rule.fixed + udl + (this.int(3) === 0 ? this.int(5) - 2 : 0);
    if (body < 0) body = 0;
    const bytes = this.randomBytes(1 + body);
    bytes[0] = this.int(10) === 0 ? type | 0x10 : type;
    if (rule.udlAt !== undefined && rule.udlAt + 2 <= bytes.length) {
      bytes[rule.udlAt] = udl & 0xff;
      bytes[rule.udlAt + 1] = udl >> 8;
    }
    return sealControlPacket(this.peer, bytes);
  }

  private mutate(src: Uint8Array): Uint8Array {
    const r = this.int(4);
    if (r === 0 && src.length > 0) {
      const b = src.slice();
      b[this.int(b.length)] ^= 1 << this.int(8); // bit flip: BadCrc
      return b;
    }
    if (r === 1) return src.slice(0, this.int(src.length + 1)); // truncated
    if (r === 2) {
      const b = new Uint8Array(src.length + 1 + this.int(20));
      b.set(src);
      b.set(this.randomBytes(b.length - src.length), src.length); // trailing junk
      return b;
    }
    const b = src.slice();
    for (let k = 0; k < 3 && b.length > 0; k++) b[this.int(b.length)] = this.int(256);
    return b;
  }
}
