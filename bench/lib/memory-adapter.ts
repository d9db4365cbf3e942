/**
 * A RuntimeAdapter over an in-memory network: sockets on 127.0.0.1 with ports of its own,
 * datagrams delivered a turn later (setTimeout 0), one batch per destination. For benchmarks
 * and tests that want many connections without the kernel's UDP cost or buffer limits.
 * `hold` keeps datagrams queued until `deliver()` (a benchmark times the sender alone).
 */
import type { DatagramBatch, DatagramSocket, RuntimeAdapter } from "../../src/api/socket.js";
import { g } from "./host.js";

export class MemoryNetwork {
  hold = false;
  /** Datagrams delivered so far. */
  delivered = 0;
  readonly #queued: { from: string; to: string; bytes: Uint8Array }[] = [];
  readonly #sockets = new Map<string, (batch: DatagramBatch) => void>();
  #nextPort = 20000;
  #scheduled = false;

  readonly adapter: RuntimeAdapter = {
    name: "node",
    resolve: async (host) => host,
    openSocket: async (options) => {
      const port = options.port === 0 ? this.#nextPort++ : options.port;
      const self = `127.0.0.1:${port}`;
      let open = true;
      const socket: DatagramSocket = {
        localAddress: { host: "127.0.0.1", port },
        counters: { sendFailures: 0, receiveErrors: 0 },
        send: (bytes, to) => {
          if (!open) return;
          this.#queued.push({ from: self, to, bytes: bytes.slice() });
          this.#schedule();
        },
        flush: () => {},
        onDatagrams: (callback) => void this.#sockets.set(self, callback),
        close: async () => {
          open = false;
          this.#sockets.delete(self);
        },
      };
      return socket;
    },
  };

  /** Datagrams waiting. */
  get queued(): number {
    return this.#queued.length;
  }

  #schedule(): void {
    if (this.hold || this.#scheduled) return;
    this.#scheduled = true;
    g.setTimeout(() => {
      this.#scheduled = false;
      if (!this.hold) this.deliver();
    }, 0);
  }

  /** Hands every queued datagram to its socket, one batch per destination, in send order. */
  deliver(): number {
    const batches = new Map<string, DatagramBatch>();
    const queued = this.#queued.splice(0);
    for (const d of queued) {
      let batch = batches.get(d.to);
      if (batch === undefined) batches.set(d.to, (batch = { length: 0, from: [], bytes: [] }));
      batch.from[batch.length] = d.from;
      batch.bytes[batch.length++] = d.bytes;
    }
    for (const [to, batch] of batches) this.#sockets.get(to)?.(batch);
    this.delivered += queued.length;
    return queued.length;
  }
}
