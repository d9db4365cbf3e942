/**
 * @roamhq/wrtc (libwebrtc, the W3C API) behind the interface the server's carrier uses of
 * werift (runtimes/webrtc/server.ts), so that the browser benchmark runs the same carrier over
 * either library. Only for measuring: the package uses werift (docs/BROWSER.md says why).
 * wrtc is an optional dependency of the bench package (npm --prefix bench install).
 */
import type { Werift, WeriftDataChannel, WeriftPeerConnection } from "../../runtimes/webrtc/server.js";
import { benchRequire } from "../lib/paths.js";

/** The parts of wrtc's W3C objects used here. */
interface W3cChannel {
  label: string;
  ordered: boolean;
  maxRetransmits: number | null;
  readyState: string;
  bufferedAmount: number;
  binaryType: string;
  onmessage: ((event: { data: unknown }) => void) | null;
  onopen: (() => void) | null;
  onclose: (() => void) | null;
  send(data: Uint8Array): void;
  close(): void;
}
interface W3cPeerConnection {
  iceGatheringState: string;
  connectionState: string;
  localDescription: { sdp: string } | null;
  ondatachannel: ((event: { channel: W3cChannel }) => void) | null;
  onconnectionstatechange: (() => void) | null;
  onicegatheringstatechange: (() => void) | null;
  setRemoteDescription(description: { type: "offer"; sdp: string }): Promise<unknown>;
  createAnswer(): Promise<unknown>;
  setLocalDescription(description: unknown): Promise<unknown>;
  close(): void;
}

/** One listener per event, as werift's `subscribe` (the carrier subscribes once to each). */
function event<T>(set: (fn: (value: T) => void) => void): { subscribe(fn: (value: T) => void): unknown } {
  return { subscribe: (fn) => set(fn) };
}

function channel(c: W3cChannel): WeriftDataChannel {
  c.binaryType = "arraybuffer";
  return {
    get label() { return c.label; },
    get ordered() { return c.ordered; },
    get maxRetransmits() { return c.maxRetransmits; },
    get readyState() { return c.readyState; },
    get bufferedAmount() { return c.bufferedAmount; },
    // werift hands over Buffers (Uint8Arrays); text stays text, for the carrier to refuse.
    onMessage: event((fn) => (c.onmessage = (e) => fn(e.data instanceof ArrayBuffer ? new Uint8Array(e.data) : e.data))),
    stateChanged: event((fn) => {
      c.onopen = () => fn("open");
      c.onclose = () => fn("closed");
    }),
    send: (data) => c.send(data),
    close: () => c.close(),
  };
}

export async function loadWrtc(): Promise<Werift> {
  const wrtc = (await benchRequire())("@roamhq/wrtc") as { RTCPeerConnection: new (config: { iceServers: unknown[] }) => W3cPeerConnection };
  class PeerConnection implements WeriftPeerConnection {
    readonly #pc: W3cPeerConnection;
    constructor(config: Record<string, unknown>) {
      // werift's ICE options (iceAdditionalHostAddresses...) have no equivalent: wrtc lists
      // 127.0.0.1 by itself, and the carrier filters the answer to its addresses.
      this.#pc = new wrtc.RTCPeerConnection({ iceServers: (config.iceServers as unknown[]) ?? [] });
    }
    get iceGatheringState(): string { return this.#pc.iceGatheringState; }
    get connectionState(): string { return this.#pc.connectionState; }
    get localDescription(): { sdp: string } | null { return this.#pc.localDescription; }
    readonly onDataChannel = event<WeriftDataChannel>((fn) => (this.#pc.ondatachannel = (e) => fn(channel(e.channel))));
    readonly connectionStateChange = event<string>((fn) => (this.#pc.onconnectionstatechange = () => fn(this.#pc.connectionState)));
    readonly iceGatheringStateChange = event<string>((fn) => (this.#pc.onicegatheringstatechange = () => fn(this.#pc.iceGatheringState)));
    setRemoteDescription(description: { type: "offer"; sdp: string }): Promise<unknown> { return this.#pc.setRemoteDescription(description); }
    createAnswer(): Promise<unknown> { return this.#pc.createAnswer(); }
    setLocalDescription(description: unknown): Promise<unknown> { return this.#pc.setLocalDescription(description); }
    async close(): Promise<void> { this.#pc.close(); }
  }
  return { RTCPeerConnection: PeerConnection as unknown as Werift["RTCPeerConnection"] };
}
