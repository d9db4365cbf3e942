/**
 * ackwire/browser/secure: ackwire/browser with the secure layer (PROTOCOL §9), for servers that
 * listen with `secure`: `connect(url, { protocolId, connectToken })`. The token also goes in
 * the offer request, which a secure server checks before it answers.
 */
import type { Connection } from "../api/connection.js";
import { connectOver, type BrowserConnectOptions } from "./index.js";
import * as secureLayer from "./secure-client.js";

export function connect(url: string, options: BrowserConnectOptions): Promise<Connection> {
  return connectOver(url, options, secureLayer);
}

export { SignalingError, WebRtcUnavailableError } from "../api/webrtc-errors.js";
export * from "../api/public-browser.js";
export type { BrowserConnectOptions } from "./index.js";
