/** The secure layer's client side, as ackwire/browser/secure hands it to the browser client. */
export { makeRoomForSeal } from "../api/secure-options.js";
export { SecureClientSocket } from "../api/secure-socket.js";
export { parseConnectToken } from "../secure/token.js";
export { wasmAead } from "../secure/wasm-aead.js";
export { toBase64Url } from "../util/base64url.js";
