/**
 * listen({ webrtc }): opens the WebRTC carrier beside the UDP socket. The carrier
 * (runtimes/webrtc/) and its WebRTC library are loaded here, lazily, only when `webrtc` is
 * configured: users of plain UDP never load or install them.
 */
import type { Address } from "../session/sans-io.js";
import type { DatagramCarrier, EndpointConfig } from "../session/types.js";
import { InvalidOptionError } from "./errors.js";
import { host } from "./host.js";
import type { ListenOptions } from "./options.js";
import type { DatagramSocket, RuntimeAdapter } from "./socket.js";
import { WebRtcUnavailableError } from "./webrtc-errors.js";
import { resolveWebRtcOptions, type ResolvedWebRtcOptions } from "./webrtc-options.js";
import { WebRtcJoinSocket, isWebRtcAddress, type WebRtcCarrier, type WebRtcCarrierCounters } from "./webrtc-socket.js";
import { openHelloToken, parseConnectToken } from "../secure/token.js";
import { DATA_CHANNEL_DATAGRAM_BYTES, DATA_CHANNEL_OVERHEAD_BYTES } from "./channel-socket.js";

/** What the server side's carrier module exports (runtimes/webrtc/server.ts). */
export interface CarrierModule {
  openWebRtcCarrier(options: ResolvedWebRtcOptions, hooks: CarrierHooks): Promise<WebRtcCarrier>;
}

export interface CarrierHooks {
  /** On a secure server: whether the offer's bearer token is a valid connect token. */
  checkToken?: (token: Uint8Array) => boolean;
  /** Largest datagram the endpoint sends; larger sends are dropped (path MTU probes). */
  maxDatagram: number;
}

/** What `server.webrtc` tells: where browsers connect, and the carrier's counters. */
export interface WebRtcInfo {
  /** The signaling URL to give ackwire/browser's connect(). */
  readonly url: string;
  readonly address: { host: string; port: number };
  counters(): WebRtcCarrierCounters;
}

const CARRIER_MODULE = "../../runtimes/webrtc/server.js";

let loadCarrier = async (): Promise<CarrierModule> => (await import(CARRIER_MODULE)) as CarrierModule;

/** @internal Which carrier listen() opens from now on in this process (bench/browser compares WebRTC libraries). */
export function useCarrierModule(load: () => Promise<CarrierModule>): void {
  loadCarrier = load;
}

/** Largest ackwire datagram the server's WebRTC library carries in one SCTP DATA chunk (werift's 1200 bytes of user data per chunk). */
const SERVER_DATAGRAM_BYTES = 1200;

/**
 * A browser peer's carrier, for the endpoint (EndpointConfig.carrier): what DTLS and SCTP add
 * to each datagram is counted by its connection's congestion controller, and path MTU
 * discovery is off for it (SCTP cuts a larger message into chunks, which arrive: a probe
 * would learn nothing about the path, and the datagram size is the carrier's, known).
 */
const PEER_CARRIER: DatagramCarrier = { overheadBytes: DATA_CHANNEL_OVERHEAD_BYTES, maxDatagramBytes: SERVER_DATAGRAM_BYTES };

/** EndpointConfig.carrier of a server that takes browser clients: UDP peers have none. */
export function webrtcPeerCarrier(address: Address): DatagramCarrier | undefined {
  return isWebRtcAddress(address) ? PEER_CARRIER : undefined;
}

export async function openWebRtcJoin(udp: DatagramSocket, options: ListenOptions, config: EndpointConfig, adapter: RuntimeAdapter["name"]): Promise<WebRtcJoinSocket> {
  const resolved = resolveWebRtcOptions(options.webrtc!, options.host ?? "0.0.0.0", options.maxConnections ?? 1024);
  if (config.mtu !== undefined && config.mtu > SERVER_DATAGRAM_BYTES) {
    throw new InvalidOptionError(`listen(): mtu ${config.mtu} is larger than a WebRTC data channel carries in one piece (${SERVER_DATAGRAM_BYTES}); leave mtu at its default with webrtc`);
  }
  let module: CarrierModule;
  try {
    module = await loadCarrier();
  } catch (error) {
    throw new WebRtcUnavailableError(`listen(): webrtc needs the optional "werift" package on ${adapter}: npm install werift`, error);
  }
  const hooks: CarrierHooks = { maxDatagram: SERVER_DATAGRAM_BYTES };
  if (options.secure !== undefined) hooks.checkToken = tokenChecker([options.secure.serverKey, ...(options.secure.previousServerKeys ?? [])], options.protocolId);
  const carrier = await module.openWebRtcCarrier(resolved, hooks);
  return new WebRtcJoinSocket(udp, carrier);
}

/** Whether a connect token opens under one of `keys` and has not expired (the offer's check; the secure handshake over the channel checks it again). */
function tokenChecker(keys: readonly Uint8Array[], protocolId: number): (token: Uint8Array) => boolean {
  return (token) => {
    let body: Uint8Array;
    try {
      // The server's clock counts: no slack.
      body = parseConnectToken(token, protocolId, Date.now() / 1000).helloBody;
    } catch {
      return false;
    }
    // openHelloToken reads a HELLO datagram: one type byte, then the body.
    const hello = new Uint8Array(1 + body.length);
    hello.set(body, 1);
    const n = body[36]! | (body[37]! << 8);
    return keys.some((key) => openHelloToken(key, hello, n) !== undefined);
  };
}

const joins = new WeakMap<object, WebRtcJoinSocket>();

/** Ties the carrier to its Server: peers are held while connected and released when they end. */
export function attachWebRtc(server: ServerLike, join: WebRtcJoinSocket): void {
  joins.set(server, join);
  server.on("connection", (connection) => join.carrier.connected(connection.address));
  server.on("disconnect", ({ connection }) => join.carrier.released(connection.address));
}

/** `server.webrtc`: undefined unless listen() had `webrtc`. */
export function webrtcInfo(server: object): WebRtcInfo | undefined {
  const join = joins.get(server);
  if (join === undefined) return undefined;
  const { carrier } = join;
  return { url: carrier.url, address: carrier.address, counters: () => host.structuredClone(carrier.counters) };
}

interface ServerLike {
  on(type: "connection", listener: (connection: { address: Address }) => void): unknown;
  on(type: "disconnect", listener: (event: { connection: { address: Address } }) => void): unknown;
}

export { DATA_CHANNEL_DATAGRAM_BYTES };
