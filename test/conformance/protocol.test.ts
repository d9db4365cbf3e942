// docs/PROTOCOL.md's promise, checked: a client written only from the document (doc-codec.ts,
// which imports nothing of the project) talks to a real server, listen() on 127.0.0.1. It
// builds every packet from the document's tables, and decodes the server's replies with the
// same tables: the handshake (a denied old wire version, then CONNECT_REQUEST -> CHALLENGE ->
// CONNECT_RESPONSE -> ACCEPT, user data both ways), DATA with a frame of each delivery kind and
// a fragmented message, a GAP frame, the system channel's CLOCK_REQUEST/REPLY, acks both ways (a server
// receipt resolves on the document's ack), a pure ack with ackDelay, LATE_ACK both ways, KEEPALIVE, DISCONNECT and
// its ack, and NO_CONNECTION for data after the connection is gone.
import { createSocket, type Socket } from "node:dgram";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { listen, type Connection, type Message, type Server } from "../../src/index.js";
import {
  channelConfigHash,
  connectionPrefix,
  connectRequest,
  connectResponse,
  dataBody,
  decodeControl,
  decodeData,
  disconnect,
  encodeFrame,
  Kind,
  newer,
  protocolPrefix,
  seal,
  SYSTEM_CHANNEL,
  System,
  Type,
  u32At,
  Writer,
  type Control,
  type Data,
} from "./doc-codec.js";

const protocolId = 0x434f4e46;
const doc = readFileSync(new URL("../../docs/PROTOCOL.md", import.meta.url), "utf8");
/** The wire version of PROTOCOL.md's title; §4's tables must state the same (a test below). */
const WIRE_VERSION = Number(/^# ackwire wire protocol, version (\d+)$/m.exec(doc)?.[1]);
/** §4's default channel table, by delivery kind, as the document lists it. */
const DEFAULT_KINDS = (() => {
  const table = doc.slice(doc.indexOf("The default channel table"));
  const rows = [...table.matchAll(/^\| (\d+) +\| (\d) \w+ +\|$/gm)];
  return rows.filter((row, i) => Number(row[1]) === i).map((row) => Number(row[2]));
})();
const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const str = (b: Uint8Array): string => new TextDecoder().decode(b);

/** A UDP socket on 127.0.0.1 with a queue of what arrives, awaited with a bounded wait. */
class DocClient {
  private readonly queue: Uint8Array[] = [];
  private wake: (() => void) | undefined;
  private constructor(readonly socket: Socket, readonly serverPort: number) {
    socket.on("message", (msg) => {
      this.queue.push(new Uint8Array(msg));
      this.wake?.();
    });
  }

  static async open(serverPort: number): Promise<DocClient> {
    const socket = createSocket("udp4");
    await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
    return new DocClient(socket, serverPort);
  }

  send(datagram: Uint8Array): void {
    this.socket.send(datagram, this.serverPort, "127.0.0.1");
  }

  /** The first queued datagram `pick` maps to a value (earlier ones it skips are kept), within `ms`. */
  async next<T>(what: string, pick: (d: Uint8Array) => T | undefined, ms = 5000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      for (let i = 0; i < this.queue.length; i++) {
        const value = pick(this.queue[i]);
        if (value !== undefined) {
          this.queue.splice(i, 1);
          return value;
        }
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${ms} ms; queued types: ${this.queue.map((d) => d[0]).join(",")}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  drain(): Uint8Array[] {
    return this.queue.splice(0);
  }

  close(): void {
    this.socket.close();
  }
}

/** The document's receive window for acks (§2): the newest sequence and the 32 before it. */
class AckState {
  newest: number | undefined;
  bits = 0;
  record(seq: number): void {
    if (this.newest === undefined) {
      this.newest = seq;
      return;
    }
    if (newer(seq, this.newest)) {
      const shift = (seq - this.newest) & 0xffff;
      this.bits = shift > 32 ? 0 : shift === 32 ? 1 << 31 : ((this.bits << shift) | (1 << (shift - 1))) >>> 0;
      this.bits >>>= 0;
      this.newest = seq;
    } else {
      const back = (this.newest - seq) & 0xffff;
      if (back >= 1 && back <= 32) this.bits = (this.bits | (1 << (back - 1))) >>> 0;
    }
  }
}

/** §2: the header's `ack`, or bit i of `ackBits` for sequence ack - 1 - i. */
function acknowledges(data: Data, sequence: number): boolean {
  const back = (data.header.ack - sequence) & 0xffff;
  return back === 0 || (back >= 1 && back <= 32 && ((data.header.ackBits >>> (back - 1)) & 1) === 1);
}

const control = (type: Control["type"]) => (d: Uint8Array) => {
  const c = decodeControl(protocolId, d);
  return typeof c !== "string" && c.type === type ? c : undefined;
};

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.reverse()) await f();
  cleanup = [];
});

async function startServer(): Promise<{ server: Server; connections: Connection[]; messages: Message[]; hookSaw: Uint8Array[] }> {
  const hookSaw: Uint8Array[] = [];
  const server = await listen({
    protocolId,
    host: "127.0.0.1",
    port: 0,
    accept: (request) => {
      hookSaw.push(request.userData.slice());
      return { accept: true, userData: text("welcome") };
    },
  });
  cleanup.push(() => server.close());
  const connections: Connection[] = [];
  const messages: Message[] = [];
  server.on("connection", (conn) => {
    connections.push(conn);
    conn.on("message", (m) => messages.push({ channel: m.channel, data: m.data.slice(), key: m.key }));
  });
  return { server, connections, messages, hookSaw };
}

async function until(what: string, check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** CONNECT_REQUEST -> CHALLENGE -> CONNECT_RESPONSE -> ACCEPT, every byte from §4. */
async function handshake(client: DocClient, salt: number): Promise<{ sessionId: number; acceptData: Uint8Array }> {
  client.send(seal(protocolPrefix(protocolId), connectRequest(WIRE_VERSION, 0, salt)));
  const challenge = await client.next("CHALLENGE", control("CHALLENGE"));
  expect(challenge.clientSalt).toBe(salt);
  const response = connectResponse(salt, challenge.cookie, WIRE_VERSION, 0, channelConfigHash(DEFAULT_KINDS), text("hello from the document"));
  client.send(seal(protocolPrefix(protocolId), response));
  const accept = await client.next("ACCEPT", control("ACCEPT"));
  expect(accept.clientSalt).toBe(salt);
  expect(accept.sessionId).not.toBe(0);
  return { sessionId: accept.sessionId, acceptData: accept.userData };
}

describe("a client written from docs/PROTOCOL.md alone", () => {
  it("takes one wire version, the default channel table and its hash from the document", () => {
    expect(WIRE_VERSION).toBeGreaterThan(0);
    const stated = [...doc.matchAll(/^\d+\s+2\s+wireVersion\s+= (\d+)/gm)].map((m) => Number(m[1]));
    expect(stated).toEqual([WIRE_VERSION, WIRE_VERSION]); // CONNECT_REQUEST and CONNECT_RESPONSE
    expect(DEFAULT_KINDS.length).toBe(8);
    const hash = /so its hash is FNV-1a of the bytes `([0-9a-f ]+)`: 0x([0-9A-F]{8})/.exec(doc);
    expect(hash?.[1]).toBe([DEFAULT_KINDS.length, ...DEFAULT_KINDS].map((b) => b.toString(16).padStart(2, "0")).join(" "));
    expect(channelConfigHash(DEFAULT_KINDS)).toBe(Number.parseInt(hash![2], 16));
  });

  it("the request is 256 bytes and the replies are the sizes of §1's table", async () => {
    const request = seal(protocolPrefix(protocolId), connectRequest(WIRE_VERSION, 0, 1));
    expect(request.length).toBe(256);
    const { server } = await startServer();
    const client = await DocClient.open(server.address.port);
    cleanup.push(() => client.close());
    client.send(request);
    const challenge = await client.next("CHALLENGE", (d) => (d[0] === Type.Challenge ? d : undefined));
    expect(challenge.length).toBe(25);
  });

  it("is denied (VersionMismatch) with the wire version before this document's", async () => {
    const { server } = await startServer();
    const client = await DocClient.open(server.address.port);
    cleanup.push(() => client.close());
    client.send(seal(protocolPrefix(protocolId), connectRequest(WIRE_VERSION - 1, 0, 0x1234)));
    const deny = await client.next("DENY", control("DENY"));
    expect(deny).toMatchObject({ clientSalt: 0x1234, reason: 2 }); // §4: 2 VersionMismatch
    client.send(seal(protocolPrefix(protocolId), connectRequest(WIRE_VERSION, 0, 0x1235)));
    expect((await client.next("CHALLENGE", control("CHALLENGE"))).clientSalt).toBe(0x1235);
  });

  it("is denied (ChannelMismatch) with another channel table's hash", async () => {
    const { server } = await startServer();
    const client = await DocClient.open(server.address.port);
    cleanup.push(() => client.close());
    client.send(seal(protocolPrefix(protocolId), connectRequest(WIRE_VERSION, 0, 77)));
    const challenge = await client.next("CHALLENGE", control("CHALLENGE"));
    const otherTable = channelConfigHash([Kind.ReliableOrdered]);
    client.send(seal(protocolPrefix(protocolId), connectResponse(77, challenge.cookie, WIRE_VERSION, 0, otherTable, new Uint8Array(0))));
    expect(await client.next("DENY", control("DENY"))).toMatchObject({ clientSalt: 77, reason: 3 });
  });

  it("connects, exchanges data of every delivery kind with acks both ways, and disconnects", async () => {
    const { server, connections, messages, hookSaw } = await startServer();
    const client = await DocClient.open(server.address.port);
    cleanup.push(() => client.close());
    const salt = 0x5a17c0de;
    const { sessionId, acceptData } = await handshake(client, salt);
    expect(str(acceptData)).toBe("welcome");
    expect(hookSaw.map(str)).toEqual(["hello from the document"]);
    await until("the server's connection event", () => connections.length === 1);
    const conn = connections[0];

    const prefix = connectionPrefix(protocolId, salt, sessionId);
    const fromServer = new AckState();
    /** Every DATA/KEEPALIVE the server sent, decoded; anything that does not decode fails the test. */
    const received: Data[] = [];
    const dataFrom = (d: Uint8Array): Data | undefined => {
      if ((d[0] & 0x0f) !== Type.Data && (d[0] & 0x0f) !== Type.Keepalive) return undefined;
      const data = decodeData(prefix, d);
      if (typeof data === "string") throw new Error(`server datagram does not decode by the document: ${data}`);
      fromServer.record(data.header.sequence);
      received.push(data);
      return data;
    };
    // The first sequence is random (§2); start just below the wrap to cross it.
    let seq = 0xfffe;
    const header = (type: number) => {
      const h = { type, acksValid: fromServer.newest !== undefined, sequence: seq, ack: fromServer.newest ?? 0, ackBits: fromServer.bits };
      seq = (seq + 1) & 0xffff;
      return h;
    };
    const sendData = (frames: Uint8Array[]): Data => {
      const h = header(Type.Data);
      const datagram = seal(prefix, dataBody(h, frames));
      client.send(datagram);
      return { header: h, frames: [], crc: u32At(datagram, datagram.length - 4) };
    };

    // One DATA, before anything was received (ACKS_VALID clear): a frame for each delivery
    // kind on the default channel table, a fragmented message, and a CLOCK_REQUEST.
    const first = sendData([
      encodeFrame({ channel: 0, kind: Kind.ReliableOrdered, messageSeq: 0, payload: text("ordered") }),
      encodeFrame({ channel: 1, kind: Kind.UnreliableSequenced, messageSeq: 0, payload: text("sequenced") }),
      encodeFrame({ channel: 2, kind: Kind.Unreliable, messageSeq: 0, payload: text("unreliable") }),
      encodeFrame({ channel: 3, kind: Kind.ReliableUnordered, messageSeq: 0, payload: text("unordered") }),
      encodeFrame({ channel: 4, kind: Kind.ReliableSequenced, messageSeq: 0, payload: text("reliable-sequenced") }),
      encodeFrame({ channel: 5, kind: Kind.LatestState, messageSeq: 0, key: 42, payload: text("state of 42") }),
      encodeFrame({ channel: 6, kind: Kind.ReliableOrdered, messageSeq: 0, fragment: { index: 0, count: 2 }, payload: text("fragme") }),
      encodeFrame({ channel: 6, kind: Kind.ReliableOrdered, messageSeq: 1, fragment: { index: 1, count: 2 }, payload: text("nted") }),
      encodeFrame({ channel: SYSTEM_CHANNEL, kind: Kind.Unreliable, messageSeq: 0, payload: new Writer().u8(System.ClockRequest).u32(123456).finish() }),
    ]);
    await until("the server delivering 7 messages", () => messages.length >= 7).catch((e) => { throw new Error(`${e.message}: ${JSON.stringify(messages.map((m) => [m.channel, str(m.data)]))} ${JSON.stringify(server.counters().session)}`); });
    expect(messages.map((m) => [m.channel, str(m.data), m.key]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual([
      [0, "ordered", undefined],
      [1, "sequenced", undefined],
      [2, "unreliable", undefined],
      [3, "unordered", undefined],
      [4, "reliable-sequenced", undefined],
      [5, "state of 42", 42],
      [6, "fragmented", undefined],
    ]);

    // A GAP frame (§3) for channel 0's messageSeq 1, then messageSeq 2: the server skips 1, which
    // never came, and delivers 2 at once instead of holding it for 1.
    sendData([
      encodeFrame({ channel: 0, kind: Kind.ReliableOrdered, messageSeq: 1, gap: true, payload: new Writer().u16(1).finish() }),
      encodeFrame({ channel: 0, kind: Kind.ReliableOrdered, messageSeq: 2, payload: text("after the gap") }),
    ]);
    await until("the message after the gap", () => messages.some((m) => m.channel === 0 && str(m.data) === "after the gap"));
    expect(messages.filter((m) => m.channel === 0).map((m) => str(m.data))).toEqual(["ordered", "after the gap"]);

    // PARITY (§3): a DATA packet the server never gets is rebuilt from its group's parity. A
    // first parity, for a packet the server has, starts its copies; then C goes, D is withheld,
    // and the parity of {C, D} brings D's message with no resend.
    const build = (frames: Uint8Array[]): { sequence: number; bytes: Uint8Array } => {
      const h = header(Type.Data);
      return { sequence: h.sequence, bytes: seal(prefix, dataBody(h, frames)) };
    };
    const parityOf = (group: { sequence: number; bytes: Uint8Array }[]): Uint8Array => {
      const n = Math.max(...group.map((g) => g.bytes.length));
      const parity = new Uint8Array(n);
      let lengthXor = 0;
      let mask = 0;
      for (const g of group) {
        g.bytes.forEach((b, i) => (parity[i] ^= b));
        lengthXor ^= g.bytes.length;
        mask |= 1 << ((g.sequence - group[0].sequence) & 0xffff);
      }
      const payload = new Writer().u8(System.Parity).u16(group[0].sequence).u16(mask).u16(lengthXor).raw(parity).finish();
      return encodeFrame({ channel: SYSTEM_CHANNEL, kind: Kind.Unreliable, messageSeq: 0, payload });
    };
    const kept = (label: string, messageSeq: number) => build([encodeFrame({ channel: 3, kind: Kind.ReliableUnordered, messageSeq, payload: text(label) })]);
    const a = kept("before any parity", 1);
    client.send(a.bytes);
    await until("the message before any parity", () => messages.some((m) => m.channel === 3 && str(m.data) === "before any parity"));
    client.send(build([parityOf([a])]).bytes);
    const c = kept("kept", 2);
    const d = kept("rebuilt from parity", 3);
    client.send(c.bytes);
    client.send(build([parityOf([c, d])]).bytes);
    await until("the message rebuilt from parity", () => messages.some((m) => m.channel === 3 && str(m.data) === "rebuilt from parity"));
    expect(messages.filter((m) => m.channel === 3).map((m) => str(m.data))).toEqual(["unordered", "before any parity", "kept", "rebuilt from parity"]);

    // The server acknowledges that packet (ACKS_VALID, ack = its sequence) and answers the
    // clock request on the system channel (§3: CLOCK_REPLY echoes clientSendTime).
    await client.next("an ack of the first DATA", (d) => {
      const data = dataFrom(d);
      return data && data.header.acksValid && acknowledges(data, first.header.sequence) ? data : undefined;
    });
    const reply = received.flatMap((d) => d.frames).find((f) => f.channel === SYSTEM_CHANNEL && f.payload[0] === System.ClockReply)
      ?? (await client.next("CLOCK_REPLY", (d) => dataFrom(d)?.frames.find((f) => f.channel === SYSTEM_CHANNEL && f.payload[0] === System.ClockReply)));
    expect(reply.kind).toBe(Kind.Unreliable);
    expect(reply.payload.length).toBe(13);
    expect(u32At(reply.payload, 1)).toBe(123456);
    expect(Number.isFinite(new DataView(reply.payload.buffer, reply.payload.byteOffset).getFloat64(5, true))).toBe(true);

    // The server sends a message with a receipt; it resolves true only when our ack of the
    // packet that carried it (§2's ack and ackBits) arrives.
    const receipt = conn.send(text("from the server"), { channel: 0, receipt: true });
    const carried = await client.next("the server's message", (d) => {
      const data = dataFrom(d);
      const frame = data?.frames.find((f) => f.channel === 0 && str(f.payload) === "from the server");
      return frame && { data, frame };
    });
    expect(carried.frame).toMatchObject({ kind: Kind.ReliableOrdered, messageSeq: 0 });
    let settled: boolean | undefined;
    void receipt.then((delivered) => (settled = delivered));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(settled).toBeUndefined(); // not acknowledged yet
    // A pure ack (§2: a 15-byte DATA whose 2-byte frames area is ackDelay).
    const pureAck = seal(prefix, dataBody(header(Type.Data), { ackDelay: 10 }));
    expect(pureAck.length).toBe(15);
    client.send(pureAck);
    expect(await receipt).toBe(true);

    // KEEPALIVE (§2: the DATA header, no frames), acknowledged by the server.
    const keepalive = header(Type.Keepalive);
    const keepaliveDatagram = seal(prefix, dataBody(keepalive, []));
    expect(keepaliveDatagram.length).toBe(13);
    client.send(keepaliveDatagram);
    await client.next("an ack of the KEEPALIVE", (d) => {
      const data = dataFrom(d);
      return data && data.header.acksValid && data.header.ack === keepalive.sequence ? data : undefined;
    });
    // LATE_ACK (§3), both ways. A packet that arrives 40 sequences behind the newest is named
    // by no header: the server acknowledges it in a LATE_ACK frame.
    const skipped = seq;
    seq = (seq + 40) & 0xffff;
    sendData([encodeFrame({ channel: 2, kind: Kind.Unreliable, messageSeq: 2, payload: text("ahead") })]);
    client.send(seal(prefix, dataBody({ ...header(Type.Data), sequence: skipped }, [encodeFrame({ channel: 2, kind: Kind.Unreliable, messageSeq: 3, payload: text("behind") })])));
    seq = (seq - 1) & 0xffff; // header() above advanced it for the packet sent as `skipped`
    const lateAck = await client.next("a LATE_ACK naming the packet 40 behind", (d) => {
      const frame = dataFrom(d)?.frames.find((f) => f.channel === SYSTEM_CHANNEL && f.payload[0] === System.LateAck);
      if (frame === undefined) return undefined;
      for (let p = 1; p + 3 <= frame.payload.length; p += 3) {
        const first = frame.payload[p] | (frame.payload[p + 1] << 8);
        if (((skipped - first) & 0xffff) <= frame.payload[p + 2]) return frame;
      }
      return undefined;
    });
    expect((lateAck.payload.length - 1) % 3).toBe(0);
    // And the server takes one: its receipt resolves on a LATE_ACK alone, in an ack-only packet
    // whose header acknowledges nothing (ACKS_VALID clear).
    const lateReceipt = conn.send(text("acked late"), { channel: 0, receipt: true });
    const carriedLate = await client.next("the server's second message", (d) => dataFrom(d)?.frames.some((f) => f.channel === 0 && str(f.payload) === "acked late") ? dataFrom(d) : undefined);
    const lateAckPayload = new Writer().u8(System.LateAck).u16(carriedLate.header.sequence).u8(0).finish();
    client.send(seal(prefix, dataBody({ ...header(Type.Data), acksValid: false, ack: 0, ackBits: 0 }, [encodeFrame({ channel: SYSTEM_CHANNEL, kind: Kind.Unreliable, messageSeq: 0, payload: lateAckPayload })])));
    expect(await lateReceipt).toBe(true);

    // Every server packet so far carried acks that name only sequences we sent.
    const sent = new Set(Array.from({ length: (seq - 0xfffe) & 0xffff }, (_, i) => (0xfffe + i) & 0xffff));
    for (let i = 1; i < 40; i++) sent.delete((skipped + i) & 0xffff); // jumped over
    for (const d of received.filter((r) => r.header.acksValid)) expect(sent.has(d.header.ack)).toBe(true);

    const counters = server.counters().session!;
    expect(counters.drops).toMatchObject({ badCrc: 0, badLength: 0, malformedFrame: 0, unknownType: 0 });
    expect(counters.unexpectedControl).toBe(0);

    // DISCONNECT (reason 64, application-defined, with user data) -> DISCONNECT_ACK, and the
    // server application sees the reason.
    const gone = new Promise<unknown>((resolve) => conn.on("disconnect", resolve));
    client.send(seal(protocolPrefix(protocolId), disconnect(sessionId, 64, text("bye"))));
    const ack = await client.next("DISCONNECT_ACK", control("DISCONNECT_ACK"));
    expect(ack.sessionId).toBe(sessionId);
    expect(await gone).toMatchObject({ reason: { app: 64 } });

    // Data after the connection is gone draws NO_CONNECTION echoing its sequence and CRC (§4).
    client.drain();
    const late = sendData([encodeFrame({ channel: 2, kind: Kind.Unreliable, messageSeq: 1, payload: text("late") })]);
    const noConnection = await client.next("NO_CONNECTION", control("NO_CONNECTION"));
    expect(noConnection).toEqual({ type: "NO_CONNECTION", sequence: late.header.sequence, crc: late.crc });
  }, 30_000);

  it("a server's DISCONNECT decodes by §4 and is acknowledged by DISCONNECT_ACK", async () => {
    const { server, connections } = await startServer();
    const client = await DocClient.open(server.address.port);
    cleanup.push(() => client.close());
    const salt = 0x0badf00d;
    const { sessionId } = await handshake(client, salt);
    await until("the server's connection event", () => connections.length === 1);
    const closed = connections[0].close({ app: 99 });
    const bye = await client.next("DISCONNECT", control("DISCONNECT"));
    expect(bye).toMatchObject({ sessionId, reason: 99 });
    client.send(seal(protocolPrefix(protocolId), new Writer().u8(Type.DisconnectAck).u32(sessionId).finish()));
    await closed;
    // A datagram under the wrong prefix is dropped as BadCrc (§1).
    client.send(seal(protocolPrefix(protocolId + 1), connectRequest(WIRE_VERSION, 0, 5)));
    await until("the BadCrc drop", () => server.counters().session!.drops.badCrc === 1);
  });
});
