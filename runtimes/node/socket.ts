/**
 * node:dgram as a DatagramSocket. Also the fallback socket for Deno without --unstable-net.
 * node:* modules are loaded with a string-typed dynamic import: the project compiles without
 * @types/node, and importing this file never touches node:dgram until a socket is opened.
 */
import { formatAddress, AddressCache, isIpv6Literal, SenderNames } from "../../src/api/address.js";
import { AddressInUseError, AddressNotAvailableError, HostNotFoundError, SocketError } from "../../src/api/errors.js";
import { TurnReceiver } from "../../src/api/turn-receiver.js";
import { SendSlab } from "../../src/api/send-slab.js";
import type { HostPort } from "../../src/api/address.js";
import type { Address } from "../../src/session/sans-io.js";
import type { DatagramSocket, OpenSocketOptions } from "../../src/api/socket.js";

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
  /** On a connected socket: to the peer it is connected to. */
  send(msg: Uint8Array): void;
  /** Calls back with no argument once connected, with the error if connecting failed. */
  connect(port: number, address: string, callback: (error?: Error) => void): void;
  /** Sends libuv still holds (queued because the kernel buffer was full). Node >= 18.8. */
  getSendQueueCount?(): number;
  address(): { address: string; port: number };
  setRecvBufferSize(bytes: number): void;
  setBroadcast(flag: boolean): void;
  setSendBufferSize(bytes: number): void;
  close(callback?: () => void): void;
}

/** node:dgram's `lookup` option: (address, family, callback). */
type SyncLookup = (address: string, family: unknown, callback: (error: Error | null, address: string, family: number) => void) => void;

interface NodeDgram {
  createSocket(options: { type: "udp4" | "udp6"; lookup?: SyncLookup }): NodeUdpSocket;
}

interface NodeDns {
  lookup(host: string, options: { all: true }): Promise<{ address: string; family: number }[]>;
}

export async function importNodeModule<T>(name: string): Promise<T> {
  return (await import(name)) as T;
}

/** Binds a node:dgram socket (udp6 for an IPv6 host) and wires it as a DatagramSocket. */
export interface NodeSendOptions {
  /**
   * The runtime is Node itself, whose udp_wrap tries the send synchronously and queues the
   * buffer only on EAGAIN (so an empty send queue after `send()` means the copy is free). Other
   * runtimes' node:dgram emulations may send later: they keep a fresh copy per datagram.
   */
  reuseCopies?: boolean;
  /**
   * Connect a client's socket to its one peer (`OpenSocketOptions.peer`). A bare node:dgram
   * ping-pong over loopback measured ~0.6 us less per round trip with one side connected (the
   * kernel's route lookup per datagram, and node:dgram's lookup step); ackwire's ping p50
   * 0.2-0.4 us less. Only Node's own node:dgram is trusted with this.
   */
  connectToPeer?: boolean;
}

/**
 * Binds a node:dgram socket (udp6 for an IPv6 host) and wires it as a DatagramSocket.
 *
 * Receive: the first datagram of an event-loop turn is handed to the driver at once (a
 * ping-pong never waits for the next turn); the rest of that turn's burst is collected and
 * delivered as one batch on `setImmediate`, so bulk traffic keeps one service per burst.
 *
 * Send: node:dgram resolves the address before sending, by default with dns.lookup, which
 * answers on process.nextTick even for an IP literal, so the send itself runs later. The driver
 * only ever sends to IP literals, so the socket gets a lookup that answers synchronously, and
 * `send()` reaches libuv's `uv_udp_try_send` before it returns. Only when the kernel refuses
 * (EAGAIN) does libuv queue the buffer and read it later (Node's udp_wrap: try_send, then
 * uv_udp_send with the same buffer, no copy). Hence each datagram is copied into a slab; on Node
 * (`reuseCopies`) the slab is reused as soon as libuv's send queue is empty again.
 */
export async function openNodeSocket(options: OpenSocketOptions, nodeSends: NodeSendOptions = {}): Promise<DatagramSocket> {
  const dgram = await importNodeModule<NodeDgram>("node:dgram");
  const v6 = isIpv6Literal(options.host);
  const family = v6 ? 6 : 4; // the driver sends only to IP literals of the socket's own family
  let lookupAnswered = false;
  const lookup: SyncLookup = (address, _family, callback) => {
    lookupAnswered = true;
    callback(null, address, family);
  };
  // Not on Deno's node:dgram: there close()'s callback never comes for a socket made with a
  // `lookup`, so close() hung (its sends then go through its own lookup; lookupAnswered stays
  // false, so they are treated as asynchronous: copies are kept until the send queue empties).
  const onDeno = (globalThis as { Deno?: unknown }).Deno !== undefined;
  const udp = dgram.createSocket(onDeno ? { type: v6 ? "udp6" : "udp4" } : { type: v6 ? "udp6" : "udp4", lookup });
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
  if (options.broadcast === true) {
    try {
      udp.setBroadcast(true);
    } catch (error) {
      udp.close();
      throw new SocketError(`cannot allow broadcast on UDP ${formatAddress(options.host, options.port)}`, error);
    }
  }
  // Read before connecting: a connected socket reports the source address the route picked.
  const bound = udp.address();
  const peer = nodeSends.connectToPeer === true && options.peer !== undefined ? await connectTo(udp, options.peer) : undefined;
  const counters = { sendFailures: 0, receiveErrors: 0 };
  const addresses = new AddressCache();
  const senders = new SenderNames();
  const slab = new SendSlab();
  // Reuse the slab only while every send is known to have run synchronously (a runtime whose
  // node:dgram ignores or defers the lookup keeps allocating fresh slabs instead).
  let sendsAreSynchronous = nodeSends.reuseCopies === true && typeof udp.getSendQueueCount === "function";
  const receiver = new TurnReceiver();
  let open = true;
  udp.on("message", (msg, rinfo) => {
    // `msg` is a fresh Buffer per datagram: safe to hand over without a copy.
    receiver.push(senders.get(rinfo.address, rinfo.port), msg);
  });
  let onUnreachable: (() => void) | undefined;
  udp.on("error", (error) => {
    counters.receiveErrors++;
    // A connected socket hears the ICMP port unreachable its peer's host sent back.
    if (error.code === "ECONNREFUSED" && peer !== undefined) onUnreachable?.();
  });
  return {
    localAddress: { host: bound.address, port: bound.port },
    counters,
    send(bytes, to) {
      if (!open) return;
      if (to === peer) {
        // Connected: node:dgram sends at once, without the lookup.
        try {
          udp.send(slab.copy(bytes));
        } catch {
          counters.sendFailures++;
        }
      } else if (peer !== undefined) {
        // A connected socket cannot send elsewhere (and node:dgram's send(bytes, port, host)
        // would take port and host for offset and length and send to the peer): counted.
        counters.sendFailures++;
      } else {
        const { host, port } = addresses.get(to);
        lookupAnswered = false;
        try {
          udp.send(slab.copy(bytes), port, host);
        } catch {
          counters.sendFailures++;
        }
        if (!lookupAnswered) sendsAreSynchronous = false;
      }
      if (sendsAreSynchronous && udp.getSendQueueCount!() === 0) slab.releaseAll();
    },
    flush() {},
    onDatagrams(cb) {
      receiver.onDatagrams(cb);
    },
    onPeerUnreachable(callback) {
      onUnreachable = callback;
    },
    close() {
      if (!open) return Promise.resolve();
      open = false;
      receiver.close();
      return new Promise<void>((resolve) => udp.close(() => resolve()));
    },
  };
}

/**
 * Connects `udp` to `peer` and returns the peer's address text as the driver writes it, or
 * undefined if connecting failed (the socket then stays unconnected and sends name the peer).
 * A connected UDP socket also only receives from its peer (the endpoint of a client would drop
 * anything else as from an unknown peer) and gets ICMP errors (port unreachable) reported,
 * which count as receive errors.
 */
async function connectTo(udp: NodeUdpSocket, peer: HostPort): Promise<Address | undefined> {
  const connected = await new Promise<boolean>((resolve) => udp.connect(peer.port, peer.host, (error) => resolve(error === undefined)));
  return connected ? formatAddress(peer.host, peer.port) : undefined;
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
