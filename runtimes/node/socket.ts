/**
 * node:dgram as a DatagramSocket. Also the fallback socket for Deno without --unstable-net.
 * node:* modules are loaded with a string-typed dynamic import: the project compiles without
 * @types/node, and importing this file never touches node:dgram until a socket is opened.
 */
import { formatAddress, AddressCache, isIpv6Literal } from "../../src/api/address.js";
import { AddressInUseError, AddressNotAvailableError, HostNotFoundError, SocketError } from "../../src/api/errors.js";
import { deferToNextTurn } from "../../src/api/host.js";
import type { DatagramBatch, DatagramSocket, OpenSocketOptions } from "../../src/api/socket.js";

interface RemoteInfo {
  address: string;
  port: number;
}

interface NodeUdpSocket {
  bind(port: number, address: string, callback: () => void): void;
  on(event: "message", listener: (msg: Uint8Array, rinfo: RemoteInfo) => void): void;
  on(event: "error", listener: (error: Error & { code?: string }) => void): void;
  once(event: "error", listener: (error: Error & { code?: string }) => void): void;
  off(event: "error", listener: (error: Error & { code?: string }) => void): void;
  send(msg: Uint8Array, port: number, address: string): void;
  address(): { address: string; port: number };
  setRecvBufferSize(bytes: number): void;
  setSendBufferSize(bytes: number): void;
  close(callback?: () => void): void;
}

interface NodeDgram {
  createSocket(options: { type: "udp4" | "udp6"; ipv6Only?: boolean }): NodeUdpSocket;
}

interface NodeDns {
  lookup(host: string, options: { all: true }): Promise<{ address: string; family: number }[]>;
}

export async function importNodeModule<T>(name: string): Promise<T> {
  return (await import(name)) as T;
}

/** Binds a node:dgram socket (udp6 for an IPv6 host) and wires it as a DatagramSocket. */
export async function openNodeSocket(options: OpenSocketOptions): Promise<DatagramSocket> {
  const dgram = await importNodeModule<NodeDgram>("node:dgram");
  const v6 = isIpv6Literal(options.host);
  const udp = dgram.createSocket({ type: v6 ? "udp6" : "udp4" });
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error & { code?: string }): void => reject(bindError(error, options.host, options.port));
    udp.once("error", onError);
    udp.bind(options.port, options.host, () => {
      udp.off("error", onError);
      resolve();
    });
  });
  // Raise the kernel buffers so a burst does not overflow them; the OS caps at rmem_max/wmem_max.
  try {
    if (options.receiveBufferBytes) udp.setRecvBufferSize(options.receiveBufferBytes);
    if (options.sendBufferBytes) udp.setSendBufferSize(options.sendBufferBytes);
  } catch {
    // Above the OS cap: keep the default rather than fail.
  }
  const bound = udp.address();
  const counters = { sendFailures: 0, receiveErrors: 0 };
  const addresses = new AddressCache();
  const batch: DatagramBatch = { length: 0, from: [], bytes: [] };
  let callback: (batch: DatagramBatch) => void = () => {};
  let deliveryQueued = false;
  let open = true;
  // node:dgram emits one "message" per datagram; those of one poll are delivered as one batch.
  const deliver = (): void => {
    deliveryQueued = false;
    if (!open || batch.length === 0) return;
    callback(batch);
    batch.length = 0;
  };
  udp.on("message", (msg, rinfo) => {
    const n = batch.length++;
    batch.from[n] = formatAddress(rinfo.address, rinfo.port);
    batch.bytes[n] = msg; // a fresh Buffer per datagram: safe to hand over without a copy
    if (!deliveryQueued) {
      deliveryQueued = true;
      deferToNextTurn(deliver);
    }
  });
  udp.on("error", () => void counters.receiveErrors++);
  return {
    localAddress: { host: bound.address, port: bound.port },
    counters,
    send(bytes, to) {
      if (!open) return;
      const { host, port } = addresses.get(to);
      try {
        // libuv may queue the send when the socket buffer is full and read the bytes later, so
        // the arena view is copied.
        udp.send(bytes.slice(), port, host);
      } catch {
        counters.sendFailures++;
      }
    },
    flush() {},
    onDatagrams(cb) {
      callback = cb;
    },
    close() {
      if (!open) return Promise.resolve();
      open = false;
      return new Promise<void>((resolve) => udp.close(() => resolve()));
    },
  };
}

export function bindError(error: Error & { code?: string; name?: string }, host: string, port: number): Error {
  if (error.code === "EADDRINUSE" || error.name === "AddrInUse") return new AddressInUseError(host, port, error);
  if (error.code === "EADDRNOTAVAIL" || error.name === "AddrNotAvailable") return new AddressNotAvailableError(host, error);
  return new SocketError(`cannot bind UDP ${formatAddress(host, port)}`, error);
}

/** Host name -> IP through the OS resolver (node:dns works on Node, Bun and Deno). IPv4 first. */
export async function resolveWithNodeDns(host: string): Promise<string> {
  if (host === "localhost") return "127.0.0.1";
  try {
    const dns = await importNodeModule<{ promises: NodeDns }>("node:dns");
    const all = await dns.promises.lookup(host, { all: true });
    const pick = all.find((a) => a.family === 4) ?? all[0];
    if (pick === undefined) throw new Error("no addresses");
    return pick.address;
  } catch (error) {
    throw new HostNotFoundError(host, error);
  }
}
