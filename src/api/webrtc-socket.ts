/**
 * One DatagramSocket for a server's UDP socket and its WebRTC peers together, so that one
 * Endpoint (one Server, one accept hook, the same channels) serves both kinds of client. Each
 * browser peer connection is a synthetic address, `webrtc-<n>:1`, which no UDP sender can
 * have (a UDP sender's address is an IP literal).
 */
import type { Address } from "../session/sans-io.js";
import type { HostPort } from "./address.js";
import type { DatagramBatch, DatagramSocket } from "./socket.js";

export const WEBRTC_ADDRESS_PREFIX = "webrtc-";

export function isWebRtcAddress(address: Address): boolean {
  return address.startsWith(WEBRTC_ADDRESS_PREFIX);
}

/** The WebRTC side: runtimes/webrtc/ fills it in over a WebRTC library. */
export interface WebRtcCarrier {
  /** The signaling endpoint browsers POST their offer to. */
  readonly url: string;
  readonly address: HostPort;
  readonly counters: WebRtcCarrierCounters;
  /** Registers the one receive callback (one datagram per data channel message). */
  onDatagram(callback: (from: Address, bytes: Uint8Array) => void): void;
  /** Sends (a copy of) `bytes` on the peer's data channel; false if it is not open or the datagram is too large. */
  send(to: Address, bytes: Uint8Array): boolean;
  /** The endpoint has a connection with this peer (it stays past the open timeout). */
  connected(address: Address): void;
  /** The endpoint's connection with this peer ended: close the peer connection. */
  released(address: Address): void;
  close(): Promise<void>;
}

export interface WebRtcCarrierCounters {
  /** Offers answered (201). */
  offersAnswered: number;
  /** Offers refused, by status: bad request, unauthorized, forbidden origin, too large, rate limited, full. */
  offersRefused: { badRequest: number; unauthorized: number; forbidden: number; tooLarge: number; rateLimited: number; full: number };
  /** Peer connections open now, and answered but not open yet. */
  peers: number;
  pendingPeers: number;
  /** Peers closed because their channel did not open or no ackwire connection came in time. */
  peersTimedOut: number;
  /** Data channels refused (a second channel, or not opened unordered with maxRetransmits 0). */
  badChannels: number;
  /** Messages that were not binary or were longer than any ackwire datagram, dropped. */
  badMessages: number;
  /** Datagrams larger than a data channel carries in one piece, not sent (path MTU probes). */
  oversizeSent: number;
  /** Datagrams dropped because the peer's data channel held too much unsent (a full queue). */
  bufferFull: number;
  /** Sends to a peer that is gone or whose channel refused the message. */
  sendFailures: number;
}

export class WebRtcJoinSocket implements DatagramSocket {
  readonly udp: DatagramSocket;
  readonly carrier: WebRtcCarrier;
  readonly #batch: DatagramBatch = { length: 1, from: [""], bytes: [new Uint8Array(0)] };

  constructor(udp: DatagramSocket, carrier: WebRtcCarrier) {
    this.udp = udp;
    this.carrier = carrier;
  }

  get localAddress(): HostPort {
    return this.udp.localAddress;
  }

  get counters(): DatagramSocket["counters"] {
    return this.udp.counters;
  }

  send(bytes: Uint8Array, to: Address): void {
    if (isWebRtcAddress(to)) this.carrier.send(to, bytes);
    else this.udp.send(bytes, to);
  }

  flush(): void {
    this.udp.flush();
  }

  onDatagrams(callback: (batch: DatagramBatch) => void): void {
    this.udp.onDatagrams(callback);
    this.carrier.onDatagram((from, bytes) => {
      this.#batch.from[0] = from;
      this.#batch.bytes[0] = bytes;
      callback(this.#batch);
    });
  }

  async close(): Promise<void> {
    await Promise.all([this.carrier.close(), this.udp.close()]);
  }
}
