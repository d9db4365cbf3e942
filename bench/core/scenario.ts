/**
 * bench:core's scenario, shared by the server process (core.ts) and the clients' process
 * (client-process.ts): the endpoints' settings, the clients' addresses, and the packed batch
 * format the two processes exchange once per simulated millisecond.
 */
import type { ChannelConfig, EndpointConfig } from "../../src/session/types.js";

export const CONNECTIONS = 1000;
export const RATE_HZ = 30;
/** Each connection sends every round(1000 / 30) = 33 ms, at its own phase. */
export const SEND_PERIOD_MS = Math.round(1000 / RATE_HZ);
export const MESSAGE_BYTES = 100;
export const LOSS = 0.05;
export const LATENCY_MS = 10;
export const TICK_MS = 1;
export const PROTOCOL_ID = 0xc0de1000;
export const SERVER = "10.0.0.1:7777";
export const CHANNELS: ChannelConfig[] = [{ mode: "reliable-ordered" }, { mode: "unreliable" }];

/** Options both sides pass through from the command line. */
export interface ScenarioOptions {
  engine: "ts" | "wasm";
  ackDelayMs: number | undefined;
  ackPiggybackMs: number | undefined;
}

export function serverConfig(o: ScenarioOptions): EndpointConfig {
  return {
    protocolId: PROTOCOL_ID,
    server: true,
    maxConnections: CONNECTIONS,
    maxPendingHandshakes: 1,
    handshakeRatePerAddress: 10,
    channels: CHANNELS,
    seed: 1,
    engine: o.engine,
    ackDelayMs: o.ackDelayMs,
    ackPiggybackMs: o.ackPiggybackMs,
  };
}

export function clientConfig(o: ScenarioOptions, i: number): EndpointConfig {
  return {
    protocolId: PROTOCOL_ID,
    maxConnections: 0,
    maxPendingHandshakes: 1,
    channels: CHANNELS,
    seed: 1000 + i,
    engine: o.engine,
    ackDelayMs: o.ackDelayMs,
    ackPiggybackMs: o.ackPiggybackMs,
    engineLimits: { batchDatagrams: 8, maxRecords: 2048, sendDatagrams: 4 },
  };
}

/** Client i's address: 10.x.y.z:40000, distinct for i < 2^24. */
export function clientAddress(i: number): string {
  return `10.${1 + (i >> 16)}.${(i >> 8) & 0xff}.${i & 0xff}:40000`;
}

/**
 * A batch of datagrams between the server and the clients, packed in one buffer so that one
 * IPC message carries a whole millisecond: u32 count, then per datagram u16 client index (the
 * sender or the receiver, whichever is the client), u16 length, the bytes.
 */
export class BatchWriter {
  private bytes = new Uint8Array(64 * 1024);
  private view = new DataView(this.bytes.buffer);
  private pos = 4;
  private count = 0;

  add(client: number, datagram: Uint8Array, offset = 0, length = datagram.length): void {
    const need = this.pos + 4 + length;
    if (need > this.bytes.length) {
      const grown = new Uint8Array(Math.max(need, this.bytes.length * 2));
      grown.set(this.bytes.subarray(0, this.pos));
      this.bytes = grown;
      this.view = new DataView(grown.buffer);
    }
    this.view.setUint16(this.pos, client, true);
    this.view.setUint16(this.pos + 2, length, true);
    this.bytes.set(datagram.subarray(offset, offset + length), this.pos + 4);
    this.pos = need;
    this.count++;
  }

  /** The packed batch (a copy: the writer is reset and reused). */
  take(): Uint8Array {
    this.view.setUint32(0, this.count, true);
    const out = this.bytes.slice(0, this.pos);
    this.pos = 4;
    this.count = 0;
    return out;
  }
}

/** Calls `each(client, bytes)` for every datagram of a packed batch; `bytes` is a view. */
export function readBatch(batch: Uint8Array, each: (client: number, bytes: Uint8Array) => void): void {
  const view = new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
  const count = view.getUint32(0, true);
  let pos = 4;
  for (let k = 0; k < count; k++) {
    const client = view.getUint16(pos, true);
    const length = view.getUint16(pos + 2, true);
    each(client, batch.subarray(pos + 4, pos + 4 + length));
    pos += 4 + length;
  }
}
