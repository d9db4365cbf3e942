/**
 * Reading a qlog JSON-SEQ trace (qlog.ts) back: its events, a summary of them, and the loss
 * timeline (`npx ackwire trace FILE` prints the summary). Runtime-neutral: takes the text.
 */
import { AckwireError } from "../channels/errors.js";

export interface QlogEvent {
  time: number;
  name: string;
  data: Record<string, unknown>;
}

export interface QlogTrace {
  header: Record<string, unknown>;
  events: QlogEvent[];
}

/** parseQlog() was given text that is not a qlog JSON-SEQ trace. */
export class TraceFormatError extends AckwireError {
  constructor(message: string) {
    super("ERR_TRACE_FORMAT", message);
  }
}

/** Parse JSON-SEQ text (RFC 7464 records: 0x1E, JSON, line feed); the first record is the header. */
export function parseQlog(text: string): QlogTrace {
  const records = text.split("\u001e").filter((r) => r.trim().length > 0);
  if (records.length === 0 || !text.startsWith("\u001e")) {
    throw new TraceFormatError("not a qlog JSON-SEQ trace: it must start with the record separator 0x1E and a JSON header (write it with EndpointConfig.trace)");
  }
  const parsed: unknown[] = [];
  for (let i = 0; i < records.length; i++) {
    try {
      parsed.push(JSON.parse(records[i]!));
    } catch {
      // RFC 7464 §2.4: a truncated last record (a process that stopped mid-write) is skipped.
      if (i === records.length - 1) break;
      throw new TraceFormatError(`record ${i + 1} of the trace is not JSON`);
    }
  }
  const header = parsed[0] as Record<string, unknown>;
  if (typeof header !== "object" || header === null || header.qlog_format !== "JSON-SEQ") {
    throw new TraceFormatError('the first record is not a qlog header with qlog_format "JSON-SEQ"');
  }
  const events: QlogEvent[] = [];
  for (const r of parsed.slice(1)) {
    const e = r as QlogEvent;
    if (typeof e === "object" && e !== null && typeof e.time === "number" && typeof e.name === "string") events.push(e);
  }
  return { header, events };
}

/** One declared loss: when, which packet, and whether its ack came later (spurious). */
export interface LossRecord {
  time: number;
  packetNumber: number;
  spuriousAt?: number;
}

/** The declared losses in time order, each marked with the time of its late ack if one came. */
export function lossTimeline(trace: QlogTrace): LossRecord[] {
  const out: LossRecord[] = [];
  const open = new Map<number, LossRecord>();
  for (const e of trace.events) {
    if (e.name === "recovery:packet_lost") {
      const pn = (e.data.header as { packet_number: number }).packet_number;
      const r: LossRecord = { time: e.time, packetNumber: pn };
      out.push(r);
      open.set(pn, r);
    } else if (e.name === "ackwire:spurious_loss") {
      const r = open.get(e.data.packet_number as number);
      if (r !== undefined) {
        r.spuriousAt = e.time;
        open.delete(r.packetNumber);
      }
    }
  }
  return out;
}

export interface TraceSummary {
  vantage: string;
  durationMs: number;
  packetsSent: number;
  bytesSent: number;
  packetsReceived: number;
  packetsAcked: number;
  packetsLost: number;
  spuriousLosses: number;
  rttMs: { min: number; smoothed: number; latest: number } | undefined;
  congestionWindowBytes: number | undefined;
  pacingRateBps: number | undefined;
  mtus: number[];
  migrations: number;
  closed: string | undefined;
}

export function summarize(trace: QlogTrace): TraceSummary {
  const vp = (trace.header.trace as { vantage_point?: { type?: string } } | undefined)?.vantage_point?.type ?? "unknown";
  const s: TraceSummary = {
    vantage: vp,
    durationMs: 0,
    packetsSent: 0,
    bytesSent: 0,
    packetsReceived: 0,
    packetsAcked: 0,
    packetsLost: 0,
    spuriousLosses: 0,
    rttMs: undefined,
    congestionWindowBytes: undefined,
    pacingRateBps: undefined,
    mtus: [],
    migrations: 0,
    closed: undefined,
  };
  for (const e of trace.events) {
    if (e.time > s.durationMs) s.durationMs = e.time;
    const d = e.data;
    switch (e.name) {
      case "transport:packet_sent":
        s.packetsSent++;
        s.bytesSent += (d.raw as { length: number }).length;
        break;
      case "transport:packet_received": {
        s.packetsReceived++;
        const frames = d.frames as { frame_type: string; acked_ranges: [number, number][] }[] | undefined;
        for (const f of frames ?? []) {
          if (f.frame_type === "ack") for (const [a, b] of f.acked_ranges) s.packetsAcked += ((b - a) & 0xffff) + 1;
        }
        break;
      }
      case "recovery:packet_lost":
        s.packetsLost++;
        break;
      case "ackwire:spurious_loss":
        s.spuriousLosses++;
        break;
      case "recovery:metrics_updated":
        s.rttMs = { min: d.min_rtt as number, smoothed: d.smoothed_rtt as number, latest: d.latest_rtt as number };
        s.congestionWindowBytes = d.congestion_window as number;
        s.pacingRateBps = d.pacing_rate as number;
        break;
      case "connectivity:mtu_updated":
        s.mtus.push(d.new as number);
        break;
      case "ackwire:migration":
      case "ackwire:rebind":
        if (e.name === "ackwire:migration" || d.state === "answered") s.migrations++;
        break;
      case "connectivity:connection_closed":
        s.closed = d.reason as string;
        break;
    }
  }
  return s;
}

/** The summary as a few lines of text. */
export function formatSummary(s: TraceSummary): string {
  const pct = (n: number, of: number): string => (of === 0 ? "0" : ((100 * n) / of).toFixed(2));
  const lines = [
    `${s.vantage} connection, ${(s.durationMs / 1000).toFixed(3)} s${s.closed !== undefined ? `, closed: ${s.closed}` : ""}`,
    `packets sent ${s.packetsSent} (${s.bytesSent} bytes), received ${s.packetsReceived}, acknowledged ${s.packetsAcked}`,
    `declared lost ${s.packetsLost} (${pct(s.packetsLost, s.packetsSent)} % of sent), of which acknowledged later ${s.spuriousLosses}`,
  ];
  if (s.rttMs !== undefined) {
    lines.push(`rtt: min ${s.rttMs.min} ms, smoothed ${s.rttMs.smoothed} ms, latest ${s.rttMs.latest} ms (last sample)`);
    lines.push(`congestion window ${s.congestionWindowBytes} bytes, pacing ${((s.pacingRateBps ?? 0) / 1e6).toFixed(3)} Mbit/s (last)`);
  }
  lines.push(`path MTU ${s.mtus.length === 0 ? "not traced" : s.mtus.join(" -> ")}; migrations ${s.migrations}`);
  return lines.join("\n");
}
