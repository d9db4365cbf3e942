// Raw UDP on each runtime's own socket API: the physical ceiling on this machine.
// Both ends live in this one process, bound to 127.0.0.1. A (the sender of the throughput runs)
// is connected to B where the runtime's API allows it (Node, Bun), as ackwire connects a
// client's socket to its server: a connected send does less work per datagram, so the ceiling
// gets the same advantage ackwire's client has. B stays unconnected, as a server's socket is.

import type { DenoDatagramConn, DenoUdpAddr } from "../../../runtimes/deno/index.js";
import type { MessagePair } from "../driver.js";
import { g, importDynamic, runtimeName, type DgramModule, type DgramSocket } from "../../lib/host.js";

const HOST = "127.0.0.1";
/** Node can raise SO_RCVBUF/SO_SNDBUF up to rmem_max/wmem_max (4 MiB on this machine kind). */
const NODE_SOCKET_BUFFER = 4 * 1024 * 1024;

export function rawUdpPair(): Promise<MessagePair> {
  switch (runtimeName()) {
    case "bun":
      return bunUdpPair();
    case "deno":
      return denoUdpPair();
    default:
      return nodeUdpPair();
  }
}

export function rawUdpApiName(): string {
  switch (runtimeName()) {
    case "bun":
      return "Bun.udpSocket + sendMany (A connected to B)";
    case "deno":
      return "Deno.listenDatagram (--unstable-net)";
    default:
      return "node:dgram (4 MiB socket buffers, A connected to B)";
  }
}

// ---- Node: node:dgram ------------------------------------------------------

async function nodeUdpPair(): Promise<MessagePair> {
  const dgram = await importDynamic<DgramModule>("node:dgram");
  const bindOne = (): Promise<DgramSocket> =>
    new Promise((resolve, reject) => {
      const s = dgram.createSocket("udp4");
      s.on("error", reject);
      s.bind(0, HOST, () => {
        s.setRecvBufferSize(NODE_SOCKET_BUFFER);
        s.setSendBufferSize(NODE_SOCKET_BUFFER);
        resolve(s);
      });
    });
  const a = await bindOne();
  const b = await bindOne();
  const portA = a.address().port;
  const portB = b.address().port;
  await new Promise<void>((resolve, reject) => a.connect(portB, HOST, (err) => (err ? reject(err) : resolve())));
  let closed = false; // a transport layered on top may still flush from a queued callback
  const pair: MessagePair = {
    reliable: false,
    copiesOnSend: true, // the driver's buffer pool outlives any send in flight
    onA: () => {},
    onB: () => {},
    sendAtoB: (m) => {
      if (!closed) a.send(m); // connected to B
    },
    sendBtoA: (m) => {
      if (!closed) b.send(m, portA, HOST);
    },
    flush: () => {},
    close: async () => {
      closed = true;
      await new Promise<void>((r) => a.close(() => r()));
      await new Promise<void>((r) => b.close(() => r()));
    },
  };
  a.on("message", (m) => pair.onA(m));
  b.on("message", (m) => pair.onB(m));
  return pair;
}

// ---- Bun: Bun.udpSocket, sends batched through sendMany --------------------

interface BunUdpSocket {
  readonly port: number;
  send(data: Uint8Array, port: number, address: string): boolean;
  /**
   * Flat list [data, port, address, data, port, address, ...], or [data, data, ...] on a
   * connected socket; returns packets sent.
   */
  sendMany(packets: readonly (Uint8Array | number | string)[]): number;
  close(): void;
}
interface BunUdpOptions {
  hostname: string;
  port: number;
  connect?: { hostname: string; port: number };
  socket: {
    data(sock: BunUdpSocket, data: Uint8Array, port: number, address: string): void;
    drain?(sock: BunUdpSocket): void;
  };
}
interface BunGlobal {
  udpSocket(opt: BunUdpOptions): Promise<BunUdpSocket>;
}

/** Queues datagrams and hands them to sendMany in one call; keeps what the kernel refused. */
class BunBatcher {
  private queue: (Uint8Array | number | string)[] = [];
  /** port() === undefined: the socket is connected, the list holds only the data. */
  constructor(
    private readonly sock: () => BunUdpSocket,
    private readonly port: (() => number) | undefined,
    private readonly isClosed: () => boolean,
  ) {}
  push(m: Uint8Array): void {
    if (this.port === undefined) this.queue.push(m);
    else this.queue.push(m, this.port(), HOST);
  }
  flush(): void {
    if (this.queue.length === 0 || this.isClosed()) return;
    const stride = this.port === undefined ? 1 : 3;
    const sent = this.sock().sendMany(this.queue);
    // Whatever did not fit waits for the drain callback (or is dropped on close).
    this.queue = sent * stride >= this.queue.length ? [] : this.queue.slice(sent * stride);
  }
}

async function bunUdpPair(): Promise<MessagePair> {
  const bun = (g as unknown as { Bun: BunGlobal }).Bun;
  let a!: BunUdpSocket;
  let b!: BunUdpSocket;
  const toB = new BunBatcher(() => a, undefined, () => closed); // a is connected to b
  const toA = new BunBatcher(() => b, () => a.port, () => closed);
  const pair: MessagePair = {
    reliable: false,
    copiesOnSend: true, // sendMany copies into the kernel before it returns
    onA: () => {},
    onB: () => {},
    sendAtoB: (m) => toB.push(m),
    sendBtoA: (m) => toA.push(m),
    flush: () => {
      toB.flush();
      toA.flush();
    },
    close: async () => {
      closed = true;
      a.close();
      b.close();
    },
  };
  let closed = false;
  b = await bun.udpSocket({
    hostname: HOST,
    port: 0,
    socket: { data: (_s, d) => pair.onB(d), drain: () => toA.flush() },
  });
  a = await bun.udpSocket({
    hostname: HOST,
    port: 0,
    connect: { hostname: HOST, port: b.port },
    socket: { data: (_s, d) => pair.onA(d), drain: () => toB.flush() },
  });
  return pair;
}

// ---- Deno: Deno.listenDatagram (needs --unstable-net) ---------------------

interface DenoGlobal {
  listenDatagram?(opt: DenoUdpAddr): DenoDatagramConn;
}

async function denoUdpPair(): Promise<MessagePair> {
  const deno = (g as unknown as { Deno: DenoGlobal }).Deno;
  if (typeof deno.listenDatagram !== "function") {
    throw new Error("Deno.listenDatagram is not a function: run deno with --unstable-net");
  }
  const a = deno.listenDatagram({ hostname: HOST, port: 0, transport: "udp" });
  const b = deno.listenDatagram({ hostname: HOST, port: 0, transport: "udp" });
  const addrA: DenoUdpAddr = { transport: "udp", hostname: HOST, port: a.addr.port };
  const addrB: DenoUdpAddr = { transport: "udp", hostname: HOST, port: b.addr.port };
  let closed = false;
  const ignoreClosed = (err: unknown): void => {
    if (!closed) throw err;
  };
  // Sends are not awaited (awaiting each one halves the rate); they may leave out of
  // order, which the unreliable driver tolerates and counts.
  const pair: MessagePair = {
    reliable: false,
    copiesOnSend: true,
    onA: () => {},
    onB: () => {},
    sendAtoB: (m) => {
      if (!closed) void a.send(m, addrB).catch(ignoreClosed);
    },
    sendBtoA: (m) => {
      if (!closed) void b.send(m, addrA).catch(ignoreClosed);
    },
    flush: () => {},
    close: async () => {
      closed = true;
      a.close();
      b.close();
    },
  };
  // Same receive technique as ackwire's Deno adapter (runtimes/deno): each datagram lands in a
  // fresh region of a 64 KiB slab passed to receive(). Without a buffer argument (as the async
  // iterator does) Deno allocates and zeroes a 64 KiB buffer per datagram, which would make this
  // ceiling lower than what the runtime's socket API can do.
  const REGION = 1501;
  const SLAB = 64 * 1024;
  const readLoop = async (conn: DenoDatagramConn, deliver: (m: Uint8Array) => void): Promise<void> => {
    let slab = new Uint8Array(SLAB);
    let used = 0;
    try {
      while (!closed) {
        if (used + REGION > slab.length) {
          slab = new Uint8Array(SLAB);
          used = 0;
        }
        const [data] = await conn.receive(slab.subarray(used, used + REGION));
        used += data.length;
        deliver(data);
      }
    } catch (err) {
      ignoreClosed(err);
    }
  };
  void readLoop(a, (m) => pair.onA(m));
  void readLoop(b, (m) => pair.onB(m));
  return pair;
}
