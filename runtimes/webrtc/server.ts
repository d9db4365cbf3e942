/**
 * The server's WebRTC carrier over werift (ICE, DTLS and SCTP in TypeScript; an optional
 * dependency) and node:http (Node, Bun and Deno all have it): a WHIP-style signaling endpoint
 * answers a browser's offer in one request, and each peer's one data channel carries ackwire
 * datagrams unchanged. Loaded by src/api/webrtc-listen.ts only when listen() has `webrtc`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Address } from "../../src/session/sans-io.js";
import type { CarrierHooks } from "../../src/api/webrtc-listen.js";
import type { ResolvedWebRtcOptions } from "../../src/api/webrtc-options.js";
import type { WebRtcCarrier, WebRtcCarrierCounters } from "../../src/api/webrtc-socket.js";
import { WEBRTC_ADDRESS_PREFIX } from "../../src/api/webrtc-socket.js";
import { fromBase64Url } from "../../src/util/base64url.js";
import { onlyCandidates, withoutCandidates } from "./sdp.js";
import { OfferRateLimit } from "./rate-limit.js";

/** The parts of werift used here, typed locally (werift is optional: no static import). */
interface WeriftDataChannel {
  readonly label: string;
  readonly ordered: boolean;
  readonly maxRetransmits: number | null;
  readonly readyState: string;
  readonly bufferedAmount: number;
  readonly onMessage: { subscribe(fn: (data: unknown) => void): unknown };
  readonly stateChanged: { subscribe(fn: (state: string) => void): unknown };
  send(data: Uint8Array): void;
  close(): void;
}
interface WeriftPeerConnection {
  readonly iceGatheringState: string;
  readonly connectionState: string;
  readonly localDescription: { sdp: string } | undefined | null;
  readonly onDataChannel: { subscribe(fn: (channel: WeriftDataChannel) => void): unknown };
  readonly connectionStateChange: { subscribe(fn: (state: string) => void): unknown };
  readonly iceGatheringStateChange: { subscribe(fn: (state: string) => void): unknown };
  setRemoteDescription(description: { type: "offer"; sdp: string }): Promise<unknown>;
  createAnswer(): Promise<unknown>;
  setLocalDescription(description: unknown): Promise<unknown>;
  close(): Promise<void>;
}
export interface Werift {
  RTCPeerConnection: new (config: Record<string, unknown>) => WeriftPeerConnection;
}
export type { WeriftDataChannel, WeriftPeerConnection };

/**
 * The most a data channel may hold unsent (werift queues without bound behind its SCTP
 * congestion window): past it a datagram is dropped, as a router's full queue drops, and
 * ackwire's congestion controller sees a loss instead of a queue that grows without end.
 */
const MAX_BUFFERED_BYTES = 16 * 1024;
/** Longest message taken from a browser: no ackwire datagram is longer (PROTOCOL §1). */
const MAX_RECEIVED_DATAGRAM = 1500;
/** A released peer's connection stays this long, so that the last acks of its close get out. */
const RELEASE_DELAY_MS = 1000;
/** ICE gathering of the answer is bounded: werift gathers host candidates only (no STUN), quickly. */
const GATHER_TIMEOUT_MS = 5000;

interface Peer {
  readonly address: Address;
  readonly pc: WeriftPeerConnection;
  channel: WeriftDataChannel | undefined;
  open: boolean;
  connected: boolean;
  timer: ReturnType<typeof setTimeout> | undefined;
  closed: boolean;
}

export async function openWebRtcCarrier(options: ResolvedWebRtcOptions, hooks: CarrierHooks): Promise<WebRtcCarrier> {
  return openCarrierOver((await import("werift")) as unknown as Werift, options, hooks);
}

/** The carrier over `library`: werift, or another library behind werift's interface (bench/browser measures one). */
export async function openCarrierOver(library: Werift, options: ResolvedWebRtcOptions, hooks: CarrierHooks): Promise<WebRtcCarrier> {
  const carrier = new WeriftCarrier(library, options, hooks);
  await carrier.start();
  return carrier;
}

class WeriftCarrier implements WebRtcCarrier {
  url = "";
  address = { host: "", port: 0 };
  readonly counters: WebRtcCarrierCounters = {
    offersAnswered: 0,
    offersRefused: { badRequest: 0, unauthorized: 0, forbidden: 0, tooLarge: 0, rateLimited: 0, full: 0 },
    peers: 0,
    pendingPeers: 0,
    peersTimedOut: 0,
    badChannels: 0,
    badMessages: 0,
    oversizeSent: 0,
    bufferFull: 0,
    sendFailures: 0,
  };
  readonly #werift: Werift;
  readonly #options: ResolvedWebRtcOptions;
  readonly #hooks: CarrierHooks;
  readonly #peers = new Map<Address, Peer>();
  readonly #rate: OfferRateLimit;
  readonly #http = createServer((request, response) => void this.#handle(request, response).catch(() => this.#reply(response, 500, "internal error")));
  #callback: ((from: Address, bytes: Uint8Array) => void) | undefined;
  #nextId = 1;
  #closed = false;

  constructor(werift: Werift, options: ResolvedWebRtcOptions, hooks: CarrierHooks) {
    this.#werift = werift;
    this.#options = options;
    this.#hooks = hooks;
    this.#rate = new OfferRateLimit(options.offersPerSecond);
    // Slow or idle signaling clients hold no socket for long.
    this.#http.requestTimeout = 10_000;
    this.#http.headersTimeout = 5_000;
    this.#http.keepAliveTimeout = 2_000;
    this.#http.maxHeadersCount = 64;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#http.once("error", reject);
      this.#http.listen(this.#options.port, this.#options.host, () => {
        this.#http.off("error", reject);
        const bound = this.#http.address() as AddressInfo;
        this.address = { host: bound.address, port: bound.port };
        const hostText = bound.address.includes(":") ? `[${bound.address}]` : bound.address;
        this.url = `http://${hostText}:${bound.port}${this.#options.path}`;
        resolve();
      });
    });
  }

  onDatagram(callback: (from: Address, bytes: Uint8Array) => void): void {
    this.#callback = callback;
  }

  send(to: Address, bytes: Uint8Array): boolean {
    const peer = this.#peers.get(to);
    if (peer === undefined || !peer.open || peer.channel === undefined) {
      this.counters.sendFailures++;
      return false;
    }
    if (bytes.length > this.#hooks.maxDatagram) {
      this.counters.oversizeSent++;
      return false;
    }
    if (peer.channel.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.counters.bufferFull++;
      return false;
    }
    try {
      // A copy: werift queues the message, and `bytes` is a view into the engine's send arena.
      peer.channel.send(Buffer.from(bytes));
      return true;
    } catch {
      this.counters.sendFailures++;
      return false;
    }
  }

  connected(address: Address): void {
    const peer = this.#peers.get(address);
    if (peer === undefined || peer.connected) return;
    peer.connected = true;
    clearTimeout(peer.timer);
    peer.timer = undefined;
  }

  released(address: Address): void {
    const peer = this.#peers.get(address);
    if (peer === undefined) return;
    clearTimeout(peer.timer);
    peer.timer = setTimeout(() => this.#drop(peer), RELEASE_DELAY_MS);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const peers = [...this.#peers.values()];
    for (const peer of peers) this.#drop(peer);
    await new Promise<void>((resolve) => {
      this.#http.close(() => resolve());
      this.#http.closeAllConnections?.();
    });
  }

  #countPeers(): void {
    let open = 0;
    for (const p of this.#peers.values()) if (p.open) open++;
    this.counters.peers = open;
    this.counters.pendingPeers = this.#peers.size - open;
  }

  #drop(peer: Peer): void {
    if (peer.closed) return;
    peer.closed = true;
    clearTimeout(peer.timer);
    this.#peers.delete(peer.address);
    this.#countPeers();
    try {
      peer.channel?.close();
    } catch {
      // Already closed.
    }
    void peer.pc.close().catch(() => undefined);
  }

  #reply(response: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
    if (response.headersSent) return;
    response.writeHead(status, { "content-type": status === 201 ? "application/sdp" : "text/plain; charset=utf-8", "cache-control": "no-store", ...headers });
    response.end(body);
  }

  /** The CORS headers for `origin`, or undefined if that origin is not allowed. */
  #cors(origin: string | undefined): Record<string, string> | undefined {
    if (origin === undefined) return {};
    const allow = this.#options.allowOrigins;
    if (allow !== "*" && !allow.includes(origin)) return undefined;
    return {
      "access-control-allow-origin": allow === "*" ? "*" : origin,
      "access-control-allow-methods": "POST, OPTIONS",
      "access-control-allow-headers": "content-type, authorization",
      "access-control-max-age": "600",
      vary: "origin",
    };
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const refused = this.counters.offersRefused;
    const url = request.url ?? "";
    const path = url.split("?", 1)[0];
    if (path !== this.#options.path) return this.#reply(response, 404, "not found");
    const origin = typeof request.headers.origin === "string" ? request.headers.origin : undefined;
    const cors = this.#cors(origin);
    if (cors === undefined) {
      refused.forbidden++;
      request.resume();
      return this.#reply(response, 403, "origin not allowed");
    }
    if (request.method === "OPTIONS") return this.#reply(response, 204, "", cors);
    if (request.method !== "POST") return this.#reply(response, 405, "POST an SDP offer", { ...cors, allow: "POST, OPTIONS" });
    const ip = request.socket.remoteAddress ?? "";
    if (!this.#rate.take(ip, performance.now())) {
      refused.rateLimited++;
      request.resume();
      return this.#reply(response, 429, "too many offers", { ...cors, "retry-after": "1" });
    }
    const type = (request.headers["content-type"] ?? "").split(";", 1)[0]!.trim().toLowerCase();
    if (type !== "application/sdp") {
      refused.badRequest++;
      request.resume();
      return this.#reply(response, 415, "the body is an SDP offer: content-type application/sdp", cors);
    }
    if (this.#hooks.checkToken !== undefined) {
      const auth = request.headers.authorization ?? "";
      const token = auth.startsWith("Bearer ") ? fromBase64Url(auth.slice(7).trim()) : undefined;
      if (token === undefined || !this.#hooks.checkToken(token)) {
        refused.unauthorized++;
        request.resume();
        return this.#reply(response, 401, "a valid connect token is required (Authorization: Bearer <base64url token>)", cors);
      }
    }
    const pending = this.#peers.size - this.counters.peers;
    if (pending >= this.#options.maxPendingPeers || this.#peers.size >= this.#options.maxPeers || this.#closed) {
      refused.full++;
      request.resume();
      return this.#reply(response, 503, "too many peers", { ...cors, "retry-after": "1" });
    }
    const declared = Number(request.headers["content-length"] ?? 0);
    if (declared > this.#options.maxOfferBytes) {
      refused.tooLarge++;
      request.resume();
      return this.#reply(response, 413, "offer too large", { ...cors, connection: "close" });
    }
    const sdp = await readBody(request, this.#options.maxOfferBytes);
    if (sdp === undefined) {
      refused.tooLarge++;
      return this.#reply(response, 413, "offer too large", { ...cors, connection: "close" });
    }
    if (!sdp.startsWith("v=0") || !sdp.includes("m=application")) {
      refused.badRequest++;
      return this.#reply(response, 400, "not an SDP offer with a data channel", cors);
    }
    let answer: string;
    try {
      answer = await this.#answer(sdp);
    } catch (error) {
      refused.badRequest++;
      return this.#reply(response, 400, `the offer could not be answered: ${(error as Error)?.message ?? String(error)}`.slice(0, 300), cors);
    }
    this.counters.offersAnswered++;
    this.#reply(response, 201, answer, cors);
  }

  async #answer(offer: string): Promise<string> {
    const addresses = this.#options.iceAddresses;
    const pc = new this.#werift.RTCPeerConnection({
      iceServers: [],
      // werift leaves out loopback unless told; its other interfaces' candidates are filtered
      // from the answer, and pairs on them are never checked.
      iceAdditionalHostAddresses: addresses,
      iceUseIpv4: addresses.some((a) => !a.includes(":")),
      iceUseIpv6: addresses.some((a) => a.includes(":")),
      iceFilterCandidatePair: (pair: { localCandidate: { host: string } }) => addresses.includes(pair.localCandidate.host),
    });
    const address = `${WEBRTC_ADDRESS_PREFIX}${this.#nextId++}:1`;
    const peer: Peer = { address, pc, channel: undefined, open: false, connected: false, timer: undefined, closed: false };
    this.#peers.set(address, peer);
    this.#countPeers();
    // Not open in time, or no ackwire connection in time: closed (its slot is bounded).
    peer.timer = setTimeout(() => {
      if (peer.connected) return;
      this.counters.peersTimedOut++;
      this.#drop(peer);
    }, this.#options.openTimeoutMs);
    pc.connectionStateChange.subscribe((state) => {
      if (state === "failed" || state === "closed") this.#drop(peer);
    });
    pc.onDataChannel.subscribe((channel) => this.#adopt(peer, channel));
    try {
      // The server never checks the addresses an offer names: a browser's host candidates
      // are mDNS names (*.local: resolving them sends multicast DNS) or private addresses it
      // cannot reach, and checks to whatever an offer lists would let anyone aim this server's
      // STUN traffic at a third party. The browser reaches the answer's addresses and shows
      // up as a peer-reflexive candidate, as with any server that is reachable.
      await pc.setRemoteDescription({ type: "offer", sdp: withoutCandidates(offer) });
      await pc.setLocalDescription(await pc.createAnswer());
      await gathered(pc);
      const sdp = pc.localDescription?.sdp;
      if (sdp === undefined) throw new Error("no local description");
      return onlyCandidates(sdp, addresses);
    } catch (error) {
      this.#drop(peer);
      throw error;
    }
  }

  #adopt(peer: Peer, channel: WeriftDataChannel): void {
    // One channel per peer, unordered and without retransmits: ackwire does both itself.
    if (peer.closed || peer.channel !== undefined || channel.ordered || channel.maxRetransmits !== 0) {
      this.counters.badChannels++;
      try {
        channel.close();
      } catch {
        // Closing a refused channel may throw if it is already gone.
      }
      return;
    }
    peer.channel = channel;
    const opened = (): void => {
      if (peer.open || peer.closed) return;
      peer.open = true;
      this.#countPeers();
    };
    if (channel.readyState === "open") opened();
    channel.stateChanged.subscribe((state) => {
      if (state === "open") opened();
      else if (state === "closed") this.#drop(peer);
    });
    channel.onMessage.subscribe((data) => {
      if (peer.closed || this.#closed) return;
      if (!(data instanceof Uint8Array) || data.length > MAX_RECEIVED_DATAGRAM) {
        this.counters.badMessages++;
        return;
      }
      if (!peer.open) opened();
      this.#callback?.(peer.address, data);
    });
  }
}

/** Resolves when ICE gathering is complete, or after GATHER_TIMEOUT_MS (the answer then has what was gathered). */
function gathered(pc: WeriftPeerConnection): Promise<void> {
  return new Promise((resolve) => {
    if (pc.iceGatheringState === "complete") return resolve();
    const timer = setTimeout(resolve, GATHER_TIMEOUT_MS);
    pc.iceGatheringStateChange.subscribe((state) => {
      if (state === "complete") {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

/** The body as text, or undefined once it passes `limit` bytes (the request is then dropped). */
function readBody(request: IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let length = 0;
    request.on("data", (chunk: Buffer) => {
      length += chunk.length;
      if (length > limit) {
        resolve(undefined);
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", () => resolve(undefined));
    request.on("aborted", () => resolve(undefined));
  });
}
