/**
 * Connection traces as qlog (draft-ietf-quic-qlog-main-schema, version 0.3) in its JSON-SEQ
 * form (RFC 7464: each record is 0x1E, a JSON text, a line feed), the `.sqlog` files qvis reads.
 *
 * Interface:
 *   const t = new QlogTracer(sink, { vantage: "client", referenceTime: now, title: "..." });
 *   t.packetSent(now, sequence, bytes, eliciting)   t.packetReceived(now, sequence, elicits)
 *   t.packetAcked(now, sequence)                     t.packetLost(now, sequence, bytes)
 *   t.spuriousLoss(now, sequence)                    t.metrics(now, {...})
 *   t.mtu(now, bytes)   t.migration(now, from, to)   t.rebind(now, state)
 *   t.closed(now, reason)   t.flush()
 *
 * Runtime-neutral: the sink takes text (a callback; the Node adapter's qlogFiles() writes
 * files). Events are buffered and handed to the sink in chunks of about FLUSH_CHARS, and at
 * flush() and closed(). Times are ms from `referenceTime` (qlog's relative time format); an
 * event given `now` NaN takes the latest time seen. A received packet is written once the next
 * event that follows its reading (a send, a loss, the next packet) begins, so its acks, which
 * the engine reports after it, go in its ack frame. A sink that throws ends the trace there
 * (`failure` holds the error); its connection is not affected.
 *
 * ackwire packets are QUIC-like enough for qvis: a packet is "1RTT" with its 16-bit sequence as
 * packet_number (it wraps: a trace longer than 65536 packets reuses numbers), acknowledgements
 * ride in the received packet's "ack" frame as acked ranges, and losses, RTT and congestion
 * figures use the recovery events. ackwire's own events are named "ackwire:*".
 */

/** Where trace text goes. `close` (optional) is called once, after the last write. */
export interface TraceSink {
  write(chunk: string): void;
  close?(): void;
}

export interface TraceStart {
  /** The endpoint's id for the connection. */
  connection: number;
  vantage: "client" | "server";
  /** The connection's clock at its creation (ms; the trace's reference time). */
  now: number;
  /** The peer's address as the endpoint names it. */
  peer: string;
}

/** EndpointConfig.trace: called once per connection; a sink traces it, undefined does not. */
export type TraceFactory = (start: TraceStart) => TraceSink | undefined;

export interface TraceMetrics {
  minRttMs: number;
  smoothedRttMs: number;
  latestRttMs: number;
  rttVarMs: number;
  congestionWindowBytes: number;
  bytesInFlight: number;
  /** bits per second, as qlog has it */
  pacingRateBps: number;
}

/** RFC 7464's record separator. */
const RS = "\u001e";
const FLUSH_CHARS = 16_384;
/** qlog times in ms with microsecond resolution (shorter files than full doubles). */
const ms = (x: number): number => Math.round(x * 1000) / 1000;

export class QlogTracer {
  private buffer = "";
  private readonly reference: number;
  /** Sequences the current received packet acknowledges, as [first, last] ranges. */
  private acked: number[][] = [];
  private receivedSequence = -1;
  private receivedAt = 0;
  private receivedElicits = false;
  private last: TraceMetrics | undefined;
  private lastMtu = -1;
  private done = false;
  private failed: unknown = undefined;
  /** The latest time an event had: the time of an event given `now` NaN. */
  private latest: number;

  constructor(private readonly sink: TraceSink, options: { vantage: "client" | "server"; referenceTime: number; title?: string; peer?: string }) {
    this.reference = options.referenceTime;
    this.latest = options.referenceTime;
    const header = {
      qlog_version: "0.3",
      qlog_format: "JSON-SEQ",
      title: options.title ?? "ackwire connection",
      trace: {
        vantage_point: { type: options.vantage },
        common_fields: { time_format: "relative", reference_time: options.referenceTime, protocol_type: ["ackwire"], peer: options.peer },
      },
    };
    this.buffer = RS + JSON.stringify(header) + "\n";
  }

  packetSent(now: number, sequence: number, bytes: number, eliciting: boolean): void {
    this.endReceived();
    this.event(now, "transport:packet_sent", `{"header":{"packet_type":"1RTT","packet_number":${sequence}},"raw":{"length":${bytes}},"ack_eliciting":${eliciting}}`);
  }

  /** A packet arrived; the acks read from it follow (packetAcked) and go out with it. */
  packetReceived(now: number, sequence: number, elicits: boolean): void {
    this.endReceived();
    this.receivedSequence = sequence;
    this.receivedAt = now;
    this.receivedElicits = elicits;
  }

  /** The packet being read acknowledged our packet `sequence` (newly). */
  packetAcked(_now: number, sequence: number): void {
    const ranges = this.acked;
    const lastRange = ranges[ranges.length - 1];
    if (lastRange !== undefined && lastRange[1] === ((sequence - 1) & 0xffff)) lastRange[1] = sequence;
    else ranges.push([sequence, sequence]);
  }

  packetLost(now: number, sequence: number, bytes: number): void {
    this.endReceived();
    this.event(now, "recovery:packet_lost", `{"header":{"packet_type":"1RTT","packet_number":${sequence}},"raw":{"length":${bytes}}}`);
  }

  /** A packet declared lost was acknowledged after all. */
  spuriousLoss(now: number, sequence: number): void {
    this.event(now, "ackwire:spurious_loss", `{"packet_number":${sequence}}`);
  }

  /** RTT and congestion figures; written only when one changed since the last. */
  metrics(now: number, m: TraceMetrics): void {
    const l = this.last;
    if (
      l !== undefined && l.minRttMs === m.minRttMs && l.smoothedRttMs === m.smoothedRttMs && l.latestRttMs === m.latestRttMs &&
      l.rttVarMs === m.rttVarMs && l.congestionWindowBytes === m.congestionWindowBytes && l.bytesInFlight === m.bytesInFlight &&
      l.pacingRateBps === m.pacingRateBps
    ) return;
    this.last = { ...m };
    const data = {
      min_rtt: ms(m.minRttMs),
      smoothed_rtt: ms(m.smoothedRttMs),
      latest_rtt: ms(m.latestRttMs),
      rtt_variance: ms(m.rttVarMs),
      congestion_window: Math.round(m.congestionWindowBytes),
      bytes_in_flight: m.bytesInFlight,
      pacing_rate: Math.round(m.pacingRateBps),
    };
    this.event(now, "recovery:metrics_updated", JSON.stringify(data));
  }

  /** The largest datagram the connection sends changed (path MTU discovery). */
  mtu(now: number, bytes: number): void {
    this.endReceived();
    if (bytes === this.lastMtu) return;
    const old = this.lastMtu;
    this.lastMtu = bytes;
    this.event(now, "connectivity:mtu_updated", old < 0 ? `{"new":${bytes}}` : `{"old":${old},"new":${bytes}}`);
  }

  /** The connection's path changed: a server saw its client move, a client rebound. */
  migration(now: number, from: string, to: string): void {
    this.endReceived();
    this.event(now, "ackwire:migration", JSON.stringify({ from, to }));
  }

  /** Client: its address changed under it (a NAT rebinding) and it proves itself from the new
   *  one: "started", then "answered" when it answers the server's challenge (PROTOCOL §5). */
  rebind(now: number, state: "started" | "answered"): void {
    this.endReceived();
    this.event(now, "ackwire:rebind", `{"state":"${state}"}`);
  }

  /** The connection closed: the last event; the sink is flushed and closed. */
  closed(now: number, reason: string): void {
    if (this.done) return;
    this.endReceived();
    this.event(now, "connectivity:connection_closed", JSON.stringify({ reason }));
    this.flush();
    if (this.done) return; // the sink failed
    this.done = true;
    try {
      this.sink.close?.();
    } catch (e) {
      this.failed = e;
    }
  }

  /** Hand everything buffered to the sink. */
  flush(): void {
    this.endReceived();
    this.deliver();
  }

  /** The error a sink threw, if one did: the trace stopped there (the connection goes on). */
  get failure(): unknown {
    return this.failed;
  }

  private deliver(): void {
    if (this.buffer.length === 0) return;
    const chunk = this.buffer;
    this.buffer = "";
    try {
      this.sink.write(chunk);
    } catch (e) {
      this.stop(e);
    }
  }

  /** An application's sink threw: no more events (a trace must never break its connection). */
  private stop(e: unknown): void {
    this.failed = e;
    this.done = true;
    this.buffer = "";
  }

  private endReceived(): void {
    if (this.receivedSequence < 0) return;
    const sequence = this.receivedSequence;
    this.receivedSequence = -1;
    let frames = "";
    if (this.acked.length > 0) {
      // qlog lists acked ranges newest first, as QUIC ack frames carry them.
      frames = `,"frames":[{"frame_type":"ack","acked_ranges":${JSON.stringify(this.acked.reverse())}}]`;
      this.acked = [];
    }
    this.event(this.receivedAt, "transport:packet_received", `{"header":{"packet_type":"1RTT","packet_number":${sequence}},"ack_eliciting":${this.receivedElicits}${frames}}`);
  }

  private event(now: number, name: string, data: string): void {
    if (this.done) return;
    if (now !== now) now = this.latest;
    else if (now > this.latest) this.latest = now;
    this.buffer += `${RS}{"time":${ms(now - this.reference)},"name":"${name}","data":${data}}\n`;
    if (this.buffer.length >= FLUSH_CHARS) this.deliver();
  }
}
