/**
 * The few web-platform types the browser client uses, typed locally: the project compiles with
 * no DOM library (`"lib": ["ES2022"]`), so nothing else of the page's globals is reachable.
 */

export interface DataChannelLike {
  binaryType: string;
  readonly readyState: string;
  readonly bufferedAmount: number;
  onmessage: ((event: { data: unknown }) => void) | null;
  send(data: Uint8Array): void;
  addEventListener(type: "open" | "close", listener: () => void): void;
}

export interface PeerConnectionLike {
  readonly iceGatheringState: string;
  readonly localDescription: { sdp: string } | null;
  createDataChannel(label: string, options: { ordered: boolean; maxRetransmits: number }): DataChannelLike;
  createOffer(): Promise<{ type: string; sdp?: string }>;
  setLocalDescription(description: { type: string; sdp?: string }): Promise<void>;
  setRemoteDescription(description: { type: "answer"; sdp: string }): Promise<void>;
  addEventListener(type: "icegatheringstatechange", listener: () => void): void;
  close(): void;
}

export interface ResponseLike {
  readonly status: number;
  text(): Promise<string>;
}

export interface RtcGlobals {
  RTCPeerConnection: new (configuration: { iceServers: { urls: string | string[]; username?: string; credential?: string }[] }) => PeerConnectionLike;
  fetch(url: string, init: { method: string; headers: Record<string, string>; body: string; signal: unknown; mode: string; credentials: string }): Promise<ResponseLike>;
}
