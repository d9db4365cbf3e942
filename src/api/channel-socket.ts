/**
 * A DatagramSocket over one message channel to one peer: a WebRTC data channel opened with
 * `ordered: false, maxRetransmits: 0` carries each ackwire datagram as one message, unchanged,
 * so reliability, ordering and congestion stay ackwire's. Runtime-neutral (no node:*), used by
 * the browser client (src/browser/) and by the server's WebRTC carrier (runtimes/webrtc/).
 */
import type { Address } from "../session/sans-io.js";
import type { HostPort } from "./address.js";
import type { DatagramBatch, DatagramSocket } from "./socket.js";

/**
 * Largest ackwire datagram a data channel carries in one SCTP DATA chunk from a browser.
 * Chromium's SCTP packets are at most 1191 bytes (IPv6's 1280 less IPv6, UDP and DTLS
 * headers); less the SCTP common header (12) and DATA chunk header (16), padded to 4:
 * 12 + pad4(16 + n) <= 1191 gives n <= 1160. A larger message is cut into chunks, and with
 * no retransmits losing any one of them loses the datagram.
 */
export const DATA_CHANNEL_DATAGRAM_BYTES = 1160;

/**
 * Bytes DTLS and SCTP add to each datagram inside the UDP payload: DTLS 1.2's record header
 * (13) and AES-128-GCM's explicit nonce and tag (8 + 16), the only cipher suites werift
 * offers; SCTP's common header (12) and DATA chunk header (16). SCTP pads the chunk to 4 bytes
 * (0-3 more), and may bundle several small messages in one packet (then each costs less):
 * the figure is the common case, one datagram per SCTP packet.
 */
export const DATA_CHANNEL_OVERHEAD_BYTES = 65;

/**
 * The most a data channel may hold unsent: past it a datagram is dropped, as a router's full
 * queue drops, so that ackwire's congestion controller sees a loss rather than a queue inside
 * the channel that grows without end (SCTP sends behind a congestion window of its own).
 */
export const MAX_BUFFERED_BYTES = 16 * 1024;

/** What the socket needs from a channel: a send that copies or sends at once, and its backlog. */
export interface DatagramChannel {
  send(bytes: Uint8Array): void;
  close(): void;
  readonly bufferedAmount: number;
}

export interface ChannelSocketCounters {
  sendFailures: number;
  receiveErrors: number;
  /** Datagrams over the channel's size limit, not sent (path MTU probes larger than the channel takes). */
  oversizeSent: number;
  /** Datagrams dropped because the channel held more than MAX_BUFFERED_BYTES unsent. */
  bufferFull: number;
  /** Messages that were not binary or were longer than any ackwire datagram (1500), dropped. */
  badReceived: number;
}

/** Longest datagram accepted from the peer (the receiver accepts up to 1500, PROTOCOL §1). */
const MAX_RECEIVED_DATAGRAM = 1500;

export class ChannelSocket implements DatagramSocket {
  readonly localAddress: HostPort;
  readonly peer: Address;
  readonly counters: ChannelSocketCounters = { sendFailures: 0, receiveErrors: 0, oversizeSent: 0, bufferFull: 0, badReceived: 0 };
  readonly #channel: DatagramChannel;
  readonly #maxSend: number;
  #callback: ((batch: DatagramBatch) => void) | undefined;
  readonly #batch: DatagramBatch = { length: 1, from: [""], bytes: [new Uint8Array(0)] };
  #closed = false;

  constructor(channel: DatagramChannel, peer: Address, localAddress: HostPort, maxSend = DATA_CHANNEL_DATAGRAM_BYTES) {
    this.#channel = channel;
    this.peer = peer;
    this.localAddress = localAddress;
    this.#maxSend = maxSend;
    this.#batch.from[0] = peer;
  }

  send(bytes: Uint8Array, to: Address): void {
    if (this.#closed || to !== this.peer) {
      this.counters.sendFailures++;
      return;
    }
    // Dropped like a datagram over a path's MTU: path MTU discovery sees its probe lost and
    // settles below the channel's limit.
    if (bytes.length > this.#maxSend) {
      this.counters.oversizeSent++;
      return;
    }
    if (this.#channel.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.counters.bufferFull++;
      return;
    }
    try {
      this.#channel.send(bytes);
    } catch {
      // A channel closing under us, or its send buffer full: a lost datagram to ackwire.
      this.counters.sendFailures++;
    }
  }

  flush(): void {}

  onDatagrams(callback: (batch: DatagramBatch) => void): void {
    this.#callback = callback;
  }

  /** One message from the channel (ArrayBuffer, a view, or anything else: counted and dropped). */
  deliver(message: unknown): void {
    if (this.#closed || this.#callback === undefined) return;
    let bytes: Uint8Array;
    if (message instanceof ArrayBuffer) bytes = new Uint8Array(message);
    else if (ArrayBuffer.isView(message)) bytes = new Uint8Array(message.buffer, message.byteOffset, message.byteLength);
    else {
      this.counters.badReceived++;
      return;
    }
    if (bytes.length > MAX_RECEIVED_DATAGRAM) {
      this.counters.badReceived++;
      return;
    }
    this.#batch.bytes[0] = bytes;
    this.#callback(this.#batch);
  }

  get closed(): boolean {
    return this.#closed;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#channel.close();
    } catch {
      // Already closed by the peer.
    }
  }
}
