/**
 * Connection traces (src/trace): qlog JSON-SEQ written through EndpointConfig.trace, on the
 * simulator and on a live loopback connection; a loss timeline rebuilt from a trace matches
 * what the connection counted; `ackwire trace FILE` prints the summary.
 */
import { describe, expect, it } from "vitest";
import { QlogTracer, type TraceFactory, type TraceStart } from "../../src/trace/qlog.js";
import { lossTimeline, parseQlog, summarize, TraceFormatError } from "../../src/trace/summary.js";
import { connect, listen } from "../../src/index.js";
import { qlogFiles } from "../../runtimes/node/trace.js";
import { main } from "../../runtimes/node/cli.js";
import { makePair, connectPair } from "../session/helpers.js";

interface Fs {
  mkdtempSync(prefix: string): string;
  readdirSync(dir: string): string[];
  readFileSync(path: string, enc: "utf8"): string;
  writeFileSync(path: string, text: string): void;
  rmSync(path: string, o: { recursive: boolean; force: boolean }): void;
}
const fs = (globalThis as unknown as { process: { getBuiltinModule(id: string): unknown } }).process.getBuiltinModule("node:fs") as Fs;
const tmp = (): string => fs.mkdtempSync("/tmp/ackwire-trace-");

/** A factory keeping each connection's trace text in memory. */
function memoryTraces(): { factory: TraceFactory; texts: Map<number, string>; starts: TraceStart[]; closed: Set<number> } {
  const texts = new Map<number, string>();
  const starts: TraceStart[] = [];
  const closed = new Set<number>();
  const factory: TraceFactory = (start) => {
    starts.push(start);
    texts.set(start.connection, "");
    return { write: (chunk) => void texts.set(start.connection, texts.get(start.connection)! + chunk), close: () => void closed.add(start.connection) };
  };
  return { factory, texts, starts, closed };
}

describe("qlog traces", () => {
  it("a lossy simulated stream: the trace's loss timeline is the connection's declared losses", () => {
    const mem = memoryTraces();
    const pair = makePair(7, { client: { trace: mem.factory }, pair: { link: { latencyMs: 20, lossRate: 0.1, jitterMs: 6, reorder: true } } });
    const [c] = connectPair(pair);
    const start = pair.now;
    const payload = new Uint8Array(300);
    for (let i = 0; i < 150; i++) {
      pair.client.send(c, payload, { channel: 0 });
      pair.drive({ until: start + i * 33, maxSteps: 100_000 });
      pair.serverEvents();
      pair.clientEvents();
    }
    pair.drive({ maxTimeMs: 2000, maxSteps: 200_000 });
    const st = pair.client.stats(c);
    const spurious = (pair.client as unknown as { byId: Map<number, { recovery: { spuriousLosses: number } }> }).byId.get(c)!.recovery.spuriousLosses;
    pair.client.close(c, "normal");
    pair.drive({ maxTimeMs: 2000, maxSteps: 100_000 });

    expect(mem.starts).toHaveLength(1);
    expect(mem.starts[0]).toMatchObject({ connection: c, vantage: "client", peer: pair.serverAddress });
    expect(mem.closed.has(c)).toBe(true);
    const text = mem.texts.get(c)!;
    expect(text.startsWith("\u001e{")).toBe(true);
    const trace = parseQlog(text);
    expect(trace.header).toMatchObject({ qlog_version: "0.3", qlog_format: "JSON-SEQ", trace: { vantage_point: { type: "client" } } });

    // The timeline: every declared loss, in time order, each of a packet sent earlier.
    const losses = lossTimeline(trace);
    expect(losses.length).toBeGreaterThan(10);
    expect(losses.length).toBe(st.packets.dropped);
    expect(losses.filter((l) => l.spuriousAt !== undefined).length).toBe(spurious);
    const sentAt = new Map<number, number>();
    let previous = -Infinity;
    for (const e of trace.events) {
      expect(e.time).toBeGreaterThanOrEqual(previous);
      previous = e.time;
      if (e.name === "transport:packet_sent") sentAt.set((e.data.header as { packet_number: number }).packet_number, e.time);
      if (e.name === "recovery:packet_lost") {
        const pn = (e.data.header as { packet_number: number }).packet_number;
        expect(sentAt.get(pn), `packet ${pn} lost before it was sent`).toBeLessThanOrEqual(e.time);
      }
    }
    for (const l of losses) if (l.spuriousAt !== undefined) expect(l.spuriousAt).toBeGreaterThanOrEqual(l.time);

    const s = summarize(trace);
    expect(s.packetsSent).toBe(st.packets.dispatched);
    expect(s.packetsLost).toBe(st.packets.dropped);
    expect(s.packetsAcked).toBeGreaterThanOrEqual(st.packets.delivered);
    expect(s.rttMs!.smoothed).toBeGreaterThan(40);
    expect(s.congestionWindowBytes).toBeGreaterThan(0);
    expect(s.closed).toBe("normal");
    expect(s.mtus[s.mtus.length - 1]).toBe(st.pathMtu);
  });

  it("a factory returning undefined leaves a connection untraced; a non-function is a config error", () => {
    let calls = 0;
    const pair = makePair(3, { server: { trace: () => void calls++ } });
    connectPair(pair);
    expect(calls).toBe(1);
    expect(() => makePair(3, { client: { trace: "traces/" as unknown as TraceFactory } })).toThrow(/trace must be a function/);
  });

  it("a sink or factory that throws ends or skips the trace, never the connection", () => {
    let writes = 0;
    const pair = makePair(5, {
      client: { trace: () => ({ write: () => { writes++; throw new Error("disk full"); } }) },
      server: { trace: () => { throw new Error("no traces here"); } },
      pair: { link: { latencyMs: 10 } },
    });
    const [c] = connectPair(pair);
    for (let i = 0; i < 300; i++) {
      pair.client.send(c, new Uint8Array(1000), { channel: 0 });
      pair.drive({ maxTimeMs: 5, maxSteps: 10_000 });
    }
    pair.drive({ maxTimeMs: 1000, maxSteps: 100_000 });
    const got = pair.serverEvents().filter((e) => e.type === "message").length;
    expect(got).toBe(300);
    expect(writes).toBe(1);
    const t = new QlogTracer({ write: () => { throw new Error("x"); } }, { vantage: "client", referenceTime: 0 });
    t.flush();
    expect((t.failure as Error).message).toBe("x");
  });

  it("buffers events and hands them to the sink in chunks, and everything at flush()", () => {
    const chunks: string[] = [];
    const t = new QlogTracer({ write: (c) => void chunks.push(c) }, { vantage: "server", referenceTime: 1000 });
    t.packetSent(1001, 5, 100, true);
    expect(chunks).toHaveLength(0);
    t.packetReceived(1002.5, 9, true);
    t.packetAcked(1002.5, 5);
    t.packetAcked(1002.5, 6);
    t.packetAcked(1002.5, 8);
    t.flush();
    const trace = parseQlog(chunks.join(""));
    expect(trace.events.map((e) => [e.time, e.name])).toEqual([
      [1, "transport:packet_sent"],
      [2.5, "transport:packet_received"],
    ]);
    expect(trace.events[1]!.data.frames).toEqual([{ frame_type: "ack", acked_ranges: [[8, 8], [5, 6]] }]);
    for (let i = 0; i < 1000; i++) t.packetSent(1003, i, 1200, true);
    expect(chunks.length).toBeGreaterThan(2);
  });

  it("parseQlog rejects what is not a trace, and skips a truncated last record", () => {
    expect(() => parseQlog('{"a":1}')).toThrow(TraceFormatError);
    const good = '\u001e{"qlog_format":"JSON-SEQ"}\n\u001e{"time":1,"name":"x","data":{}}\n\u001e{"time":2,"na';
    expect(parseQlog(good).events).toHaveLength(1);
  });

  it("a live loopback connection writes a .sqlog file that `ackwire trace FILE` summarizes", async () => {
    const dir = tmp();
    try {
      const server = await listen({ protocolId: 0x7ace, host: "127.0.0.1", port: 0 });
      const got = new Promise<void>((resolve) => server.on("connection", (conn) => conn.on("message", () => resolve())));
      const conn = await connect(`127.0.0.1:${server.address.port}`, { protocolId: 0x7ace, trace: qlogFiles(dir) });
      conn.send(new Uint8Array(100), { channel: 0 });
      await got;
      await conn.close("normal");
      await server.close();
      const files = fs.readdirSync(dir);
      expect(files).toHaveLength(1);
      expect(files[0]).toMatch(/^client-\d+-\d+\.sqlog$/);
      const path = `${dir}/${files[0]}`;
      const s = summarize(parseQlog(fs.readFileSync(path, "utf8")));
      expect(s.packetsSent).toBeGreaterThan(0);
      expect(s.closed).toBe("normal");
      const out: string[] = [];
      const io = { out: (t: string) => void out.push(t), err: (t: string) => void out.push(t) };
      expect(await main(["trace", path], { io })).toBe(0);
      expect(out.join("\n")).toMatch(/^client connection, [\d.]+ s, closed: normal\npackets sent \d+/);
      fs.writeFileSync(`${dir}/bad.sqlog`, "hello");
      expect(await main(["trace", `${dir}/bad.sqlog`], { io })).toBe(1);
      expect(await main(["trace"], { io })).toBe(2);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
