/**
 * bench:core's server side: one server Endpoint and its application (30 messages/s of 100 B on
 * each connection, reliable-ordered), turn by turn, with process.cpuUsage() around the timed
 * part of each turn. Used twice per run: live, against the clients (core.ts), and replayed
 * alone from the recording of that live run's inputs (server-replay.ts).
 */
import { Endpoint } from "../../src/session/endpoint.js";
import type { EndpointEvent } from "../../src/session/types.js";
import { clientIndexMap } from "./clients.js";
import { BatchWriter, CONNECTIONS, MESSAGE_BYTES, SEND_PERIOD_MS, clientAddress, readBatch, serverConfig, type ScenarioOptions } from "./scenario.js";

export interface CpuClock {
  cpuUsage(previous?: { user: number; system: number }): { user: number; system: number };
}

export class ServerSide {
  readonly endpoint: Endpoint;
  readonly connections: number[] = [];
  messagesIn = 0;
  cpuMicros = 0;
  timedTurns = 0;
  /** FNV-1a over every byte the server transmitted (with its receiver), in order. */
  outputHash = 0x811c9dc5;
  private readonly clock: CpuClock;
  private readonly addresses = Array.from({ length: CONNECTIONS }, (_, i) => clientAddress(i));
  private readonly indexOf = clientIndexMap();
  private readonly message = new Uint8Array(MESSAGE_BYTES).fill(7);
  // One turn's inputs, unpacked before the timer starts, and its outputs, copied out as a
  // socket send would (into `sink`) while timed and packed for the clients after.
  private readonly inFrom: string[] = [];
  private readonly inBytes: Uint8Array[] = [];
  private sink = new Uint8Array(1 << 20);
  private readonly sinkTo: string[] = [];
  private readonly sinkLength: number[] = [];
  private readonly out = new BatchWriter();
  private readonly onEvent = (ev: EndpointEvent): void => {
    if (ev.type === "connect") this.connections.push(ev.connection);
    else if (ev.type === "message") this.messagesIn++;
    else if (ev.type === "disconnect") {
      const i = this.connections.indexOf(ev.connection);
      if (i >= 0) this.connections.splice(i, 1);
    }
  };

  constructor(options: ScenarioOptions, clock: CpuClock) {
    this.endpoint = new Endpoint(serverConfig(options));
    this.clock = clock;
  }

  /**
   * One turn at millisecond `now`: the deliveries (packed by sending client), the timeout, the
   * events, the application's sends of app tick `tick` (when `appSends`), the transmits.
   * Returns the transmits packed by receiving client.
   */
  turn(now: number, deliveries: Uint8Array, appSends: boolean, tick: number, timed: boolean): Uint8Array {
    const { inFrom, inBytes, sinkTo, sinkLength, endpoint: server } = this;
    inFrom.length = 0;
    inBytes.length = 0;
    readBatch(deliveries, (client, bytes) => {
      inFrom.push(this.addresses[client]!);
      inBytes.push(bytes);
    });
    sinkTo.length = 0;
    sinkLength.length = 0;
    let sinkPos = 0;

    const start = timed ? this.clock.cpuUsage() : undefined;
    for (let k = 0; k < inFrom.length; k++) server.handleDatagram(now, inFrom[k]!, inBytes[k]!);
    const due = server.pollTimeout();
    if (due !== undefined && due <= now) server.handleTimeout(now);
    for (let ev = server.pollEvent(); ev !== undefined; ev = server.pollEvent()) this.onEvent(ev);
    if (appSends) {
      // Each connection sends 30/s: connection k on ticks where (tick + k) % 33 == 0.
      const conns = this.connections;
      for (let k = tick % SEND_PERIOD_MS; k < conns.length; k += SEND_PERIOD_MS) server.send(conns[k]!, this.message, { channel: 0 });
    }
    for (let tx = server.pollTransmit(now); tx !== undefined; tx = server.pollTransmit(now)) {
      const length = tx.bytes.length;
      if (sinkPos + length > this.sink.length) {
        const grown = new Uint8Array(this.sink.length * 2);
        grown.set(this.sink);
        this.sink = grown;
      }
      this.sink.set(tx.bytes, sinkPos);
      sinkPos += length;
      sinkTo.push(tx.to);
      sinkLength.push(length);
    }
    if (start !== undefined) {
      const d = this.clock.cpuUsage(start);
      this.cpuMicros += d.user + d.system;
      this.timedTurns++;
    }

    for (let k = 0, pos = 0; k < sinkTo.length; pos += sinkLength[k]!, k++) {
      const to = this.indexOf.get(sinkTo[k]!);
      if (to !== undefined) this.out.add(to, this.sink, pos, sinkLength[k]);
    }
    const packed = this.out.take();
    let h = this.outputHash;
    for (let i = 4; i < packed.length; i++) h = Math.imul(h ^ packed[i]!, 16777619);
    this.outputHash = h >>> 0;
    return packed;
  }
}

/** CPU cost of the two cpuUsage() calls around one turn, subtracted from the total. */
export function calibrateTimerOverhead(clock: CpuClock): number {
  const calls = 20_000;
  let micros = 0;
  for (let i = 0; i < calls; i++) {
    const start = clock.cpuUsage();
    const d = clock.cpuUsage(start);
    micros += d.user + d.system;
  }
  return micros / calls;
}

/** What server-replay.js prints: per rep, the timed turns' CPU, their count, the output hash and messages received. */
export interface ReplayReport {
  timerOverheadMicros: number;
  results: { cpuMicros: number; timedTurns: number; hash: number; messagesIn: number }[];
}

/** Server CPU-s per simulated second: timed CPU less the cpuUsage() pairs' own cost. */
export function cpuSecondsPerSimSecond(cpuMicros: number, timedTurns: number, timerOverheadMicros: number, simSeconds: number): number {
  return Math.max(0, cpuMicros - timedTurns * timerOverheadMicros) / 1e6 / simSeconds;
}
