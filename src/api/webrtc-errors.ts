/** Typed errors of the WebRTC carrier (docs/BROWSER.md), browser and server side. */
import { AckwireError } from "../channels/errors.js";

/** The signaling request (the offer POST) failed: HTTP status, network error, or a bad answer. */
export class SignalingError extends AckwireError {
  /** The HTTP status, or 0 when no response came (network error, CORS refusal). */
  readonly status: number;
  constructor(url: string, status: number, detail: string, cause?: unknown) {
    const hint: Record<number, string> = {
      0: "check the URL and the server's webrtc.allowOrigins",
      403: "add this page's origin to the server's webrtc.allowOrigins",
      401: "pass a fresh connectToken",
      429: "wait a second and retry",
      503: "the server is full: retry later",
    };
    super("ERR_SIGNALING", `the offer to ${url} failed (${status === 0 ? "no response" : `HTTP ${status}`}: ${detail}): ${hint[status] ?? "check the server's logs"}`, { cause });
    this.status = status;
  }
}

/** No WebRTC stack: no RTCPeerConnection in this page, or the server's optional library is not installed. */
export class WebRtcUnavailableError extends AckwireError {
  constructor(what: string, cause?: unknown) {
    super("ERR_WEBRTC_UNAVAILABLE", what, { cause });
  }
}
