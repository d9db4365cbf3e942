/**
 * ackwire on Bun: Bun.udpSocket. Sends of one drain go out in one sendMany() call; the receive
 * callback only records the datagram (Bun's receive buffer holds ~92 datagrams of 1000 B and
 * has no size option, so a slow callback loses packets). `import { listen, connect } from "ackwire/bun"`.
 */
import { AddressCache, formatAddress } from "../../src/api/address.js";
import { deferToNextTurn } from "../../src/api/host.js";
import { createRuntime } from "../../src/api/runtime.js";
import type { DatagramBatch, DatagramSocket, OpenSocketOptions, RuntimeAdapter } from "../../src/api/socket.js";
import { bindError, resolveWithNodeDns } from "../node/socket.js";

// The slice of Bun's API used here, declared locally (no bun-types in the build).
interface BunUdpSocket {
  readonly port: number;
  readonly hostname: string;
  send(data: Uint8Array, port: number, address: string): boolean;
  /** Flat list: data, port, address, data, port, address... Returns how many were sent. */
  sendMany(packets: (Uint8Array | number | string)[]): number;
  close(): void;
}

interface BunUdpOptions {
  hostname: string;
  port: number;
  binaryType: "uint8array";
  socket: {
    data(socket: BunUdpSocket, data: Uint8Array, port: number, address: string): void;
    drain(socket: BunUdpSocket): void;
    error?(socket: BunUdpSocket, error: Error): void;
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
  const batch: DatagramBatch = { length: 0, from: [], bytes: [] };
  let callback: (batch: DatagramBatch) => void = () => {};
  let deliveryQueued = false;
  let open = true;
  const deliver = (): void => {
    deliveryQueued = false;
    if (!open || batch.length === 0) return;
    callback(batch);
    batch.length = 0;
  };
  // Flat sendMany list of copies (the engine's bytes are only valid until its next call).
  let pending: (Uint8Array | number | string)[] = [];
  let udp: BunUdpSocket;
  const flush = (): void => {
    if (!open || pending.length === 0) return;
    const sent = udp.sendMany(pending);
    if (sent * 3 >= pending.length) pending = [];
    else pending = pending.slice(sent * 3); // the rest waits for "drain"
  };
  try {
    udp = await bun.udpSocket({
      hostname: options.host,
      port: options.port,
      binaryType: "uint8array",
      socket: {
        data(_socket, data, port, address) {
          const n = batch.length++;
          batch.from[n] = formatAddress(address, port);
          batch.bytes[n] = data;
          if (!deliveryQueued) {
            deliveryQueued = true;
            deferToNextTurn(deliver);
          }
        },
        drain() {
          flush();
        },
        error() {
          counters.receiveErrors++;
        },
      },
    });
  } catch (error) {
    throw bindError(error as Error, options.host, options.port);
  }
  const addresses = new AddressCache();
  return {
    localAddress: { host: udp.hostname, port: udp.port },
    counters,
    send(bytes, to) {
      if (!open) return;
      if (pending.length >= MAX_PENDING_SENDS * 3) {
        counters.sendFailures++;
        return;
      }
      const { host, port } = addresses.get(to);
      pending.push(bytes.slice(), port, host);
    },
    flush,
    onDatagrams(cb) {
      callback = cb;
    },
    close() {
      if (open) {
        flush();
        open = false;
        udp.close();
      }
      return Promise.resolve();
    },
  };
}

export const bunAdapter: RuntimeAdapter = {
  name: "bun",
  openSocket: openBunSocket,
  resolve: resolveWithNodeDns,
};

export const { listen, connect } = createRuntime(bunAdapter);
export * from "../../src/api/public.js";
