/**
 * ackwire on Deno: Deno.listenDatagram (needs `deno run --unstable-net`). A receive loop awaits
 * one datagram at a time and batches a turn's burst through the TurnReceiver; sends go out
 * strictly in order through one send pump, because Deno's
 * un-awaited sends can leave out of order. Without --unstable-net it falls back to node:dgram
 * (far slower under Deno: it delivers late) with a warning naming the flag, or throws
 * UnstableNetRequiredError when `requireUnstableNet` is set.
 * `import { listen, connect } from "ackwire/deno"`.
 */
import { AddressCache, SenderNames } from "../../src/api/address.js";
import { SocketError, UnstableNetRequiredError } from "../../src/api/errors.js";
import { MAX_DATAGRAM_BYTES } from "../../src/engine/abi.js";
import { host } from "../../src/api/host.js";
import { createRuntime } from "../../src/api/runtime.js";
import { SendSlab } from "../../src/api/send-slab.js";
import { TurnReceiver } from "../../src/api/turn-receiver.js";
import type { DatagramSocket, OpenSocketOptions, RuntimeAdapter } from "../../src/api/socket.js";
import { bindError, openNodeSocket, resolveWithNodeDns } from "../node/socket.js";

// The slice of Deno's API used here, declared locally (no Deno types in the build); the
// benchmarks that drive Deno's sockets directly import these types too.
export interface DenoUdpAddr {
  transport: "udp";
  hostname: string;
  port: number;
}

export interface DenoDatagramConn {
  readonly addr: DenoUdpAddr;
  receive(buffer?: Uint8Array): Promise<[Uint8Array, DenoUdpAddr]>;
  send(data: Uint8Array, addr: DenoUdpAddr): Promise<number>;
  close(): void;
}

interface DenoGlobal {
  listenDatagram?: (options: { transport: "udp"; hostname: string; port: number }) => DenoDatagramConn;
  permissions?: { querySync?(descriptor: { name: "net"; host?: string }): { state: "granted" | "denied" | "prompt" } };
}

const deno = (): DenoGlobal => (globalThis as unknown as { Deno: DenoGlobal }).Deno;

/** Set to true to get UnstableNetRequiredError instead of the slow node:dgram fallback. */
export const denoOptions = { requireUnstableNet: false };

let warned = false;

/**
 * Receive region per datagram: one byte more than the engine accepts, so an oversized datagram
 * still arrives oversized (truncated) and is counted and dropped by the endpoint.
 */
const RECEIVE_REGION_BYTES = MAX_DATAGRAM_BYTES + 1;
const RECEIVE_SLAB_BYTES = 64 * 1024;

async function openDenoSocket(options: OpenSocketOptions): Promise<DatagramSocket> {
  if (typeof deno().listenDatagram !== "function") {
    if (denoOptions.requireUnstableNet) throw new UnstableNetRequiredError();
    // node:dgram under Deno throws a missing net permission from inside its own bind, where no
    // caller can catch it, and the process dies: ask first.
    // Deno's descriptor is "host[:port]" (IPv6 in brackets): a grant scoped to a port answers
    // "granted" only when asked with it.
    const hostname = options.host.includes(":") ? `[${options.host}]` : options.host;
    const net = deno().permissions?.querySync?.({ name: "net", host: options.port > 0 ? `${hostname}:${options.port}` : hostname }).state;
    if (net !== undefined && net !== "granted") {
      throw new SocketError(`cannot bind UDP ${options.host}:${options.port}`, new Error(`Deno has no network permission (${net}): run deno with --allow-net (and --unstable-net for Deno's own UDP sockets, ~50x faster)`));
    }
    if (!warned) {
      warned = true;
      host.console.warn("ackwire: Deno.listenDatagram is missing; falling back to node:dgram, which is ~50x slower under Deno. Run deno with --unstable-net (Deno.listenDatagram needs it).");
    }
    return openNodeSocket(options);
  }
  // Deno's listenDatagram sockets allow broadcast sends as they are (docs/RUNTIMES.md,
  // "Adapters"), so `options.broadcast` needs nothing here.
  let conn: DenoDatagramConn;
  try {
    conn = deno().listenDatagram!({ transport: "udp", hostname: options.host, port: options.port });
  } catch (error) {
    throw bindError(error as Error, options.host, options.port);
  }
  const counters = { sendFailures: 0, receiveErrors: 0 };
  const receiver = new TurnReceiver();
  let open = true;
  let closing = false; // set once the last sends are out: stops both loops

  // Receive loop: each datagram lands in a region of a receive slab that is never written again
  // (the driver may keep the view). While the kernel has data, each receive() resolves on a
  // microtask, so a burst arrives within one event-loop turn: the TurnReceiver hands it to the
  // driver as one batch at the turn end (the first datagram of a quiet turn at once, as on Node
  // and Bun) instead of one driver service per datagram. Without a buffer argument
  // Deno allocates and zeroes a fresh 64 KiB buffer per datagram, several microseconds each.
  const senders = new SenderNames();
  let receiveSlab = new Uint8Array(RECEIVE_SLAB_BYTES);
  let slabUsed = 0;
  void (async () => {
    while (!closing) {
      let data: Uint8Array;
      let from: DenoUdpAddr;
      if (slabUsed + RECEIVE_REGION_BYTES > receiveSlab.length) {
        receiveSlab = new Uint8Array(RECEIVE_SLAB_BYTES);
        slabUsed = 0;
      }
      const region = receiveSlab.subarray(slabUsed, slabUsed + RECEIVE_REGION_BYTES);
      try {
        [data, from] = await conn.receive(region);
        slabUsed += data.length;
      } catch {
        if (closing) return;
        counters.receiveErrors++; // e.g. ICMP port unreachable reported on the socket
        continue;
      }
      receiver.push(senders.get(from.hostname, from.port), data);
    }
  })();

  // Send pump: one send in flight at a time, in the order the engine produced them. Copies come
  // from a slab that is reused once the pump has awaited every queued send.
  const addresses = new AddressCache();
  const slab = new SendSlab();
  const queue: { data: Uint8Array; addr: DenoUdpAddr }[] = [];
  let pumping: Promise<void> | undefined;
  const pump = async (): Promise<void> => {
    try {
      for (let i = 0; i < queue.length && !closing; i++) {
        try {
          await conn.send(queue[i]!.data, queue[i]!.addr);
        } catch {
          counters.sendFailures++;
        }
      }
    } finally {
      queue.length = 0;
      slab.releaseAll();
      pumping = undefined;
    }
  };
  const udpAddrs = new Map<string, DenoUdpAddr>();
  return {
    localAddress: { host: conn.addr.hostname, port: conn.addr.port },
    counters,
    send(bytes, to) {
      if (!open) return;
      let addr = udpAddrs.get(to);
      if (addr === undefined) {
        const hp = addresses.get(to);
        addr = { transport: "udp", hostname: hp.host, port: hp.port };
        if (udpAddrs.size >= 4096) udpAddrs.clear();
        udpAddrs.set(to, addr);
      }
      queue.push({ data: slab.copy(bytes), addr });
    },
    flush() {
      if (pumping === undefined && queue.length > 0 && open) pumping = pump();
    },
    onDatagrams(cb) {
      receiver.onDatagrams(cb);
    },
    async close() {
      if (!open) return;
      open = false;
      // Let the last packets (a disconnect) leave, but never wait more than 200 ms for them.
      if (pumping !== undefined) {
        let timer: unknown;
        await Promise.race([pumping, new Promise<void>((resolve) => (timer = host.setTimeout(resolve, 200)))]);
        host.clearTimeout(timer);
      }
      closing = true;
      receiver.close();
      try {
        conn.close();
      } catch {
        // already closed
      }
    },
  };
}

export const denoAdapter: RuntimeAdapter = {
  name: "deno",
  openSocket: openDenoSocket,
  resolve: resolveWithNodeDns,
};

export const { listen, connect, listenRelay } = createRuntime(denoAdapter);
export * from "../../src/api/public.js";
