/**
 * ackwire in a web page: `import { connect } from "ackwire/browser"`. The same Endpoint, WASM
 * engine and Connection as on Node, carried by one WebRTC data channel (`ordered: false,
 * maxRetransmits: 0`) to a server that listens with `webrtc` (docs/BROWSER.md). Nothing in
 * this module's import graph touches node:* or a runtime's globals beyond the web platform's.
 */
import { ChannelSocket, DATA_CHANNEL_DATAGRAM_BYTES, DATA_CHANNEL_OVERHEAD_BYTES } from "../api/channel-socket.js";
import { Connection, DEFAULT_MAX_QUEUED_MESSAGES } from "../api/connection.js";
import { Driver } from "../api/driver.js";
import { ConnectAbortedError, ConnectTimeoutError, InvalidOptionError } from "../api/errors.js";
import { host, monotonicNow } from "../api/host.js";
import { endpointConfig, validateCommon, type ConnectOptions } from "../api/options.js";
import { ConnectAttempt } from "../api/connect-attempt.js";
import { SignalingError, WebRtcUnavailableError } from "../api/webrtc-errors.js";
import { Endpoint } from "../session/endpoint.js";
import type { DatagramSocket } from "../api/socket.js";
import type { PeerConnectionLike, RtcGlobals } from "./rtc-types.js";

/** The server as the browser's endpoint names it: one peer, the far end of the data channel. */
const SERVER_ADDRESS = "webrtc-server:1";
/** Default time for signaling, ICE, DTLS, SCTP and ackwire's handshake together. */
const DEFAULT_BROWSER_CONNECT_TIMEOUT_MS = 10_000;

export interface BrowserConnectOptions extends Omit<ConnectOptions, "receiveBufferBytes" | "sendBufferBytes"> {
  /** ICE servers for the page's RTCPeerConnection (STUN/TURN). Default none: the server's
   *  answer carries its reachable addresses, and the browser needs nothing else to reach them. */
  iceServers?: readonly { urls: string | string[]; username?: string; credential?: string }[];
}

/**
 * Connects to the server whose WebRTC signaling endpoint is `url` (e.g.
 * `"https://game.example.com:8443/ackwire"`, read it from `server.webrtc.url`). Resolves with
 * the Connection once ackwire's handshake completed over the data channel.
 */
export function connect(url: string, options: BrowserConnectOptions): Promise<Connection> {
  return connectOver(url, options, undefined);
}

/** The secure layer's client side (./secure.ts passes it; this entry leaves it out, for size). */
export type SecureLayer = typeof import("./secure-client.js");

/** @internal connect() with or without the secure layer. */
export async function connectOver(url: string, options: BrowserConnectOptions, secureLayer: SecureLayer | undefined): Promise<Connection> {
  if (typeof url !== "string" || !/^https?:\/\//.test(url)) throw new InvalidOptionError(`connect(): the first argument is the server's signaling URL ("http(s)://host:port/path", server.webrtc.url), got ${String(url)}`);
  const { iceServers, ...common } = options ?? ({} as BrowserConnectOptions);
  validateCommon(common, "connect()");
  if (common.connectToken !== undefined && secureLayer === undefined) {
    throw new InvalidOptionError('connect(): a connectToken is for a secure server: import { connect } from "ackwire/browser/secure" (the secure layer, ChaCha20-Poly1305, is left out of "ackwire/browser" for size)');
  }
  const secure = common.connectToken !== undefined ? secureLayer : undefined;
  const token = secure?.parseConnectToken(common.connectToken!, common.protocolId);
  const timeoutMs = common.connectTimeoutMs ?? DEFAULT_BROWSER_CONNECT_TIMEOUT_MS;
  if (!(typeof timeoutMs === "number" && timeoutMs > 0 && timeoutMs <= 3_599_000)) throw new InvalidOptionError(`connect(): connectTimeoutMs must be a number of ms in (0, 3599000], got ${String(timeoutMs)}`);
  const g = globalThis as unknown as RtcGlobals;
  if (typeof g.RTCPeerConnection !== "function") throw new WebRtcUnavailableError("connect(): this environment has no RTCPeerConnection (WebRTC); ackwire/browser runs in web pages");
  const deadline = monotonicNow() + timeoutMs;
  const signal = common.signal;
  const pc = new g.RTCPeerConnection({ iceServers: iceServers === undefined ? [] : [...iceServers] });
  let socket: DatagramSocket | undefined;
  try {
    const channel = pc.createDataChannel("ackwire", { ordered: false, maxRetransmits: 0 });
    channel.binaryType = "arraybuffer";
    await pc.setLocalDescription(await pc.createOffer());
    // The answer comes back in one request, so the offer carries every candidate: no trickle.
    await within(waitForGathering(pc), deadline, url, timeoutMs, signal);
    // A secure server's connect token rides in the offer request too, as a bearer token (base64url).
    const headers: Record<string, string> = { "content-type": "application/sdp" };
    if (secure !== undefined) headers.authorization = `Bearer ${secure.toBase64Url(common.connectToken!)}`;
    const answer = await within(postOffer(g, url, pc.localDescription?.sdp ?? "", headers, signal), deadline, url, timeoutMs, signal);
    await pc.setRemoteDescription({ type: "answer", sdp: answer });
    const raw = new ChannelSocket({ send: (bytes) => channel.send(bytes), close: () => pc.close(), get bufferedAmount() { return channel.bufferedAmount; } }, SERVER_ADDRESS, { host: "webrtc", port: 0 });
    channel.onmessage = (event) => raw.deliver(event.data);
    await within(waitForOpen(channel), deadline, url, timeoutMs, signal);
    socket = secure !== undefined ? new secure.SecureClientSocket(raw, SERVER_ADDRESS, token!, secure.wasmAead) : raw;
    // Path MTU discovery off: the data channel's limit is known, and a larger probe would be
    // split by SCTP and still arrive, which says nothing about losing the pieces.
    const mtu = Math.min(common.mtu ?? DATA_CHANNEL_DATAGRAM_BYTES, DATA_CHANNEL_DATAGRAM_BYTES);
    const config = endpointConfig({ ...common, mtu, maxMtu: mtu }, false);
    // The congestion controller counts what DTLS and SCTP add to each datagram too.
    config.carrier = () => ({ overheadBytes: DATA_CHANNEL_OVERHEAD_BYTES, maxDatagramBytes: mtu });
    if (secure !== undefined) secure.makeRoomForSeal(config, "connect()");
    const endpoint = common.createEndpoint !== undefined ? common.createEndpoint(config) : new Endpoint(config);
    return await handshake(endpoint, socket, common, Math.max(1, deadline - monotonicNow()));
  } catch (error) {
    if (socket !== undefined) void socket.close();
    else pc.close();
    throw error;
  }
}

function handshake(endpoint: Endpoint | ReturnType<NonNullable<ConnectOptions["createEndpoint"]>>, socket: DatagramSocket, options: ConnectOptions, remainingMs: number): Promise<Connection> {
  let attempt: ConnectAttempt | undefined;
  const driver = new Driver(endpoint, socket, (event) => {
    if (event.type !== "punch") attempt?.dispatch(event);
  }, { dropTest: options.dropTest, seed: options.seed });
  attempt = new ConnectAttempt(driver, SERVER_ADDRESS, { userData: options.userData, signal: options.signal, connectTimeoutMs: remainingMs }, options.maxQueuedMessages ?? DEFAULT_MAX_QUEUED_MESSAGES, {
    // The page owns its peer connection: once the last packet is out, close it.
    closed: () => host.queueMicrotask(() => void driver.close()),
    failed: () => {
      if (!driver.closed) {
        driver.service();
        void driver.close();
      }
    },
  });
  if (attempt.start() >= 0) driver.service();
  return attempt.promise;
}

/** `promise`, or a ConnectTimeoutError at `deadline`, or a ConnectAbortedError on `signal`. */
function within<T>(promise: Promise<T>, deadline: number, url: string, timeoutMs: number, signal: ConnectOptions["signal"]): Promise<T> {
  if (signal?.aborted === true) return Promise.reject(new ConnectAbortedError(url, signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => finish(() => reject(new ConnectAbortedError(url, signal?.reason)));
    const timer = host.setTimeout(() => finish(() => reject(new ConnectTimeoutError(url, timeoutMs))), Math.max(0, deadline - monotonicNow()));
    signal?.addEventListener("abort", onAbort, { once: true });
    let done = false;
    function finish(settle: () => void): void {
      if (done) return;
      done = true;
      host.clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      settle();
    }
    promise.then((value) => finish(() => resolve(value)), (error: unknown) => finish(() => reject(error)));
  });
}

function waitForGathering(pc: PeerConnectionLike): Promise<void> {
  return new Promise((resolve) => {
    if (pc.iceGatheringState === "complete") return resolve();
    pc.addEventListener("icegatheringstatechange", () => {
      if (pc.iceGatheringState === "complete") resolve();
    });
  });
}

function waitForOpen(channel: { readyState: string; addEventListener(type: "open" | "close", fn: () => void): void }): Promise<void> {
  return new Promise((resolve, reject) => {
    if (channel.readyState === "open") return resolve();
    channel.addEventListener("open", () => resolve());
    channel.addEventListener("close", () => reject(new SignalingError("the data channel", 0, "it closed before opening (ICE or DTLS failed)")));
  });
}

async function postOffer(g: RtcGlobals, url: string, sdp: string, headers: Record<string, string>, signal: ConnectOptions["signal"]): Promise<string> {
  let response: Awaited<ReturnType<RtcGlobals["fetch"]>>;
  try {
    response = await g.fetch(url, { method: "POST", headers, body: sdp, signal, mode: "cors", credentials: "omit" });
  } catch (error) {
    throw new SignalingError(url, 0, (error as Error)?.message ?? String(error), error);
  }
  const body = await response.text();
  if (response.status !== 201) throw new SignalingError(url, response.status, body.slice(0, 200) || "no reason given");
  if (!body.startsWith("v=0")) throw new SignalingError(url, response.status, "the answer is not SDP");
  return body;
}

export * from "../api/public-browser.js";
