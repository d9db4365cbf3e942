/**
 * ackwire on Bun: Bun.udpSocket. Sends of one drain go out in one sendMany() call, copied into
 * a reused slab (what the kernel refuses waits for "drain" and keeps its copy). Receive: the
 * first datagram of an event-loop turn goes to the driver at once (a ping-pong never waits a
 * turn); the rest of the burst is only recorded and delivered as one batch on setImmediate.
 * Bun has no buffer-size or fragmentation option, so the kernel buffers are raised and IP
 * fragmentation is turned off (for path MTU discovery) through setsockopt on the socket's fd
 * (socket-options.ts). A client's socket is connected to its server
 * (`OpenSocketOptions.peer`): its sends carry no address, which the kernel and Bun serve with
 * less work per datagram (bench/adapters/bun-connected-send.js: ~0.7 us less CPU per 1000 B
 * datagram in a loopback sendMany). `import { listen, connect } from "ackwire/bun"`.
 */
import { AddressCache, formatAddress, isIpv6Literal, SenderNames } from "../../src/api/address.js";
import { TurnReceiver } from "../../src/api/turn-receiver.js";
import { SocketError } from "../../src/api/errors.js";
import { createRuntime } from "../../src/api/runtime.js";
import { SendSlab } from "../../src/api/send-slab.js";
import type { DatagramSocket, OpenSocketOptions, RuntimeAdapter } from "../../src/api/socket.js";
import { bindError, resolveWithNodeDns } from "../node/socket.js";
import { setNoFragment, setSocketBuffers } from "./socket-options.js";

// The slice of Bun's API used here, declared locally (no bun-types in the build).
interface BunUdpSocket {
  readonly port: number;
  readonly hostname: string;
  /** The OS socket (a file descriptor on Linux and macOS). */
  readonly fd?: number;
  /** Unconnected: (data, port, address). Connected: (data) only. */
  send(data: Uint8Array, port?: number, address?: string): boolean;
  /**
   * Unconnected: a flat list data, port, address, data, port, address... Connected: data, data...
   * Returns how many datagrams were sent.
   */
  sendMany(packets: (Uint8Array | number | string)[]): number;
  /** SO_BROADCAST (Bun >= 1.1.x). */
  setBroadcast?(flag: boolean): void;
  close(): void;
}

interface BunUdpOptions {
  hostname: string;
  port: number;
  binaryType: "uint8array";
  /** Connects the socket to one peer: sends then name no address, and only it is received. */
  connect?: { hostname: string; port: number };
  socket: {
    data(socket: BunUdpSocket, data: Uint8Array, port: number, address: string): void;
    drain(socket: BunUdpSocket): void;
    /** Bun passes the error alone (Bun 1.4: one argument). */
    error?(error: Error): void;
  };
}

interface BunGlobal {
  udpSocket(options: BunUdpOptions): Promise<BunUdpSocket>;
}

/** Bound on datagrams waiting for the socket to drain; beyond it they are dropped (UDP). */
const MAX_PENDING_SENDS = 8192;

async function openBunSocket(options: OpenSocketOptions): Promise<DatagramSocket> {
  const bun = (globalThis as unknown as { Bun: BunGlobal }).Bun;
  const counters = { sendFailures: 0, receiveErrors: 0 };
  const receiver = new TurnReceiver();
  const senders = new SenderNames();
  let open = true;
  // sendMany list of copies (the engine's bytes are only valid until its next call): flat
  // (data, port, address) triples, or only the data on a connected socket.
  let pending: (Uint8Array | number | string)[] = [];
  const slab = new SendSlab();
  let udp: BunUdpSocket;
  /** The connected peer's address text as the driver writes it; undefined when unconnected. */
  let peer: string | undefined;
  let stride = 3;
  let onUnreachable: (() => void) | undefined;
  /** A connected socket's ECONNREFUSED: the ICMP port unreachable its peer's host sent back. */
  const checkUnreachable = (error: unknown): void => {
    if (peer !== undefined && isConnectionRefused(error)) onUnreachable?.();
  };
  /** Hands `pending` to the kernel; returns how many datagrams it took. Throws what Bun throws. */
  const sendPending = (): number => {
    // One datagram (a ping-pong, a game tick): send() skips sendMany's list walk.
    if (pending.length === stride) {
      const data = pending[0] as Uint8Array;
      return (stride === 1 ? udp.send(data) : udp.send(data, pending[1] as number, pending[2] as string)) ? 1 : 0;
    }
    return udp.sendMany(pending);
  };
  const flush = (): void => {
    // Two attempts at most: Bun throws when the kernel reports an error on the socket (on a
    // connected one, ECONNREFUSED after an ICMP port unreachable from a server that went away).
    // The error is used up by that call: the head datagram is counted as failed and dropped
    // (UDP; the session resends what matters), and the rest is tried once more.
    for (let attempt = 0; attempt < 2 && open && pending.length > 0; attempt++) {
      let sent: number;
      let refused = false;
      try {
        sent = sendPending();
      } catch (error) {
        checkUnreachable(error);
        counters.sendFailures++;
        sent = 1;
        refused = true;
      }
      if (sent * stride >= pending.length) {
        // Every copy is with the kernel (or dropped): the slab is free again.
        pending.length = 0;
        slab.releaseAll();
        return;
      }
      pending = pending.slice(sent * stride);
      if (!refused) return; // the kernel's buffer is full: the rest waits for "drain"
    }
  };
  const bunOptions: BunUdpOptions = {
    hostname: options.host,
    port: options.port,
    binaryType: "uint8array",
    socket: {
      data(_socket, data, port, address) {
        receiver.push(senders.get(address, port), data);
      },
      drain() {
        flush();
      },
      error(error) {
        // A datagram larger than the link (a path MTU probe: sockets never fragment, see
        // socket-options.ts) is reported here as well as thrown by the send that flush()
        // counts as a send failure; it is not a receive error.
        if (isMessageTooBig(error)) return;
        counters.receiveErrors++;
        checkUnreachable(error);
      },
    },
  };
  try {
    if (options.peer !== undefined) {
      try {
        udp = await bun.udpSocket({ ...bunOptions, connect: { hostname: options.peer.host, port: options.peer.port } });
        peer = formatAddress(options.peer.host, options.peer.port);
        stride = 1;
      } catch {
        // Connecting is an optimization: a Bun without it binds unconnected below.
        udp = await bun.udpSocket(bunOptions);
      }
    } else {
      udp = await bun.udpSocket(bunOptions);
    }
  } catch (error) {
    throw bindError(error as Error, options.host, options.port);
  }
  if (options.broadcast === true) {
    if (typeof udp.setBroadcast !== "function") {
      udp.close();
      throw new SocketError(`cannot allow broadcast on UDP ${formatAddress(options.host, options.port)}`, new Error("this Bun has no udpSocket setBroadcast(); update Bun"));
    }
    udp.setBroadcast(true);
  }
  // Bun has no buffer-size option: without this the kernel default (~92 datagrams of 1000 B)
  // overflows under a reliable window's burst (see socket-options.ts).
  await setSocketBuffers(udp.fd, options.receiveBufferBytes, options.sendBufferBytes);
  // Datagrams leave unfragmented (DF), so a path MTU probe that is too big is lost rather than
  // carried in fragments (see socket-options.ts).
  await setNoFragment(udp.fd, isIpv6Literal(options.host));
  const addresses = new AddressCache();
  return {
    localAddress: { host: udp.hostname, port: udp.port },
    counters,
    send(bytes, to) {
      if (!open) return;
      if (pending.length >= MAX_PENDING_SENDS * stride) {
        counters.sendFailures++;
        return;
      }
      if (peer !== undefined) {
        // A connected socket sends only to its peer: anything else is counted, not sent.
        if (to === peer) pending.push(slab.copy(bytes));
        else counters.sendFailures++;
        return;
      }
      const { host, port } = addresses.get(to);
      pending.push(slab.copy(bytes), port, host);
    },
    flush,
    onDatagrams(cb) {
      receiver.onDatagrams(cb);
    },
    onPeerUnreachable(callback) {
      onUnreachable = callback;
    },
    close() {
      if (open) {
        flush();
        open = false;
        receiver.close();
        udp.close();
      }
      return Promise.resolve();
    },
  };
}

function isConnectionRefused(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  return e?.code === "ECONNREFUSED" || (typeof e?.message === "string" && e.message.includes("ECONNREFUSED"));
}

function isMessageTooBig(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  return e?.code === "EMSGSIZE" || (typeof e?.message === "string" && e.message.includes("EMSGSIZE"));
}

export const bunAdapter: RuntimeAdapter = {
  name: "bun",
  openSocket: openBunSocket,
  resolve: resolveWithNodeDns,
};

export const { listen, connect, listenRelay } = createRuntime(bunAdapter);
export * from "../../src/api/public.js";
